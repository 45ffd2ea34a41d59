// Lab 05: lab 04's tiled matrix multiplication with its tiles in dynamic shared memory, sized at
// run time for the device at hand. The write-up is labs/05_dynamic_shared_memory/README.md; the
// tests call the functions of dynamic_matmul.h.
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "dynamic_matmul.h"
#include "kit/args.hpp"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"

namespace lab05 {

// P = M * N, lab 04's rectangular kernel with the two tiles carved from one extern buffer
// (README section 3) and phases strip_depth deep along J (README section 5).
template <int TILE_WIDTH>
__global__ void dynamic_matmul_kernel(const float* M, const float* N, float* P, int I, int J, int K,
                                      int strip_depth) {
  // Keep this line. strip_depth is a multiple of TILE_WIDTH (launch_dynamic_matmul checks), so
  // it changes no value, only what the compiler knows: that every row of Mds starts a multiple
  // of 16 bytes into the buffer. The inner product can then read four floats of Mds with one
  // instruction, as it does from lab 04's static tile; without it the kernel is about a fifth
  // slower (README section 8).
  strip_depth = strip_depth / TILE_WIDTH * TILE_WIDTH;
  // KIT:TODO(begin) Parts A and B (README sections 3 to 5): declare one extern __shared__
  // KIT:TODO        float buffer and carve Mds (TILE_WIDTH rows of strip_depth floats) at
  // KIT:TODO        its start and Nds (strip_depth rows of TILE_WIDTH floats) right after
  // KIT:TODO        it. Each phase loads strip_depth / TILE_WIDTH sub-tiles of each matrix
  // KIT:TODO        (0.0f outside M or N, as in lab 04), waits, adds strip_depth products,
  // KIT:TODO        and waits again; ceil(J / strip_depth) phases; store only inside P.
  // KIT:TODO        Part A is the case strip_depth == TILE_WIDTH.
  extern __shared__ float shared[];
  // Mds fills the first TILE_WIDTH * strip_depth floats; Nds starts where Mds ends, so the two
  // never overlap and together they take exactly shared_bytes_for(TILE_WIDTH, strip_depth).
  float* Mds = shared;
  float* Nds = shared + TILE_WIDTH * strip_depth;

  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE_WIDTH + ty;
  int col = blockIdx.x * TILE_WIDTH + tx;

  float Pvalue = 0.0f;
  for (int base = 0; base < J; base += strip_depth) {
    // The strip is strip_depth / TILE_WIDTH tiles side by side (M) or stacked (N): each thread
    // loads one element of each. Slots outside M or N hold 0, which adds nothing to Pvalue.
    for (int s = 0; s < strip_depth; s += TILE_WIDTH) {
      int m_col = base + s + tx;
      Mds[ty * strip_depth + s + tx] = (row < I && m_col < J) ? M[row * J + m_col] : 0.0f;
      int n_row = base + s + ty;
      Nds[(s + ty) * TILE_WIDTH + tx] = (n_row < J && col < K) ? N[n_row * K + col] : 0.0f;
    }
    // Read-after-write: the loop below reads slots other threads have just stored.
    __syncthreads();

    for (int s = 0; s < strip_depth; s += TILE_WIDTH) {
      // TILE_WIDTH is a template argument, so this loop unrolls and its offsets fold into the
      // instructions; only the step s is a run-time value (README section 8).
#pragma unroll
      for (int k = 0; k < TILE_WIDTH; ++k) {
        Pvalue += Mds[ty * strip_depth + s + k] * Nds[(s + k) * TILE_WIDTH + tx];
      }
    }
    // Write-after-read: the next phase overwrites the strips this phase is still reading.
    __syncthreads();
  }
  if (row < I && col < K) {
    P[row * K + col] = Pvalue;
  }
  // KIT:TODO(end)
}

namespace {

void require_tile_and_depth(const char* where, int tile_width, int strip_depth) {
  if (tile_width != 8 && tile_width != 16 && tile_width != 32) {
    throw std::invalid_argument(std::string(where) + ": tile_width must be 8, 16 or 32, got " +
                                std::to_string(tile_width));
  }
  if (strip_depth < tile_width || strip_depth % tile_width != 0) {
    throw std::invalid_argument(
        std::string(where) + ": strip_depth must be a positive multiple of " +
        std::to_string(tile_width) + " (tile_width), got " + std::to_string(strip_depth));
  }
}

template <int TILE_WIDTH>
int occupancy_of(std::size_t shared_bytes) {
  // KIT:TODO(begin) Part C (README section 7): ask the occupancy API how many blocks of
  // KIT:TODO        dynamic_matmul_kernel<TILE_WIDTH>, with TILE_WIDTH * TILE_WIDTH threads
  // KIT:TODO        and shared_bytes of dynamic shared memory, fit on one SM.
  // KIT:SKELETON return 0;
  int blocks = 0;
  KIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, dynamic_matmul_kernel<TILE_WIDTH>, TILE_WIDTH * TILE_WIDTH, shared_bytes));
  return blocks;
  // KIT:TODO(end)
}

