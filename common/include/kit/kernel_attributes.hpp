// What the compiler gave a kernel: registers, shared, local and constant memory.
#pragma once

#include <cstddef>

namespace kit {

struct KernelAttributes {
  int registers_per_thread = 0;
  std::size_t static_shared_bytes = 0;
  std::size_t local_bytes_per_thread = 0;
  std::size_t constant_bytes = 0;
  int max_threads_per_block = 0;
  int binary_version = 0;  // the SASS architecture the kernel was loaded as, e.g. 90
};

// `kernel` is a __global__ function's address, e.g. kernel_attributes((const void*)my_kernel).
KernelAttributes kernel_attributes(const void* kernel);

template <typename Kernel>
KernelAttributes kernel_attributes(Kernel* kernel) {
  return kernel_attributes(reinterpret_cast<const void*>(kernel));
}

}  // namespace kit
