# Records the git commit and the versions of the libraries kstate is built with in a
# generated header, so `kstate version` can say exactly what a binary is.
execute_process(
  COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
  OUTPUT_VARIABLE KSTATE_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET RESULT_VARIABLE _git_result)
if(NOT _git_result EQUAL 0 OR KSTATE_GIT_COMMIT STREQUAL "")
  set(KSTATE_GIT_COMMIT "unknown")
endif()
execute_process(
  COMMAND git status --porcelain --untracked-files=no
  WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
  OUTPUT_VARIABLE _git_dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT _git_dirty STREQUAL "")
  string(APPEND KSTATE_GIT_COMMIT "-dirty")
endif()
execute_process(COMMAND dpkg-query -W -f=\${Version} libdtl-dev
  OUTPUT_VARIABLE KSTATE_DTL_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(KSTATE_DTL_VERSION STREQUAL "")
  set(KSTATE_DTL_VERSION "unknown")
endif()
configure_file("${PROJECT_SOURCE_DIR}/core/build_info.hpp.in"
               "${PROJECT_BINARY_DIR}/generated/kstate/build_info.hpp" @ONLY)
# Re-run configuration after a commit so the recorded commit stays current.
if(EXISTS "${PROJECT_SOURCE_DIR}/.git/logs/HEAD")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/.git/logs/HEAD")
endif()
