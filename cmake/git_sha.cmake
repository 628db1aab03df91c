# Writes OUT, the git SHA of SOURCE_DIR and whether its tracked files differ from it, as
# C++ definitions; run on every build, it rewrites OUT only when that changes, so an
# unchanged tree recompiles and relinks nothing.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE sha OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
set(dirty false)
if(rc EQUAL 0 AND sha)
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE changes ERROR_QUIET)
  if(changes)
    set(dirty true)
  endif()
else()
  set(sha unknown)
endif()
set(text "// Generated at build time by cmake/git_sha.cmake.
#include \"build_info.hpp\"
namespace minictx::build {
const char* const git_sha = \"${sha}\";
const bool git_dirty = ${dirty};
}  // namespace minictx::build
")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
