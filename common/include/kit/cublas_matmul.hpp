// cuBLAS as a yardstick: the performance tests of a student kit, which ships no reference
// kernels, report the student's time as a ratio to cuBLAS instead.
#pragma once

namespace kit {

// Alike in shape only to TimedCalls in kit/remote.hpp: both set something up for as long as they
// live and must not be copied.
class CublasMatmul {
 public:
  CublasMatmul();
  ~CublasMatmul();
  CublasMatmul(const CublasMatmul&) = delete;
  CublasMatmul& operator=(const CublasMatmul&) = delete;

  // P = M * N for row-major width x width device matrices, in FP32 without tensor cores.
  void operator()(const float* d_M, const float* d_N, float* d_P, int width);

 private:
  void* handle_ = nullptr;  // cublasHandle_t, kept out of the header
};

}  // namespace kit
