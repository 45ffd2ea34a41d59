// Lab 05's probe: runs the student's kernel in several configurations on shapes that are no
// multiple of the tile, in buffers of exactly the matrices' size, so that the tests can run it
// under compute-sanitizer memcheck (tests/test_dynamic_matmul.cpp): memcheck sees an access past
// the dynamic shared memory the launch gave the block as well as one past M, N or P. Each run
// then checks that every element of P was written, so that an empty kernel cannot pass.
//   lab05_probe selftest   an in-bounds kernel of the kit's own (is the tool usable?)
//   lab05_probe tiles      every tile width with strips one tile deep
//   lab05_probe strips     every tile width with strips two and three tiles deep
//   lab05_probe sizes      the configurations of tests/lab05_configs.hpp, once each, for
//                          Nsight Compute to read each launch's dynamic shared memory
//   lab05_probe loads-16   tile 16 with strips 64 deep, and tile 32 with strips 64 deep, once at
//   lab05_probe loads-32   kit::probe::kCountedMatmulWidth, for Nsight Compute to count global
//                          loads (the locality test); the result must be exactly M * N
// Exit codes: 0 done, 1 a CUDA error or exception, 2 usage, 4 an unwritten element of P (or a
// wrong one, in the loads modes), 5 a profiled run held past kit::kProfilingHoldLimitS.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <vector>

#include "dynamic_matmul.h"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/gpu_gate.hpp"
#include "kit/poison.hpp"
#include "kit/probe.hpp"
#include "tests/lab05_configs.hpp"

namespace {

int run_shape(int I, int J, int K, int tile, int depth) {
  std::vector<float> M(static_cast<std::size_t>(I) * J), N(static_cast<std::size_t>(J) * K);
  for (std::size_t i = 0; i < M.size(); ++i) M[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  for (std::size_t i = 0; i < N.size(); ++i) N[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
  kit::DeviceBuffer<float> d_M(M.size()), d_N(N.size()), d_P(static_cast<std::size_t>(I) * K);
  d_M.copy_from_host(M.data());
  d_N.copy_from_host(N.data());
  kit::poison(d_P.data(), d_P.size());
  lab05::launch_dynamic_matmul(d_M.data(), d_N.data(), d_P.data(), I, J, K, tile, depth);
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  const long long i = kit::probe::first_unwritten(d_P.data(), d_P.size());
  if (i < 0) return 0;
  std::fprintf(stderr,
               "lab05_probe: %d x %d times %d x %d, tile %d, strip depth %d: "
               "P[%lld][%lld] was never written\n",
               I, J, J, K, tile, depth, i / K, i % K);
  return kit::probe::kWrongResult;
}

int run_depths(const std::vector<int>& depths_in_tiles) {
  const int shapes[][3] = {{1, 1, 1}, {17, 33, 5}, {5, 40, 47}, {33, 70, 100}, {50, 50, 50}};
  for (int tile : {8, 16, 32}) {
    for (int tiles : depths_in_tiles) {
      for (const auto& s : shapes) {
        const int rc = run_shape(s[0], s[1], s[2], tile, tile * tiles);
        if (rc != 0) return rc;
      }
    }
  }
  return 0;
}

// One launch per configuration, in the order the test expects; the results are not checked:
// the test reads only what each launch asked for.
int run_sizes() {
  const int width = 64;
  kit::DeviceBuffer<float> d_M(width * width), d_N(width * width), d_P(width * width);
  kit::poison(d_M.data(), d_M.size());
  kit::poison(d_N.data(), d_N.size());
  // Nsight Compute profiles each of these launches, and two profiling processes on one GPU fail
  // each other ("a driver resource was unavailable"): the one profiling process meanwhile.
  kit::ExclusiveGpu profiling(kit::GpuUse::profiling);
  for (const lab05_tests::TileDepth& c : lab05_tests::sized_launches()) {
    lab05::launch_dynamic_matmul(d_M.data(), d_N.data(), d_P.data(), width, width, width, c.tile,
                                 c.depth);
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
  }
  return 0;
}

// One launch at one tile width with strips 64 deep, alone, for Nsight Compute to count
// (kit/locality.hpp). The width is a multiple of the strip, so every guard is true.
int run_counted(int tile) {
  const int width = kit::probe::kCountedMatmulWidth;
  return kit::probe::run_counted_matmul(
      "lab05_probe", width, tile, [=](const float* d_M, const float* d_N, float* d_P) {
        lab05::launch_dynamic_matmul(d_M, d_N, d_P, width, width, width, tile,
                                     lab05_tests::kCountedStripDepth);
      });
}

}  // namespace

int main(int argc, char** argv) {
  return kit::probe::main(argc, argv, "lab05_probe",
                          {{"tiles", [] { return run_depths({1}); }},
                           {"strips",
                            [] {
                              return run_depths({2, 3});
                            }},
                           {"sizes", run_sizes},
                           {"loads-16", [] { return run_counted(16); }},
                           {"loads-32", [] { return run_counted(32); }}});
}
