# Compiler flags shared by every kstate target: strict warnings (errors by default)
# and the optional sanitizer build. Third-party headers are included as SYSTEM so
# their warnings do not fail our build.
add_library(kstate_flags INTERFACE)
target_compile_options(kstate_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
  -Wcast-align -Wunused -Woverloaded-virtual
  -Wimplicit-fallthrough -Wformat=2)
# GCC 12 reports Asio's coroutine frame allocation (awaitable_frame_base's operator
# new/delete pair) as mismatched when it inlines across co_await chains: a false
# positive that would otherwise need a pragma in every coroutine-heavy file.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(kstate_flags INTERFACE -Wno-mismatched-new-delete)
endif()
if(KSTATE_WERROR)
  target_compile_options(kstate_flags INTERFACE -Werror)
endif()
if(KSTATE_SANITIZE)
  set(_san -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  # Targets with KSTATE_UNINSTRUMENTED set (the tests' own code, tests/CMakeLists.txt)
  # compile without the instrumentation and still link the runtimes.
  target_compile_options(kstate_flags INTERFACE "$<$<NOT:$<BOOL:$<TARGET_PROPERTY:KSTATE_UNINSTRUMENTED>>>:${_san}>")
  target_link_options(kstate_flags INTERFACE ${_san})
  # Lets CPU-time guards against quadratic behaviour skip their bound: a Debug build
  # under ASan runs 10-30x slower, which says nothing about the algorithm.
  target_compile_definitions(kstate_flags INTERFACE KSTATE_SANITIZED=1)
endif()
