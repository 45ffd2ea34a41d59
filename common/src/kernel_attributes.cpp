#include "kit/kernel_attributes.hpp"

#include <sstream>

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

std::string tile_shared_memory_problem(std::size_t static_shared_bytes, int tile_width,
                                       int readme_section) {
  const std::size_t two_tiles =
      2 * static_cast<std::size_t>(tile_width) * tile_width * sizeof(float);
  std::ostringstream out;
  if (static_shared_bytes == 0) {
    out << "it uses no shared memory\n"
        << "hint: declare Mds and Nds as __shared__ float [TILE_WIDTH][TILE_WIDTH] and read the "
           "inner product's operands from them (README section "
        << readme_section << "); a tile the kernel never reads is removed by the compiler.";
  } else if (static_shared_bytes < two_tiles) {
    out << "its " << static_shared_bytes << " bytes of shared memory cannot hold two " << tile_width
        << " x " << tile_width << " float tiles (" << two_tiles << " bytes)\n"
        << "hint: size both Mds and Nds with TILE_WIDTH in each dimension, and read both in the "
           "inner product; a tile the kernel never reads is removed by the compiler (README "
           "section "
        << readme_section << ").";
  } else if (static_shared_bytes > 2 * two_tiles) {
    out << "it has " << static_shared_bytes << " bytes of shared memory, more than twice the "
        << two_tiles << " bytes of two " << tile_width << " x " << tile_width << " float tiles\n"
        << "hint: size Mds and Nds with TILE_WIDTH, not a fixed number, and declare no other "
           "__shared__ arrays: shared memory a block holds is shared memory other blocks cannot "
           "use (README section "
        << readme_section << ").";
  }
  return out.str();
}

}  // namespace kit
