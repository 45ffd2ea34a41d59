// The student's dynamic_matmul_kernel as the compiler built it, read from the worker's
// executable (kit/remote.hpp), and its occupancy worked out here from those attributes with the
// toolkit's calculator (cuda_occupancy.h): the tests never load the student's code.
#include <cuda_occupancy.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "kit/cuda_check.hpp"
#include "kit/remote.hpp"
#include "kit/sass.hpp"
#include "lab05_support.hpp"

namespace lab05_tests {

kit::KernelAttributes kernel_attributes(int tile_width) {
  if (tile_width != 8 && tile_width != 16 && tile_width != 32) {
    throw std::invalid_argument("kernel_attributes: no kernel for tile width " +
                                std::to_string(tile_width));
  }
  return kit::remote::worker_kernel_attributes(
      kit::sass::mangled_template_prefix("lab05", "dynamic_matmul_kernel", tile_width));
}

int expected_blocks_per_sm(int tile_width, std::size_t shared_bytes) {
  const kit::KernelAttributes a = kernel_attributes(tile_width);
  int device = 0;
  cudaDeviceProp prop{};
  KIT_CUDA_CHECK(cudaGetDevice(&device));
  KIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const cudaOccDeviceProp properties(prop);
  // As the runtime describes a kernel that was not opted in to more dynamic shared memory (no
  // launch precedes this test's queries): the default 48 KB less its static shared memory.
  cudaOccFuncAttributes attributes;
  attributes.maxThreadsPerBlock = prop.maxThreadsPerBlock;
  attributes.numRegs = a.registers_per_thread;
  attributes.sharedSizeBytes = a.static_shared_bytes;
  attributes.partitionedGCConfig = PARTITIONED_GC_OFF;
  attributes.shmemLimitConfig = FUNC_SHMEM_LIMIT_DEFAULT;
  attributes.maxDynamicSharedSizeBytes = prop.sharedMemPerBlock - a.static_shared_bytes;
  attributes.numBlockBarriers = 1;
  const cudaOccDeviceState state;
  cudaOccResult result;
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &properties, &attributes, &state,
                                              tile_width * tile_width,
                                              shared_bytes) != CUDA_OCC_SUCCESS) {
    throw std::runtime_error(
        "cuda_occupancy.h could not work out the occupancy of "
        "dynamic_matmul_kernel<" +
        std::to_string(tile_width) + "> with " + std::to_string(shared_bytes) + " bytes");
  }
  return result.activeBlocksPerMultiprocessor;
}

}  // namespace lab05_tests
