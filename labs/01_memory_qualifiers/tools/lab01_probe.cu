// Lab 01's probe: runs one of the student's kernels once on a small input so that the racecheck
// tests can run it under compute-sanitizer, then checks that every output was written, so that
// an empty kernel cannot pass for a race-free one.
//   lab01_probe selftest     a race-free kernel of the kit's own (is the sanitizer usable?)
//   lab01_probe polynomial   evaluate_polynomial_kernel over three full blocks and a partial one
//   lab01_probe block-sums   block_sums_kernel over three full blocks and a partial one
// Exit codes: 0 done, 1 a CUDA error or exception, 2 usage, 4 an output never written.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <vector>

#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/poison.hpp"
#include "kit/probe.hpp"
#include "memory_qualifiers.h"

namespace {

// Three full blocks and a partial one, for every kernel the probe runs.
constexpr int kElements = 3 * lab01::kThreadsPerBlock + 17;

int report_unwritten(const char* what, const float* d_out, std::size_t count) {
  const long long i = kit::probe::first_unwritten(d_out, count);
  if (i < 0) return 0;
  std::fprintf(stderr, "lab01_probe: %s[%lld] was never written\n", what, i);
  return kit::probe::kWrongResult;
}

int run_polynomial() {
  const float c[4] = {0.5f, -1.0f, 0.25f, 2.0f};
  lab01::set_polynomial(c, 4);
  std::vector<float> x(kElements);
  for (int i = 0; i < kElements; ++i) x[i] = static_cast<float>(i % 9 - 4) / 4.0f;
  kit::DeviceBuffer<float> d_x(x.size()), d_y(x.size());
  d_x.copy_from_host(x.data());
  kit::poison(d_y.data(), d_y.size());
  lab01::launch_evaluate_polynomial(d_x.data(), d_y.data(), kElements, 4);
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  return report_unwritten("y", d_y.data(), d_y.size());
}

int run_block_sums() {
  const int n = kElements;
  const int blocks = (n + lab01::kThreadsPerBlock - 1) / lab01::kThreadsPerBlock;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i % 7 - 3);
  kit::DeviceBuffer<float> d_x(x.size()), d_sums(blocks);
  d_x.copy_from_host(x.data());
  kit::poison(d_sums.data(), d_sums.size());
  lab01::launch_block_sums(d_x.data(), d_sums.data(), n);
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  return report_unwritten("block_sums", d_sums.data(), d_sums.size());
}

}  // namespace

int main(int argc, char** argv) {
  return kit::probe::main(argc, argv, "lab01_probe",
                          {{"polynomial", run_polynomial}, {"block-sums", run_block_sums}});
}
