# All topokpm build options in one place.
option(TOPOKPM_BUILD_TESTS "Build the GoogleTest suite and register it with CTest" ON)
option(TOPOKPM_BUILD_BENCH "Build the benchmarks in bench/" ON)
option(TOPOKPM_NATIVE_ARCH "Compile for the build machine's CPU (-march=native); OFF for portable binaries" ON)
option(TOPOKPM_WERROR "Treat compiler warnings as errors" OFF)
set(TOPOKPM_SPMMV_WIDTHS "1;2;4;8;16;32" CACHE STRING "Block widths R with compile-time specialised SpMMV kernels")
set(TOPOKPM_CUDA "AUTO" CACHE STRING "Build the CUDA backend: AUTO (when nvcc is found), ON (fail without nvcc) or OFF (stubs only)")
set_property(CACHE TOPOKPM_CUDA PROPERTY STRINGS AUTO ON OFF)
