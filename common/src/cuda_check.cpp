#include "kit/cuda_check.hpp"

#include <sstream>

namespace kit {

void check_cuda(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return;
  std::ostringstream message;
  message << file << ":" << line << ": " << call << " failed: " << cudaGetErrorName(code)
          << " (" << cudaGetErrorString(code) << ")";
  throw CudaError(code, message.str());
}

}  // namespace kit
