# Finds the Debian-packaged libraries kstate builds against and wraps the ones
# without CMake config files (RapidJSON, CLI11, dtl) in imported targets.
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS system)
find_package(OpenSSL 3 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(PkgConfig REQUIRED)

find_path(RAPIDJSON_INCLUDE_DIR rapidjson/document.h REQUIRED)
add_library(kstate_rapidjson INTERFACE)
target_include_directories(kstate_rapidjson SYSTEM INTERFACE ${RAPIDJSON_INCLUDE_DIR})
# std::string support and 64-bit-safe sizes; kept identical in every translation unit.
target_compile_definitions(kstate_rapidjson INTERFACE RAPIDJSON_HAS_STDSTRING=1)

find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
add_library(kstate_cli11 INTERFACE)
target_include_directories(kstate_cli11 SYSTEM INTERFACE ${CLI11_INCLUDE_DIR})

find_path(DTL_INCLUDE_DIR dtl/dtl.hpp REQUIRED)
add_library(kstate_dtl INTERFACE)
target_include_directories(kstate_dtl SYSTEM INTERFACE ${DTL_INCLUDE_DIR})

if(KSTATE_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
  include(Catch)
endif()

set(KSTATE_YAML_CPP_VERSION "${yaml-cpp_VERSION}")
set(KSTATE_SPDLOG_VERSION "${spdlog_VERSION}")
