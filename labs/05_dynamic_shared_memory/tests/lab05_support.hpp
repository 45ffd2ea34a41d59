// What lab 05's public and hidden tests share: launching the student's kernel in a
// configuration, the shapes and strip depths, and made-up devices for the host-only tests of
// the configuration chooser.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dynamic_matmul.h"
#include "kit/compare.hpp"
#include "kit/kernel_attributes.hpp"
#include "kit/matmul_harness.hpp"
#include "kit/testing.hpp"
#include "lab05_configs.hpp"

namespace lab05_tests {

// Defined in kernel_attributes_lab05.cpp: the student's kernel as the compiler built it, read
// from the worker's executable, and the occupancy the runtime would give it.
kit::KernelAttributes kernel_attributes(int tile_width);
int expected_blocks_per_sm(int tile_width, std::size_t shared_bytes);

// M is I x J, N is J x K, P is I x K.
struct Shape {
  int I, J, K;
};

inline kit::MatmulLaunch dynamic(Shape s, int tile, int depth) {
  return kit::WorkerLaunch{[=](const float* d_M, const float* d_N, float* d_P) {
    lab05::launch_dynamic_matmul(d_M, d_N, d_P, s.I, s.J, s.K, tile, depth);
  }};
}

inline kit::MatmulProblem make_problem(Shape s, std::uint64_t seed) {
  return kit::make_matmul_problem(s.I, s.J, s.K, seed);
}

// Every tile width with the given strip depths, each a multiple of the tile (in tiles).
inline void check_shape(Shape s, std::uint64_t seed, const std::vector<int>& depths_in_tiles) {
  const kit::MatmulProblem problem = make_problem(s, seed);
  for (int tile : {8, 16, 32}) {
    for (int tiles : depths_in_tiles) {
      const int depth = tile * tiles;
      CAPTURE(s.I, s.J, s.K, tile, depth, problem.seed);
      KIT_CHECK_MATRIX(kit::check_matmul(problem, dynamic(s, tile, depth), tile));
    }
  }
}

// A made-up device for the host-only tests: its limits, and an occupancy like a real GPU's
// (2048 threads, 32 blocks and sm_shared bytes of shared memory per SM, 1 KB of it reserved per
// block), except that blocks of `unresident_tile` threads fit nowhere (as when a kernel's
// registers are too many); 0 for none.
struct FakeDevice {
  std::string name;
  lab05::DeviceLimits limits;
  std::size_t sm_shared;
  int unresident_tile;

  int occupancy(int tile, std::size_t bytes) const {
    if (tile == unresident_tile || tile * tile > limits.max_threads_per_block ||
        bytes > limits.shared_per_block_optin) {
      return 0;
    }
    const int by_threads = 2048 / (tile * tile);
    const int by_shared = static_cast<int>(sm_shared / (bytes + 1024));
    int blocks = by_threads < 32 ? by_threads : 32;
    return blocks < by_shared ? blocks : by_shared;
  }
};

inline std::vector<FakeDevice> fake_devices() {
  constexpr std::size_t KB = 1024;
  return {
      {"an H100-like GPU (1024 threads, 48 KB and 227 KB by opting in)",
       {48 * KB, 227 * KB, 1024},
       228 * KB,
       0},
      {"a GPU of 512 threads and 16 KB of shared memory per block",
       {16 * KB, 16 * KB, 512},
       64 * KB,
       0},
      {"a GPU where no 32 x 32 block can be resident", {48 * KB, 48 * KB, 1024}, 96 * KB, 32},
      {"a GPU of 4 KB of shared memory per block", {4 * KB, 4 * KB, 1024}, 16 * KB, 0},
      {"a GPU of 64 threads per block", {48 * KB, 48 * KB, 64}, 64 * KB, 0},
  };
}

}  // namespace lab05_tests
