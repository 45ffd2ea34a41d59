// Lab 03's race checks: the probe (probe/lab03_probe.cu) runs the student's kernels under
// compute-sanitizer racecheck, and the tests turn its report into a diagnosis.
#pragma once

#include <catch2/catch_test_macros.hpp>
#include <string>

#include "kit/sanitizer.hpp"

namespace lab03_tests {

// One report per hazard (racecheck's "hazard" report), so that a student sees the two lines
// of code and the threads involved.
inline const std::string kRacecheck = "--tool racecheck --racecheck-report hazard";

// The compute-sanitizer executable, or a SKIP (with the reason) where it is missing or cannot
// check a kernel on this machine (its run of the probe's race-free kernel fails).
inline std::string usable_racecheck() {
  const std::string tool = kit::sanitizer::find_compute_sanitizer(KIT_CUDA_BIN_DIR);
  if (tool.empty()) {
    SKIP("compute-sanitizer was found neither on PATH nor in " KIT_CUDA_BIN_DIR
         " nor in /usr/local/cuda/bin; the race check needs it (it comes with the CUDA toolkit)");
  }
  const kit::sanitizer::Run self = kit::sanitizer::run(tool, kRacecheck, KIT_PROBE_PATH, "selftest");
  if (self.exit_code != 0) {
    SKIP(
        "compute-sanitizer cannot check kernels on this machine: its run of a race-free kernel "
        "exited with "
        << self.exit_code << ":\n"
        << kit::sanitizer::tail(self.output, 8));
  }
  return tool;
}

inline kit::sanitizer::Run racecheck_probe(const std::string& tool, const std::string& mode) {
  return kit::sanitizer::run(tool, kRacecheck, KIT_PROBE_PATH, mode);
}

// The report lines worth showing a student: the hazards and the accesses involved.
inline std::string hazard_lines(const std::string& output) {
  return kit::sanitizer::lines_with(output, {"hazard detected", "Thread (", "SUMMARY"}, 10);
}

}  // namespace lab03_tests