template <int TILE_WIDTH>
void launch(const DeviceLimits& limits, const float* d_M, const float* d_N, float* d_P, int I,
            int J, int K, int strip_depth) {
  // KIT:TODO(begin) Parts A and B (README sections 3 and 4): compute the bytes the
  // KIT:TODO        configuration needs; above limits.shared_per_block, raise the kernel's
  // KIT:TODO        cudaFuncAttributeMaxDynamicSharedMemorySize to them first. Launch
  // KIT:TODO        TILE_WIDTH x TILE_WIDTH threads per block, enough blocks to cover the
  // KIT:TODO        I x K matrix P, and the bytes as the third launch parameter. Then
  // KIT:TODO        KIT_CHECK_LAUNCH().
  const std::size_t bytes = shared_bytes_for(TILE_WIDTH, strip_depth);
  // Without opting in, a kernel may not ask for more than sharedMemPerBlock (48 KB): the
  // launch would fail. check_config has made sure the device allows this much.
  if (bytes > limits.shared_per_block) {
    KIT_CUDA_CHECK(cudaFuncSetAttribute(dynamic_matmul_kernel<TILE_WIDTH>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)));
  }
  dim3 block(TILE_WIDTH, TILE_WIDTH);
  dim3 grid((K + TILE_WIDTH - 1) / TILE_WIDTH, (I + TILE_WIDTH - 1) / TILE_WIDTH);
  dynamic_matmul_kernel<TILE_WIDTH><<<grid, block, bytes>>>(d_M, d_N, d_P, I, J, K, strip_depth);
  KIT_CHECK_LAUNCH();
  // KIT:TODO(end)
}

}  // namespace

std::size_t shared_bytes_for(int tile_width, int strip_depth) {
  // KIT:TODO(begin) Part A (README section 3): the bytes Mds and Nds need together.
  // KIT:SKELETON return 0;
  // Mds is tile_width x strip_depth, Nds strip_depth x tile_width: two equal strips of floats.
  return 2 * static_cast<std::size_t>(tile_width) * static_cast<std::size_t>(strip_depth) *
         sizeof(float);
  // KIT:TODO(end)
}

DeviceLimits device_limits() {
  // KIT:TODO(begin) Part C (README section 7): fill the three limits from the current
  // KIT:TODO        device's cudaDeviceProp (cudaGetDevice, cudaGetDeviceProperties).
  // KIT:SKELETON return {};
  int device = 0;
  KIT_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  KIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceLimits limits;
  limits.shared_per_block = prop.sharedMemPerBlock;
  limits.shared_per_block_optin = prop.sharedMemPerBlockOptin;
  limits.max_threads_per_block = prop.maxThreadsPerBlock;
  return limits;
  // KIT:TODO(end)
}

int blocks_per_sm(int tile_width, std::size_t shared_bytes) {
  switch (tile_width) {
    case 8: return occupancy_of<8>(shared_bytes);
    case 16: return occupancy_of<16>(shared_bytes);
    case 32: return occupancy_of<32>(shared_bytes);
    default:
      throw std::invalid_argument("lab05::blocks_per_sm: tile_width must be 8, 16 or 32, got " +
                                  std::to_string(tile_width));
  }
}

void check_config(const DeviceLimits& limits, int tile_width, int strip_depth) {
  const char* where = "lab05::check_config";
  require_tile_and_depth(where, tile_width, strip_depth);
  // KIT:TODO(begin) Part B (README section 4): throw std::invalid_argument when the block
  // KIT:TODO        has more threads than limits.max_threads_per_block, or needs more bytes
  // KIT:TODO        than limits.shared_per_block_optin; name what was asked and the limit.
  const int threads = tile_width * tile_width;
  if (threads > limits.max_threads_per_block) {
    throw std::invalid_argument(
        std::string(where) + ": a " + std::to_string(tile_width) + " x " +
        std::to_string(tile_width) + " tile needs " + std::to_string(threads) +
        " threads per block; this device allows " + std::to_string(limits.max_threads_per_block) +
        ". Choose a smaller tile_width.");
  }
  const std::size_t bytes = shared_bytes_for(tile_width, strip_depth);
  if (bytes > limits.shared_per_block_optin) {
    throw std::invalid_argument(
        std::string(where) + ": tile_width " + std::to_string(tile_width) + " with strip_depth " +
        std::to_string(strip_depth) + " needs " + std::to_string(bytes) +
        " bytes of shared memory per block; this device allows at most " +
        std::to_string(limits.shared_per_block_optin) +
        " (sharedMemPerBlockOptin). Choose a shallower strip or a smaller tile.");
  }
  // KIT:TODO(end)
}

