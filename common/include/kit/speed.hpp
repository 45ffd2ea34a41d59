// The speed test of every matrix-multiply lab: the student's kernel timed against a yardstick
// in the same process, the slowest trial setting the figure the grader scores.
//
// The yardstick is the lab's reference kernel where the kit has it (staff builds, grading). A
// student kit ships no reference, so cuBLAS stands in there: its ratio is shown to the student
// under another metric name, which no rubric grades.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kit/cublas_matmul.hpp"
#include "kit/gpu_gate.hpp"
#include "kit/matmul_harness.hpp"
#include "kit/testing.hpp"

namespace kit {

class SpeedComparison {
 public:
  // reference_name says what the reference kernel is in messages ("reference tiled kernel").
  explicit SpeedComparison(std::string reference_name);

  // Times candidate against reference on the problem's inputs; with an empty reference (a
  // student kit), against cuBLAS, which needs a square problem.
  void time(const std::string& label, const MatmulProblem& problem, const MatmulLaunch& candidate,
            const MatmulLaunch& reference);

  // Adds a measured trial; time() ends here, and the host-only tests call it directly.
  void record(const std::string& label, const TimeRatio& ratio, int width, bool against_reference);

  bool graded() const;              // every trial ran against the reference
  double worst_ratio() const;       // the largest candidate / yardstick ratio
  std::string metric_name() const;  // "time_ratio", or "time_ratio_vs_cublas" in a student kit
  std::string report() const;       // one line per trial, for the student
  const std::string& reference_name() const { return reference_name_; }

 private:
  struct Trial {
    std::string label;
    TimeRatio ratio;
    int width;
    bool against_reference;
  };
  std::string reference_name_;
  std::vector<Trial> trials_;
  std::unique_ptr<CublasMatmul> cublas_;  // made on first use: only a student kit needs it
  // Taken by the first trial once its workers have started (kit::time_ratio's `ready`) and kept,
  // so that a test's trials wait for the GPU only once.
  std::unique_ptr<ExclusiveGpu> alone_;
};

// Reports a finished comparison inside a Catch2 test: the timings, and the metric.
inline void report_speed(const SpeedComparison& speed) {
  INFO(speed.report());
  if (!speed.graded()) {
    WARN("Grading compares against the " << speed.reference_name()
                                         << " instead of cuBLAS; this student kit does not "
                                            "ship it.");
  }
  KIT_METRIC(speed.metric_name(), speed.worst_ratio());
}

}  // namespace kit
