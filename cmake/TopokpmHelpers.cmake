# Common compile settings for every topokpm target.
function(topokpm_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  if(TOPOKPM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(TOPOKPM_NATIVE_ARCH)
    target_compile_options(${target} PRIVATE -march=native)
  endif()
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/generated)
endfunction()

# topokpm_add_test(name SOURCES a.cpp b.cpp LIBS lib1 lib2): one GoogleTest executable,
# registered test by test with CTest. The tests' OpenMP threads sleep at a barrier instead of
# spinning (OMP_WAIT_POLICY=passive): ctest -j N runs N tests on N cores, each with N threads,
# and a spinning thread keeps its core from the thread it waits for. Under ctest -j2 on 2
# cores QahSlab.KuboBastinPlateauIsTheChernNumber took 387 s spinning and 4.7 s passive
# (4.4 s alone). tests/support/script_lib.sh sets the same for the test scripts.
function(topokpm_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  topokpm_target_defaults(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]"
                       ENVIRONMENT "OMP_WAIT_POLICY=passive")
endfunction()

# topokpm_cuda_or_stub(target CUDA a.cpp ... [LINK PUBLIC|PRIVATE lib ...] STUB b.cpp ...):
# with TOPOKPM_HAVE_CUDA the CUDA sources (and the LINK libraries, e.g. CUDA::cudart),
# otherwise the stub sources that stand in for them (issue 6).
function(topokpm_cuda_or_stub target)
  cmake_parse_arguments(ARG "" "" "CUDA;LINK;STUB" ${ARGN})
  if(TOPOKPM_HAVE_CUDA)
    target_sources(${target} PRIVATE ${ARG_CUDA})
    if(ARG_LINK)
      target_link_libraries(${target} ${ARG_LINK})
    endif()
  else()
    target_sources(${target} PRIVATE ${ARG_STUB})
  endif()
endfunction()