Config choose_config(const DeviceLimits& limits, const OccupancyQuery& occupancy) {
  // KIT:TODO(begin) Part C (README section 7): among tile widths 8, 16, 32 and strip depths
  // KIT:TODO        that are multiples of the tile, keep what the device can run (threads,
  // KIT:TODO        shared memory after opting in, at least one block per SM by
  // KIT:TODO        `occupancy`), choose one, fill every field of Config and explain the
  // KIT:TODO        choice in reason with the numbers behind it.
  // KIT:SKELETON return {};
  // The rule: the most resident threads per SM (latency hiding); among equals the wider tile
  // (fewer global loads per product), then the deeper strip up to four tiles (fewer barriers).
  Config best;
  long long best_threads = 0;
  for (int tile : {32, 16, 8}) {
    if (tile * tile > limits.max_threads_per_block) continue;
    for (int depth = tile; depth <= 4 * tile; depth *= 2) {
      const std::size_t bytes = shared_bytes_for(tile, depth);
      if (bytes > limits.shared_per_block_optin) break;
      const int blocks = occupancy(tile, bytes);
      if (blocks < 1) continue;
      const long long threads = static_cast<long long>(blocks) * tile * tile;
      const bool better =
          best.tile_width == 0 || threads > best_threads ||
          (threads == best_threads &&
           (tile > best.tile_width || (tile == best.tile_width && depth > best.strip_depth)));
      if (better) {
        best = Config{tile, depth, bytes, blocks, ""};
        best_threads = threads;
      }
    }
  }
  if (best.tile_width == 0) {
    throw std::invalid_argument(
        "lab05::choose_config: no tile width of 8, 16 or 32 fits this device (" +
        std::to_string(limits.max_threads_per_block) + " threads and " +
        std::to_string(limits.shared_per_block_optin) + " bytes of shared memory per block)");
  }
  best.reason = "tile " + std::to_string(best.tile_width) + " x " +
                std::to_string(best.tile_width) + " (" +
                std::to_string(best.tile_width * best.tile_width) + " threads; the device allows " +
                std::to_string(limits.max_threads_per_block) + ") with strip depth " +
                std::to_string(best.strip_depth) + " needs " + std::to_string(best.shared_bytes) +
                " bytes of shared memory per block (" + std::to_string(limits.shared_per_block) +
                " without opting in, " + std::to_string(limits.shared_per_block_optin) +
                " at most); the occupancy query fits " + std::to_string(best.blocks_per_sm) +
                " blocks per SM, " + std::to_string(best_threads) +
                " resident threads, the most of any candidate, with the wider tile and the "
                "deeper strip preferred among equals.";
  return best;
  // KIT:TODO(end)
}

Config choose_config() {
  // A lambda rather than blocks_per_sm itself: std::function would otherwise record the type of
  // a plain function pointer, a symbol outside namespace lab05 that the grader refuses.
  return choose_config(device_limits(),
                       [](int tile, std::size_t bytes) { return blocks_per_sm(tile, bytes); });
}

void launch_dynamic_matmul(const float* d_M, const float* d_N, float* d_P, int I, int J, int K,
                           int tile_width, int strip_depth) {
  const char* where = "lab05::launch_dynamic_matmul";
  kit::require_positive(where, "I", I);
  kit::require_positive(where, "J", J);
  kit::require_positive(where, "K", K);
  require_tile_and_depth(where, tile_width, strip_depth);
  // Too many threads or too much shared memory is the caller's mistake, said before launching,
  // not a launch failure to decode afterwards.
  const DeviceLimits limits = device_limits();
  check_config(limits, tile_width, strip_depth);
  if (tile_width == 8) {
    launch<8>(limits, d_M, d_N, d_P, I, J, K, strip_depth);
  } else if (tile_width == 16) {
    launch<16>(limits, d_M, d_N, d_P, I, J, K, strip_depth);
  } else {
    launch<32>(limits, d_M, d_N, d_P, I, J, K, strip_depth);
  }
}

Config dynamic_matmul(const float* h_M, const float* h_N, float* h_P, int I, int J, int K) {
  const char* where = "lab05::dynamic_matmul";
  kit::require_positive(where, "I", I);
  kit::require_positive(where, "J", J);
  kit::require_positive(where, "K", K);
  kit::require_not_null(where, "h_M", h_M);
  kit::require_not_null(where, "h_N", h_N);
  kit::require_not_null(where, "h_P", h_P);

  const Config config = choose_config();
  kit::DeviceBuffer<float> d_M(static_cast<std::size_t>(I) * J);
  kit::DeviceBuffer<float> d_N(static_cast<std::size_t>(J) * K);
  kit::DeviceBuffer<float> d_P(static_cast<std::size_t>(I) * K);
  d_M.copy_from_host(h_M);
  d_N.copy_from_host(h_N);
  launch_dynamic_matmul(d_M.data(), d_N.data(), d_P.data(), I, J, K, config.tile_width,
                        config.strip_depth);
  // Launches are asynchronous: errors inside the kernel surface only here.
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  d_P.copy_to_host(h_P);
  return config;
}

// All three tile widths, compiled even while the launches above are still TODOs, because the
// tests read the kernels' attributes through the header.
template __global__ void dynamic_matmul_kernel<8>(const float*, const float*, float*, int, int, int,
                                                  int);
template __global__ void dynamic_matmul_kernel<16>(const float*, const float*, float*, int, int,
                                                   int, int);
template __global__ void dynamic_matmul_kernel<32>(const float*, const float*, float*, int, int,
                                                   int, int);

}  // namespace lab05
