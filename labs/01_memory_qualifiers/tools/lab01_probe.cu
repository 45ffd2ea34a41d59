// Lab 01's probe: runs the student's block-sum kernel once on a small input so that the racecheck
// test can run it under compute-sanitizer, then checks that every block sum was written, so that
// an empty kernel cannot pass for a race-free one.
//   lab01_probe selftest     a race-free kernel of the kit's own (is the sanitizer usable?)
//   lab01_probe block-sums   block_sums_kernel over three full blocks and a partial one
// Exit codes: 0 done, 1 a CUDA error or exception, 2 usage, 4 a block sum never written.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/poison.hpp"
#include "kit/probe.hpp"
#include "memory_qualifiers.h"

namespace {

int run_block_sums() {
  const int n = 3 * lab01::kThreadsPerBlock + 17;
  const int blocks = (n + lab01::kThreadsPerBlock - 1) / lab01::kThreadsPerBlock;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i % 7 - 3);
  kit::DeviceBuffer<float> d_x(x.size()), d_sums(blocks);
  d_x.copy_from_host(x.data());
  kit::poison(d_sums.data(), d_sums.size());
  lab01::launch_block_sums(d_x.data(), d_sums.data(), n);
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  const long long b = kit::probe::first_unwritten(d_sums.data(), d_sums.size());
  if (b >= 0) {
    std::fprintf(stderr, "lab01_probe: block_sums[%lld] was never written\n", b);
    return kit::probe::kWrongResult;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return kit::probe::main(argc, argv, "lab01_probe", {{"block-sums", run_block_sums}});
}
