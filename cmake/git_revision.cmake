# Run at every build (cmake -P): writes the source that names the commit the binaries were
# built from, so a result file's /provenance names the code that made it. The file is only
# rewritten when the revision changes, so an unchanged tree recompiles nothing.
#   -DSOURCE_DIR=<repository>  -DOUTPUT=<generated .cpp>
execute_process(COMMAND git rev-parse --short=12 HEAD
                WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE status ERROR_QUIET)
if(NOT status EQUAL 0 OR NOT revision)
  set(revision "unknown")
else()
  # Tracked files changed since that commit: the binary is not exactly that commit.
  execute_process(COMMAND git status --porcelain --untracked-files=no
                  WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE changes ERROR_QUIET)
  if(changes)
    string(APPEND revision "-dirty")
  endif()
endif()
set(text "// Generated at build time by cmake/git_revision.cmake.\n#include \"app/cli/build_revision.hpp\"\nnamespace topokpm::app {\nconst char* git_revision() { return \"${revision}\"; }\n}  // namespace topokpm::app\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUTPUT} "${text}")
endif()
