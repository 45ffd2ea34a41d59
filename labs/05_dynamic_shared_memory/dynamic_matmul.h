// Lab 05's API: lab 04's tiled matrix multiplication with its two tiles carved from one
// dynamic shared memory buffer whose size is chosen at run time, and the host functions that
// choose that size for the device at hand. The implementation is in dynamic_matmul.cu.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace lab05 {

#ifdef __CUDACC__
// P = M * N for row-major M of I x J, N of J x K and P of I x K, with TILE_WIDTH x TILE_WIDTH
// threads per block. Its shared memory is one extern __shared__ float buffer of
// shared_bytes_for(TILE_WIDTH, strip_depth) bytes: Mds (TILE_WIDTH rows of strip_depth floats)
// at its start, Nds (strip_depth rows of TILE_WIDTH floats) right after it. Each phase covers
// strip_depth elements of the inner dimension J; strip_depth is a multiple of TILE_WIDTH.
template <int TILE_WIDTH>
__global__ void dynamic_matmul_kernel(const float* M, const float* N, float* P, int I, int J, int K,
                                      int strip_depth);
#endif

// What the device allows a block, from cudaGetDeviceProperties.
struct DeviceLimits {
  std::size_t shared_per_block = 0;        // sharedMemPerBlock: without opting in (48 KB)
  std::size_t shared_per_block_optin = 0;  // sharedMemPerBlockOptin: the most after opting in
  int max_threads_per_block = 0;           // maxThreadsPerBlock
};

// A configuration of the kernel and why it was chosen.
struct Config {
  int tile_width = 0;            // 8, 16 or 32
  int strip_depth = 0;           // a multiple of tile_width, at least tile_width
  std::size_t shared_bytes = 0;  // shared_bytes_for(tile_width, strip_depth)
  int blocks_per_sm = 0;         // resident blocks per SM, as the occupancy query gave it
  std::string reason;            // one or two sentences: the limits and numbers behind the choice
};

// How many blocks of tile_width x tile_width threads, each with shared_bytes of dynamic shared
// memory, fit on one SM; 0 when none can launch.
using OccupancyQuery = std::function<int(int tile_width, std::size_t shared_bytes)>;

// The bytes of dynamic shared memory that Mds and Nds need together.
std::size_t shared_bytes_for(int tile_width, int strip_depth);

// The current device's limits (cudaGetDevice, cudaGetDeviceProperties).
DeviceLimits device_limits();

// The occupancy API's answer for dynamic_matmul_kernel<tile_width> on the current device.
int blocks_per_sm(int tile_width, std::size_t shared_bytes);

// Throws std::invalid_argument, naming the bytes or threads asked for and the device's limit,
// when the configuration needs more threads per block or more shared memory than `limits`
// allow even after opting in; also for a tile width other than 8, 16, 32 and a strip depth that
// is not a positive multiple of it. Makes no CUDA call.
void check_config(const DeviceLimits& limits, int tile_width, int strip_depth);

// Picks a configuration that the device described by `limits` can run, asking `occupancy`
// how many blocks of each candidate fit on an SM, and says why in Config::reason.
Config choose_config(const DeviceLimits& limits, const OccupancyQuery& occupancy);

// choose_config for the current device: device_limits() and blocks_per_sm().
Config choose_config();

// Launches dynamic_matmul_kernel<tile_width> on device buffers with enough blocks to cover the
// I x K matrix P and exactly the dynamic shared memory the configuration needs, raising the
// kernel's limit first when that is more than sharedMemPerBlock. Throws std::invalid_argument,
// before any launch, for what check_config refuses on the current device and for I, J or K
// below 1. Checks the launch; does not synchronise.
void launch_dynamic_matmul(const float* d_M, const float* d_N, float* d_P, int I, int J, int K,
                           int tile_width, int strip_depth);

// The whole host side for P = M * N with M of I x J and N of J x K, in the configuration
// choose_config() picks for the current device: allocates, copies in, launches, checks, copies
// P out and frees. Returns the configuration it used.
Config dynamic_matmul(const float* h_M, const float* h_N, float* h_P, int I, int J, int K);

}  // namespace lab05
