#include "kit/cublas_matmul.hpp"

#include <cublas_v2.h>

#include <stdexcept>
#include <string>

#include "kit/cuda_check.hpp"

namespace kit {
namespace {

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: cuBLAS status " +
                             std::to_string(static_cast<int>(status)));
  }
}

}  // namespace

CublasMatmul::CublasMatmul() {
  cublasHandle_t handle = nullptr;
  check_cublas(cublasCreate(&handle), "cublasCreate");
  handle_ = handle;
  // Plain FP32 so the yardstick does the same arithmetic as the labs' kernels.
  check_cublas(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
}

CublasMatmul::~CublasMatmul() { cublasDestroy(static_cast<cublasHandle_t>(handle_)); }

void CublasMatmul::operator()(const float* d_M, const float* d_N, float* d_P, int width) {
  const float one = 1.0f, zero = 0.0f;
  // cuBLAS is column-major: a row-major P = M * N is the column-major P^T = N^T * M^T.
  check_cublas(cublasSgemm(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_N, CUBLAS_OP_N, width,
                           width, width, &one, d_N, width, d_M, width, &zero, d_P, width),
               "cublasSgemm");
  KIT_CHECK_LAUNCH();
}

}  // namespace kit
