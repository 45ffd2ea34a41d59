// Lab 03's probe: runs the student's kernels once on small inputs so that the tests can run
// them under compute-sanitizer racecheck (tests/racecheck.hpp), then checks that they did their
// work, so that an empty kernel cannot pass for a race-free one.
//   lab03_probe selftest          a race-free kernel of the kit's own (is the sanitizer usable?)
//   lab03_probe transpose         block_transpose_kernel at block widths 4, 8, 16 and 32
//   lab03_probe matmul-one-phase  tiled_matmul_kernel, width = TILE_WIDTH (16 and 32)
//   lab03_probe matmul            tiled_matmul_kernel at width 64 (TILE_WIDTH 16 and 32)
//   lab03_probe loads-16          tiled_matmul_kernel<16> once at kit::probe::kCountedMatmulWidth,
//   lab03_probe loads-32          and <32>, for Nsight Compute to count its global loads (the
//                                 locality test); the result must be exactly M * N
// Exit codes: 0 done, 1 a CUDA error or exception, 2 usage, 4 a wrong transpose or matrix
// product, or an unwritten element of P, 5 a profiled run held past kit::kProfilingHoldLimitS.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <vector>

#include "block_transpose.h"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/poison.hpp"
#include "kit/probe.hpp"
#include "tiled_matmul.h"

namespace {

int run_transpose() {
  const int width = 64, height = 64;  // two tiles a side at block width 32, more below it
  std::vector<float> A(static_cast<std::size_t>(width) * height);
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(i);
  kit::DeviceBuffer<float> d_A(A.size());
  for (int block : {4, 8, 16, 32}) {
    d_A.copy_from_host(A.data());
    lab03::launch_block_transpose(d_A.data(), width, height, block);
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> got(A.size());
    d_A.copy_to_host(got.data());
    for (int r = 0; r < height; ++r) {
      for (int c = 0; c < width; ++c) {
        const int tr = r / block * block, tc = c / block * block;
        const float want = A[static_cast<std::size_t>(tr + (c - tc)) * width + tc + (r - tr)];
        if (got[static_cast<std::size_t>(r) * width + c] != want) {
          std::fprintf(stderr, "lab03_probe: block width %d: A[%d][%d] is %g, expected %g\n", block,
                       r, c, got[static_cast<std::size_t>(r) * width + c], want);
          return kit::probe::kWrongResult;
        }
      }
    }
  }
  return 0;
}

// One launch at one tile width, alone, for Nsight Compute to count (kit/locality.hpp).
int run_counted(int tile) {
  const int width = kit::probe::kCountedMatmulWidth;
  return kit::probe::run_counted_matmul("lab03_probe", width, tile,
                                        [=](const float* d_M, const float* d_N, float* d_P) {
                                          lab03::launch_tiled_matmul(d_M, d_N, d_P, width, tile);
                                        });
}

// Runs both tile widths at `width`. The values do not matter to racecheck; the check is only
// that every element of P was written, so that an empty kernel cannot pass for a race-free one.
int run_matmul(int width_16, int width_32) {
  for (int tile : {16, 32}) {
    const int width = tile == 16 ? width_16 : width_32;
    const std::size_t count = static_cast<std::size_t>(width) * width;
    std::vector<float> M(count), N(count);
    for (std::size_t i = 0; i < count; ++i) {
      M[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
      N[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
    }
    kit::DeviceBuffer<float> d_M(count), d_N(count), d_P(count);
    d_M.copy_from_host(M.data());
    d_N.copy_from_host(N.data());
    kit::poison(d_P.data(), count);
    lab03::launch_tiled_matmul(d_M.data(), d_N.data(), d_P.data(), width, tile);
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    const long long i = kit::probe::first_unwritten(d_P.data(), count);
    if (i >= 0) {
      std::fprintf(stderr,
                   "lab03_probe: TILE_WIDTH %d, width %d: P[%lld][%lld] was never written\n", tile,
                   width, i / width, i % width);
      return kit::probe::kWrongResult;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // One phase (width = TILE_WIDTH): only the first barrier matters. Several phases (two at
  // TILE_WIDTH 32, four at 16): both do.
  return kit::probe::main(argc, argv, "lab03_probe",
                          {{"transpose", run_transpose},
                           {"matmul-one-phase", [] { return run_matmul(16, 32); }},
                           {"matmul", [] { return run_matmul(64, 64); }},
                           {"loads-16", [] { return run_counted(16); }},
                           {"loads-32", [] { return run_counted(32); }}});
}
