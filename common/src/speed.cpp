#include "kit/speed.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace kit {

SpeedComparison::SpeedComparison(std::string reference_name)
    : reference_name_(std::move(reference_name)) {}

void SpeedComparison::time(const std::string& label, const MatmulProblem& problem,
                           const MatmulLaunch& candidate, const MatmulLaunch& reference) {
  // The GPU alone from just after the first trial's readying calls (kit::time_ratio) to the end
  // of the last trial: the first trial's start happens while the GPU is shared, and the test waits
  // for the GPU only once.
  const auto hold_the_gpu = [this] {
    if (!alone_) alone_ = std::make_unique<ExclusiveGpu>();
  };
  if (reference) {
    record(label, time_ratio(problem, candidate, reference, {}, hold_the_gpu), problem.rows, true);
    return;
  }
  if (problem.rows != problem.inner || problem.inner != problem.cols) {
    throw std::invalid_argument(
        "SpeedComparison::time: cuBLAS stands in for the reference only on square problems; "
        "time the speed test on a width x width problem");
  }
  if (!cublas_) cublas_ = std::make_unique<CublasMatmul>();
  CublasMatmul& cublas = *cublas_;
  const int width = problem.rows;
  const MatmulLaunch yardstick = [&cublas, width](const float* d_M, const float* d_N, float* d_P) {
    cublas(d_M, d_N, d_P, width);
  };
  record(label, time_ratio(problem, candidate, yardstick, {}, hold_the_gpu), width, false);
}

void SpeedComparison::record(const std::string& label, const TimeRatio& ratio, int width,
                             bool against_reference) {
  if (!(ratio.baseline.median_ms > 0) || !(ratio.candidate.median_ms > 0) || !(ratio.ratio() > 0)) {
    throw std::invalid_argument("SpeedComparison: trial '" + label +
                                "' has a time that is not positive; it was not measured");
  }
  trials_.push_back({label, ratio, width, against_reference});
}

bool SpeedComparison::graded() const {
  return !trials_.empty() && std::all_of(trials_.begin(), trials_.end(),
                                         [](const Trial& t) { return t.against_reference; });
}

double SpeedComparison::worst_ratio() const {
  if (trials_.empty()) {
    throw std::logic_error("SpeedComparison: no trial was timed, so there is no ratio to report");
  }
  double worst = 0;
  for (const Trial& t : trials_) worst = std::max(worst, t.ratio.ratio());
  return worst;
}

std::string SpeedComparison::metric_name() const {
  return graded() ? "time_ratio" : "time_ratio_vs_cublas";
}

std::string SpeedComparison::report() const {
  std::ostringstream out;
  for (const Trial& t : trials_) {
    out << t.label << ": ";
    if (t.against_reference) {
      out << "your kernel " << t.ratio.candidate.median_ms << " ms, " << reference_name_ << " "
          << t.ratio.baseline.median_ms << " ms (median of " << t.ratio.candidate.repeats
          << " runs each, width " << t.width
          << "); timed in turns, your time over its time: " << t.ratio.ratio()
          << " (the median of the turns)\n";
    } else {
      out << "your kernel takes " << t.ratio.ratio() << "x the time of cuBLAS ("
          << t.ratio.candidate.median_ms << " ms vs " << t.ratio.baseline.median_ms << " ms, width "
          << t.width << ")\n";
    }
  }
  return out.str();
}

}  // namespace kit
