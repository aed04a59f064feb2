// cuBLAS and cuSOLVER are opened at the first call (numerics/cuda/cuda_libraries.cpp), not
// at start-up: this process maps neither library until it calls one of their functions, and
// the forwarded calls reach the real ones. Needs no GPU (the status name is host-only;
// creating a cuSOLVER handle without a device returns an error status instead of success).
#include <gtest/gtest.h>

#include <cublas_v2.h>
#include <cusolverDn.h>

#include <fstream>
#include <string>

namespace {

bool mapped(const std::string& library)
{
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
        if (line.find("/" + library) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST(CudaLibraries, OpenedAtTheFirstCallNotAtStartUp)
{
    ASSERT_FALSE(mapped("libcublasLt.so")) << "cuBLASLt loaded at start-up";
    ASSERT_FALSE(mapped("libcublas.so"));
    ASSERT_FALSE(mapped("libcusolver.so"));

    EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
    EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED), "CUBLAS_STATUS_NOT_INITIALIZED");
    EXPECT_TRUE(mapped("libcublas.so"));
    EXPECT_FALSE(mapped("libcusolver.so"));

    cusolverDnHandle_t handle = nullptr;
    const cusolverStatus_t status = cusolverDnCreate(&handle);
    EXPECT_TRUE(mapped("libcusolver.so"));
    if (status == CUSOLVER_STATUS_SUCCESS) {
        EXPECT_EQ(cusolverDnDestroy(handle), CUSOLVER_STATUS_SUCCESS);
    } else {  // the library's documented answer when the CUDA runtime cannot start (no GPU)
        EXPECT_EQ(status, CUSOLVER_STATUS_NOT_INITIALIZED);
    }
}
