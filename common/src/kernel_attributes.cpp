#include "kit/kernel_attributes.hpp"

#include "kit/cuda_check.hpp"

namespace kit {

KernelAttributes kernel_attributes(const void* kernel) {
  cudaFuncAttributes attr{};
  KIT_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  KernelAttributes a;
  a.registers_per_thread = attr.numRegs;
  a.static_shared_bytes = attr.sharedSizeBytes;
  a.local_bytes_per_thread = attr.localSizeBytes;
  a.constant_bytes = attr.constSizeBytes;
  a.max_threads_per_block = attr.maxThreadsPerBlock;
  a.binary_version = attr.binaryVersion;
  return a;
}

}  // namespace kit
