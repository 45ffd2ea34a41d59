// What the compiler gave a kernel: registers, shared, local and constant memory.
#pragma once

#include <cstddef>
#include <string>

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

// The tiling lesson's shared-memory rule, for a kernel instantiated at tile_width: room for at
// least the two tile_width x tile_width float tiles Mds and Nds, and at most twice that. A
// padded tile ([TILE_WIDTH][TILE_WIDTH + 1], against bank conflicts) or a flat one is fine;
// no shared memory at all, or tiles sized by a fixed number larger than TILE_WIDTH, is not.
// Empty when the rule holds, else what is wrong and a hint (README section `readme_section`).
std::string tile_shared_memory_problem(std::size_t static_shared_bytes, int tile_width,
                                       int readme_section);

}  // namespace kit
