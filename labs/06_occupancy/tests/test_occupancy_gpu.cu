// Lab 06's GPU tests: the calculator, fed with this GPU's properties and the attributes the
// compiler gave real kernels, against the CUDA runtime's own occupancy functions.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <string>
#include <vector>

#include "device_presets.h"
#include "kit/cuda_check.hpp"
#include "kit/kernel_attributes.hpp"
#include "kit/testing.hpp"
#include "lab06_support.hpp"
#include "occupancy.h"

namespace {

// Lab 03's tiled matrix multiplication: TILE x TILE threads, two tiles in static shared memory.
template <int TILE>
__global__ void tiled_matmul_kernel(const float* M, const float* N, float* P, int width) {
  __shared__ float Mds[TILE][TILE];
  __shared__ float Nds[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float Pvalue = 0.0f;
  for (int ph = 0; ph < (width + TILE - 1) / TILE; ++ph) {
    Mds[ty][tx] = (row < width && ph * TILE + tx < width) ? M[row * width + ph * TILE + tx] : 0.0f;
    Nds[ty][tx] =
        (col < width && ph * TILE + ty < width) ? N[(ph * TILE + ty) * width + col] : 0.0f;
    __syncthreads();  // read-after-write: the whole tile is loaded before anyone reads it
    for (int k = 0; k < TILE; ++k) Pvalue += Mds[ty][k] * Nds[k][tx];
    __syncthreads();  // write-after-read: nobody overwrites a tile another thread still reads
  }
  if (row < width && col < width) P[row * width + col] = Pvalue;
}

// Keeps 64 values live across a loop, so the compiler needs many registers per thread.
__global__ void many_registers_kernel(const float* in, float* out, int n) {
  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = in[(threadIdx.x + 37 * i) % n];
  for (int step = 0; step < n; ++step) {
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = acc[i] * acc[(i + 1) % 64] + in[step];
  }
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < 64; ++i) sum += acc[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// Uses only dynamic shared memory, sized at launch.
__global__ void dynamic_shared_kernel(const float* in, float* out, int n) {
  extern __shared__ float buffer[];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  buffer[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();  // read-after-write: the neighbour's element is loaded before it is read
  if (i < n) out[i] = buffer[(threadIdx.x + 1) % blockDim.x];
}

// Barely any registers and no shared memory.
__global__ void few_registers_kernel(int* out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = threadIdx.x;
}

struct RealKernel {
  const char* name;
  const void* function;
  std::vector<int> dynamic_shared_sizes;  // bytes of dynamic shared memory to try
};

std::vector<RealKernel> real_kernels() {
  return {
      {"tiled_matmul_kernel<16>", reinterpret_cast<const void*>(tiled_matmul_kernel<16>), {0}},
      {"tiled_matmul_kernel<32>", reinterpret_cast<const void*>(tiled_matmul_kernel<32>), {0}},
      {"many_registers_kernel", reinterpret_cast<const void*>(many_registers_kernel), {0}},
      {"dynamic_shared_kernel",
       reinterpret_cast<const void*>(dynamic_shared_kernel),
       {0, 1000, 4096, 9000, 20000, 40000}},
      {"few_registers_kernel", reinterpret_cast<const void*>(few_registers_kernel), {0}},
  };
}

lab06::DeviceLimits this_gpu() {
  int device = 0;
  KIT_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  KIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return lab06::device_limits_from_properties(prop);
}

}  // namespace

TEST_CASE("the calculator agrees with the CUDA runtime for real kernels on this GPU",
          "[lab06][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const lab06::DeviceLimits d = this_gpu();
  CAPTURE(d.name);
  int compared = 0, mismatches = 0;
  for (const RealKernel& kernel : real_kernels()) {
    const kit::KernelAttributes attr = kit::kernel_attributes(kernel.function);
    for (int threads : {32, 64, 96, 128, 160, 192, 256, 320, 480, 512, 640, 768, 1000, 1024}) {
      if (threads > attr.max_threads_per_block) continue;
      for (int dynamic : kernel.dynamic_shared_sizes) {
        const int shared = static_cast<int>(attr.static_shared_bytes) + dynamic;
        if (shared > 48 * 1024) continue;  // more needs an opt-in attribute
        int runtime_blocks = 0;
        KIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &runtime_blocks, kernel.function, threads, static_cast<size_t>(dynamic)));
        const lab06::KernelUsage k{threads, attr.registers_per_thread, shared};
        const lab06::Occupancy mine = lab06::occupancy(d, k);
        ++compared;
        if (mine.active_blocks == runtime_blocks) continue;
        if (++mismatches > 3) continue;
        const lab06::Occupancy toolkit = lab06_tests::toolkit_occupancy(d, k);
        FAIL_CHECK(
            kernel.name << " with " << threads << " threads and " << dynamic
                        << " bytes of dynamic shared memory: you say " << mine.active_blocks
                        << " blocks per SM, cudaOccupancyMaxActiveBlocksPerMultiprocessor says "
                        << runtime_blocks << " (cuda_occupancy.h says " << toolkit.active_blocks
                        << ")\n"
                        << lab06_tests::diagnose(d, k, mine, toolkit));
      }
    }
  }
  CAPTURE(compared, mismatches);
  CHECK(mismatches == 0);
}

TEST_CASE("best block size agrees with cudaOccupancyMaxPotentialBlockSize on this GPU",
          "[lab06][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const lab06::DeviceLimits d = this_gpu();
  CAPTURE(d.name);
  int mismatches = 0;
  for (const RealKernel& kernel : real_kernels()) {
    const kit::KernelAttributes attr = kit::kernel_attributes(kernel.function);
    for (int dynamic : kernel.dynamic_shared_sizes) {
      const int shared = static_cast<int>(attr.static_shared_bytes) + dynamic;
      int min_grid = 0, block = 0;
      KIT_CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, kernel.function,
                                                        static_cast<size_t>(dynamic), 0));
      const lab06::BlockSizeChoice mine =
          lab06::best_block_size(d, attr.registers_per_thread, shared);
      CAPTURE(kernel.name, attr.registers_per_thread, shared, block, min_grid,
              mine.threads_per_block, mine.min_grid_size);
      if (mine.threads_per_block == block && mine.min_grid_size == min_grid) continue;
      ++mismatches;
      FAIL_CHECK(kernel.name << " with " << attr.registers_per_thread << " registers and " << shared
                             << " bytes of shared memory: you choose " << mine.threads_per_block
                             << " threads (min grid " << mine.min_grid_size << "), the runtime "
                             << block << " threads (min grid " << min_grid
                             << ")\nhint: keep the largest block size among those with the "
                                "most active warps, and min_grid_size = active_blocks x "
                                "multiprocessors (README 6).");
    }
  }
  CHECK(mismatches == 0);
}
