// Lab 04's probe: runs the student's kernels once on shapes that are no multiple of the tile,
// in buffers of exactly the matrices' size, so that the tests can run them under
// compute-sanitizer memcheck (tests/test_boundary_matmul.cpp); then checks that every element
// of P was written, so that an empty kernel cannot pass for a safe one.
//   lab04_probe selftest   an in-bounds kernel of the kit's own (is the sanitizer usable?)
//   lab04_probe square     tiled_matmul_kernel at widths 1, 17, 33 and 50
//   lab04_probe rect       rect_matmul_kernel on thin, wide and deep shapes
//   lab04_probe loads-16   tiled_matmul_kernel<16> once at kit::probe::kCountedMatmulWidth, and
//   lab04_probe loads-32   <32>, for Nsight Compute to count its global loads (the locality
//                          test); the result must be exactly M * N
// Exit codes: 0 done, 1 a CUDA error or exception, 2 usage, 4 an unwritten element of P (or a
// wrong one, in the loads modes), 5 a profiled run held past kit::kProfilingHoldLimitS.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <vector>

#include "boundary_matmul.h"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/poison.hpp"
#include "kit/probe.hpp"

namespace {

// Exactly I x J, J x K and I x K floats, so that memcheck reports any access past their ends.
// The check after the run is only that every element of P was written.
int run_shape(int I, int J, int K, int tile, bool square) {
  std::vector<float> M(static_cast<std::size_t>(I) * J), N(static_cast<std::size_t>(J) * K);
  for (std::size_t i = 0; i < M.size(); ++i) M[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  for (std::size_t i = 0; i < N.size(); ++i) N[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
  kit::DeviceBuffer<float> d_M(M.size()), d_N(N.size()), d_P(static_cast<std::size_t>(I) * K);
  d_M.copy_from_host(M.data());
  d_N.copy_from_host(N.data());
  kit::poison(d_P.data(), d_P.size());
  if (square) {
    lab04::launch_tiled_matmul(d_M.data(), d_N.data(), d_P.data(), I, tile);
  } else {
    lab04::launch_rect_matmul(d_M.data(), d_N.data(), d_P.data(), I, J, K, tile);
  }
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  const long long i = kit::probe::first_unwritten(d_P.data(), d_P.size());
  if (i < 0) return 0;
  std::fprintf(stderr,
               "lab04_probe: %s kernel, %d x %d times %d x %d, TILE_WIDTH %d: "
               "P[%lld][%lld] was never written\n",
               square ? "square" : "rect", I, J, J, K, tile, i / K, i % K);
  return kit::probe::kWrongResult;
}

int run_square() {
  for (int tile : {16, 32}) {
    for (int width : {1, 17, 33, 50}) {
      const int rc = run_shape(width, width, width, tile, true);
      if (rc != 0) return rc;
    }
  }
  return 0;
}

int run_rect() {
  const int shapes[][3] = {{17, 33, 5}, {5, 40, 47}, {33, 17, 100}, {1, 50, 1}};
  for (int tile : {16, 32}) {
    for (const auto& s : shapes) {
      const int rc = run_shape(s[0], s[1], s[2], tile, false);
      if (rc != 0) return rc;
    }
  }
  return 0;
}

// One launch of the square kernel at one tile width, alone, for Nsight Compute to count
// (kit/locality.hpp). The width is a multiple of both tiles, so every guard is true: the count
// is that of lab 03's kernel, whatever form the guards take.
int run_counted(int tile) {
  const int width = kit::probe::kCountedMatmulWidth;
  return kit::probe::run_counted_matmul("lab04_probe", width, tile,
                                        [=](const float* d_M, const float* d_N, float* d_P) {
                                          lab04::launch_tiled_matmul(d_M, d_N, d_P, width, tile);
                                        });
}

}  // namespace

int main(int argc, char** argv) {
  return kit::probe::main(argc, argv, "lab04_probe",
                          {{"square", run_square},
                           {"rect", run_rect},
                           {"loads-16", [] { return run_counted(16); }},
                           {"loads-32", [] { return run_counted(32); }}});
}
