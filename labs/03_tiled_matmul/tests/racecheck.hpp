// Lab 03's race checks: the probe (tools/lab03_probe.cu) runs the student's kernels under
// compute-sanitizer racecheck, and the tests turn its report into a diagnosis.
#pragma once

#include <catch2/catch_test_macros.hpp>
#include <string>
#include <vector>

#include "kit/sanitizer.hpp"
#include "kit/testing.hpp"

namespace lab03_tests {

using kit::sanitizer::kRacecheck;

// The compute-sanitizer executable, or a SKIP (with the reason) where it is missing.
inline std::string find_racecheck() {
  return kit::require_compute_sanitizer(KIT_CUDA_BIN_DIR, "the race check");
}

// A SKIP where racecheck cannot check any kernel on this machine: asked only when a run ended
// in a way the test does not understand, before that is blamed on the student's kernel.
inline void skip_if_racecheck_unusable(const std::string& tool) {
  const std::string why =
      kit::sanitizer::unusable_reason(tool, kRacecheck, KIT_BUILT_PATH(KIT_PROBE_PATH));
  if (!why.empty()) SKIP(why);
}

inline kit::sanitizer::Run racecheck_probe(const std::string& tool, const std::string& mode) {
  return kit::sanitizer::run(tool, kRacecheck, KIT_BUILT_PATH(KIT_PROBE_PATH), mode);
}

// Several modes of the probe under racecheck, a run each; where the grader asks, all in one
// process first, and a run each only when that one is not clean
// (kit::sanitizer::run_each_unless_clean_together).
inline std::vector<kit::sanitizer::Run> racecheck_probes(const std::string& tool,
                                                         const std::vector<std::string>& modes) {
  return kit::sanitizer::run_each_unless_clean_together(tool, kRacecheck,
                                                        KIT_BUILT_PATH(KIT_PROBE_PATH), modes);
}

}  // namespace lab03_tests
