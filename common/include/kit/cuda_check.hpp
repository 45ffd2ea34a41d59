// Checking CUDA calls and launches. A failed check throws kit::CudaError, so a test reports
// the failure (file, line, the call's text, the error's name) instead of the process dying.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace kit {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

// Throws CudaError unless code is cudaSuccess. Use through the macros below.
void check_cuda(cudaError_t code, const char* call, const char* file, int line);

}  // namespace kit

// Wrap every CUDA runtime call: KIT_CUDA_CHECK(cudaMalloc(&p, bytes));
#define KIT_CUDA_CHECK(call) ::kit::check_cuda((call), #call, __FILE__, __LINE__)

// Right after every kernel launch: launches report configuration errors only here.
#define KIT_CHECK_LAUNCH() \
  ::kit::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
