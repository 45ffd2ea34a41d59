#include "kit/cuda_check.hpp"

#include <sstream>
#include <string>

namespace kit {

void check_cuda(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return;
  std::ostringstream message;
  message << file << ":" << line << ": " << call << " failed: " << cudaGetErrorName(code)
          << " (" << cudaGetErrorString(code) << ")";
  const bool bad_configuration =
      code == cudaErrorInvalidValue || code == cudaErrorInvalidConfiguration;
  if (std::string(call) == "kernel launch" && bad_configuration) {
    // The two mistakes behind almost every rejected launch in these labs.
    message << "\nhint: the launch configuration is invalid: every grid and block dimension "
               "must be at least 1 (round the block count up: (width + block - 1) / block), "
               "and a block may hold at most 1024 threads.";
  }
  if (code == cudaErrorIllegalAddress) {
    message << "\nhint: a kernel read or wrote outside its buffers; check the bounds "
               "conditions (compute-sanitizer --tool memcheck shows the faulting line).";
  }
  throw CudaError(code, message.str());
}

}  // namespace kit
