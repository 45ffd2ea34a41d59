#include "kit/cuda_check.hpp"

#include <sstream>
#include <string>

namespace kit {

void check_cuda(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return;
  // No "hint:" here: an exception's text is not the kit's word (student code throws too), so
  // the grader adds the hints for these errors itself, from their names (grader/pipeline/run.py).
  std::ostringstream message;
  message << file << ":" << line << ": " << call << " failed: " << cudaGetErrorName(code) << " ("
          << cudaGetErrorString(code) << ")";
  throw CudaError(code, message.str());
}

}  // namespace kit
