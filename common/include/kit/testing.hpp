// Catch2 glue shared by every lab's tests: skipping without a GPU, matrix checks, metrics.
#pragma once

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <exception>
#include <string>
#include <vector>

#include "kit/compare.hpp"
#include "kit/gpu.hpp"
#include "kit/poison.hpp"
#include "kit/remote.hpp"
#include "kit/sanitizer.hpp"

// First line of every [gpu] test: without a usable GPU the test is reported as skipped
// (never as passed), with the reason.
#define KIT_REQUIRE_GPU()                                             \
  do {                                                                \
    const ::kit::GpuStatus& kit_gpu_ = ::kit::gpu_status();           \
    if (!kit_gpu_.usable) SKIP("no usable GPU: " << kit_gpu_.reason); \
  } while (false)

// Reports a figure for the grader (docs/design/tests.md): a WARN line "kit-metric name=value".
#define KIT_METRIC(name, value) WARN("kit-metric " << (name) << "=" << (value))

// Records a failed check with the comparison's explanation, or a success.
#define KIT_CHECK_MATRIX(comparison)                 \
  do {                                               \
    const ::kit::Comparison kit_cmp_ = (comparison); \
    if (!kit_cmp_.ok)                                \
      FAIL_CHECK(::kit::failure_message(kit_cmp_));  \
    else                                             \
      SUCCEED("result matches the host reference");  \
  } while (false)

// As KIT_CHECK_MATRIX, but ends the test on a mismatch (use before timing a kernel).
#define KIT_REQUIRE_MATRIX(comparison)                        \
  do {                                                        \
    const ::kit::Comparison kit_cmp_ = (comparison);          \
    if (!kit_cmp_.ok) FAIL(::kit::failure_message(kit_cmp_)); \
  } while (false)

namespace kit {

// A safety test (guard bands, sanitizers) judges only a kernel that does its work, or a
// do-nothing solution would pass it: records a failure and returns false when some element of
// P (copied back from a poisoned buffer) was never written.
inline bool fully_written(const std::vector<float>& P) {
  const long long unwritten = std::count_if(P.begin(), P.end(), is_poison);
  if (unwritten == 0) return true;
  FAIL_CHECK(unwritten << " of " << P.size()
                       << " elements of P were never written, so this check has nothing to judge\n"
                          "hint: make the correctness tests pass first; this test judges only a "
                          "kernel that computes all of P.");
  return false;
}

// First step of a test that reads a lab kernel's machine code, attributes or launches by name:
// the student's code may define no function the reference does not (kit::remote::
// worker_functions_beyond_the_labs), or a kernel under the expected name could pass the test
// while one of another name does the work. `readme` says where the write-up names the kernels.
// A SKIP where cuobjdump cannot read the workers (the test itself would skip there too).
inline void require_only_the_labs_kernels(const std::string& readme) {
  std::vector<std::string> beyond;
  try {
    beyond = remote::worker_functions_beyond_the_labs();
  } catch (const std::exception& error) {
    SKIP("your code's kernels could not be listed: " << error.what());
  }
  if (beyond.empty()) return;
  std::string names;
  for (std::size_t i = 0; i < beyond.size() && i < 5; ++i) names += "\n  " + beyond[i];
  if (beyond.size() > 5) names += "\n  and " + std::to_string(beyond.size() - 5) + " more";
  FAIL("your code defines " << beyond.size()
                            << " kernel(s) or device function(s) the lab does not name:" << names
                            << "\nhint: this test reads the lab's kernels by name, so the work "
                               "must be done in them: keep the kernels the skeleton declares and "
                               "write no others ("
                            << readme << ").");
}

// The compute-sanitizer executable for a safety test (kit::sanitizer::find_compute_sanitizer),
// or a SKIP with the reason where this machine has none: `check` says what the test wanted it
// for ("the race check"). cuda_bin_dir is KIT_CUDA_BIN_DIR, where the kit's nvcc lives.
inline std::string require_compute_sanitizer(const std::string& cuda_bin_dir,
                                             const std::string& check) {
  const std::string tool = sanitizer::find_compute_sanitizer(cuda_bin_dir);
  if (tool.empty()) {
    SKIP("compute-sanitizer was found neither on PATH nor in "
         << cuda_bin_dir << " nor in /usr/local/cuda/bin; " << check
         << " needs it (it comes with the CUDA toolkit)");
  }
  return tool;
}

}  // namespace kit
