// Counting what a kernel did with Nsight Compute (ncu) from a test: a lab's probe runs the
// student's kernel once, ncu counts one metric over every kernel the probe launched, and the
// test compares the count with what the lesson predicts (kit/locality.hpp). Where the grader
// names the kit's load counter (common/load_counter/, KIT_LOAD_COUNTER_PATH), global loads are
// counted by it instead, over the lesson's kernel launched by the kit alone (kit_device_count): no
// profiler, so no turn as the GPU's one profiling process, and no host code of the student's.
#pragma once

#include <glob.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kit/gpu_gate.hpp"
#include "kit/load_counter.hpp"
#include "kit/probe.hpp"
#include "kit/profile.hpp"
#include "kit/sanitizer.hpp"

namespace kit::profiler {

// ncu as kit::sanitizer::find_cuda_tool finds it, else in the folders NVIDIA's installers put
// Nsight Compute in, beside the toolkit or under /opt/nvidia (the newest version). Empty when
// none is found.
inline std::string find_ncu(const std::string& cuda_bin_dir) {
  const std::string found = sanitizer::find_cuda_tool("ncu", cuda_bin_dir);
  if (!found.empty()) return found;
  std::string newest;
  for (const std::string& pattern : {cuda_bin_dir + "/../nsight-compute*/ncu",
                                     std::string("/usr/local/cuda/nsight-compute*/ncu"),
                                     std::string("/opt/nvidia/nsight-compute/*/ncu")}) {
    glob_t matches{};
    if (glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
      for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
        const std::string path = matches.gl_pathv[i];  // sorted: the last, usually the newest
        if (sanitizer::is_executable(path)) newest = path;
      }
    }
    globfree(&matches);
    if (!newest.empty()) return newest;
  }
  return "";
}

// The fields of one line of CSV: "a","b,c",d gives a | b,c | d.
inline std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

// A metric value as ncu prints it: digits, perhaps with thousands separators ("65,536").
// Negative when it is not a number.
inline double metric_value(const std::string& text) {
  std::string digits;
  for (char c : text) {
    if (c != ',') digits += c;
  }
  if (digits.empty()) return -1.0;
  char* end = nullptr;
  const double value = std::strtod(digits.c_str(), &end);
  return end != nullptr && *end == '\0' ? value : -1.0;
}

// What begins ncu's own lines, and the line it prints when a profiled process has ended, before
// its report.
inline const std::string kNcuPrefix = "==PROF==";
inline const std::string kNcuDisconnected = "==PROF== Disconnected from process";

// The metric's value for every kernel in the output of `ncu --csv` (the probe's own lines
// around it are skipped): the rows after a header that names "Kernel Name", "Metric Name" and
// "Metric Value", whose Metric Name is `metric`.
inline std::vector<KernelCount> parse_csv(const std::string& output, const std::string& metric) {
  std::vector<KernelCount> counts;
  // ncu prints its rows after the profiled process has ended and it has said so; what comes
  // before is the probe's own output too, where the student's code could print rows of its own.
  // So only what follows the end of the line holding ncu's last "Disconnected" is read (the
  // probe's last line may lack its newline, and ncu's then follows on it). Output of ncu's own
  // (==PROF== lines) without that line gives no count; output without either, a stand-in's in the
  // kit's tests, is read whole.
  std::size_t from = 0;
  if (const std::size_t last = output.rfind(kNcuDisconnected); last != std::string::npos) {
    from = output.find('\n', last);
    if (from == std::string::npos) return counts;
  } else if (output.find(kNcuPrefix) != std::string::npos) {
    return counts;
  }
  std::istringstream in(output.substr(from));
  std::string line;
  int kernel_col = -1, name_col = -1, value_col = -1;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '"') continue;  // ncu's ==PROF== lines, the probe's output
    const std::vector<std::string> fields = csv_fields(line);
    bool header = false;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (fields[i] == "Kernel Name") kernel_col = static_cast<int>(i), header = true;
      if (fields[i] == "Metric Name") name_col = static_cast<int>(i);
      if (fields[i] == "Metric Value") value_col = static_cast<int>(i);
    }
    if (header || kernel_col < 0 || name_col < 0 || value_col < 0) continue;
    const auto at = [&](int col) {
      return col < static_cast<int>(fields.size()) ? fields[static_cast<std::size_t>(col)] : "";
    };
    if (at(name_col) != metric) continue;
    const double value = metric_value(at(value_col));
    if (value >= 0.0) counts.push_back({at(kernel_col), value});
  }
  return counts;
}

// The command that runs the probe in mode(s) `probe_args` under ncu, counting every metric of
// `metrics` (in a fixed order, so that tests asking for the same run ask with the same command).
// The counts are exact whatever the clock and the caches, so ncu is told to leave both alone:
// it changes no setting of the GPU, and needs no right to. The probe is told it is profiled
// (probe::kProfiled), so that it takes the GPU's profiling turn whatever it runs.
inline std::string profile_command(const std::string& ncu, std::vector<std::string> metrics,
                                   const std::string& probe, const std::string& probe_args) {
  std::sort(metrics.begin(), metrics.end());
  metrics.erase(std::unique(metrics.begin(), metrics.end()), metrics.end());
  std::string joined;
  for (const std::string& m : metrics) joined += (joined.empty() ? "" : ",") + m;
  return sanitizer::shell_quote(ncu) + " --metrics " + joined +
         " --csv --print-units base --clock-control none --cache-control none"
         " --print-kernel-base mangled " +
         sanitizer::shell_quote(probe) + " " + probe::kProfiled + " " + probe_args;
}

// Runs the probe in mode(s) `probe_args` under ncu, which counts `metric`, and every metric of
// `shared_with` too, for every kernel it launches; the Profile holds `metric`'s counts.
//
// ncu's start takes most of a run's seconds, and a GPU has one profiling process at a time, so
// tests that need counts of the same probe ask for one run between them (profile_shared, below):
// the run is kept for the rest of the process, and a test after the first in a shared judge reads
// it instead of running ncu again. The counts are exact, so a test run alone gets the same ones.
//
// Two processes profiling one GPU at once fail each other ("a driver resource was unavailable"):
// the kit's probes hold the GPU to themselves while profiled, but a profiler outside the grader's
// control can still collide, so such a run is tried again, up to three times in all, before its
// output is judged. It is never the student's doing.
inline Profile profile_with_ncu(const std::string& ncu, const std::string& metric,
                                const std::string& probe, const std::string& probe_args,
                                const std::vector<std::string>& shared_with = {}) {
  std::vector<std::string> metrics = shared_with;
  metrics.push_back(metric);
  const std::string command = profile_command(ncu, metrics, probe, probe_args);
  static std::map<std::string, sanitizer::Run> finished;  // this process's runs
  Profile p;
  if (const auto kept = finished.find(command); kept != finished.end()) {
    p.run = kept->second;
  } else {
    for (int attempt = 1; attempt <= 3; ++attempt) {
      log_process_start("tool");
      p.run = sanitizer::run_command(command);
      release_hold_of_ended_child();  // the probe's turn, had ncu killed it before it ended
      if (p.run.output.find("driver resource was unavailable") == std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::seconds(2 * attempt));
    }
    finished.emplace(command, p.run);
  }
  if (p.run.truncated) {
    // Past its first MiB (the probe's own printing, say), ncu's rows may be out of reach and the
    // probe's in view: no count is read, and the test fails on that, never skips.
    p.run.output += "\nkit: the run printed more than 1 MiB, which was cut; no count was read\n";
    return p;
  }
  p.kernels = parse_csv(p.run.output, metric);
  return p;
}

// profile_with_ncu, but global loads alone (kGlobalLoads, shared with no other metric) of the
// lesson's kernel (`alone`, named) are counted by the load counter where the grader names one
// (load_counter_path) and kit_device_count is beside it: the same count, instruction for
// instruction (bench/RESULTS.md, "Global loads counted without Nsight Compute"), without a
// profiler's turn, over the kit's own launch of the kernel (count_kernel_alone). Where that count
// could not be made for a reason of the kit's, ncu counts the probe, as before, and the Profile
// says why in counter_problem. Beside a count of the kit's launch, the counter counts the probe's
// own run too (Profile::launcher): no profiler turn either, and the student's launcher is held to
// launching the kernel as the kit did.
inline Profile profile(const std::string& ncu, const std::string& metric, const std::string& probe,
                       const std::string& probe_args,
                       const std::vector<std::string>& shared_with = {},
                       const KitLaunch& alone = {}) {
  const std::string counter = metric == kGlobalLoads && shared_with.empty() && !alone.kernel.empty()
                                  ? load_counter_path()
                                  : std::string();
  const std::string device_count = device_count_path(counter);
  if (device_count.empty()) return profile_with_ncu(ncu, metric, probe, probe_args, shared_with);
  static std::map<std::string, Profile> counted;  // this process's counted runs
  const std::string key = counter + "\n" + probe + "\n" + alone.kernel + "\n" + probe_args;
  if (const auto kept = counted.find(key); kept != counted.end()) return kept->second;
  Profile c = count_kernel_alone(counter, device_count, alone, probe, probe_args);
  if (c.counter_problem.empty()) {
    // The launcher's run matters only beside a clean count: a failed one fails the test first.
    if (c.run.exit_code == 0) {
      c.launcher = std::make_shared<const Profile>(count_loads(counter, probe, probe_args));
    }
    return counted.emplace(key, c).first->second;
  }
  if (ncu.empty()) return c;  // nothing to count instead: the caller says why
  Profile p = profile_with_ncu(ncu, metric, probe, probe_args);
  p.counter_problem = c.counter_problem;
  return p;
}

// The other tests' part of one run of Nsight Compute over the same probe: the probe's modes they
// run before and after this test's own, and the metrics they count.
struct SharedProfile {
  std::vector<std::string> modes_before;
  std::vector<std::string> modes_after;
  std::vector<std::string> metrics;
};

// What a test that counts `metric` over its own modes `own_modes` reads when it shares a run with
// other tests (`shared`): the shared run (`shared.modes_before`, `own_modes`, then
// `shared.modes_after`, counting every metric), with `first_own_trial` the index of its first
// trial among the run's (Profile::trials), when the probe finished every trial of the test's own
// there. The probe stops at the first mode that fails, and ncu may refuse a metric another test
// needs (no right to the counters), so where the shared run ended before the test's own trials
// did, the test runs its own modes alone, as it did before it shared, and its trials come first.
// The choice depends only on the shared run's output, so a test alone and the same test in a
// shared judge read the same counts.
//
// Where global loads are counted without ncu (load_counter_path and kit_device_count beside it),
// a run that counts them is not shared: each test runs its own modes, the loads test with the
// counter (`alone`: its kernel as the kit launches it), the other with ncu.
inline Profile profile_shared(const std::string& ncu, const std::string& metric,
                              const std::string& probe, const std::string& own_modes,
                              const SharedProfile& shared, std::size_t& first_own_trial,
                              const KitLaunch& alone = {}) {
  first_own_trial = 0;
  const bool counts_loads =
      metric == kGlobalLoads ||
      std::find(shared.metrics.begin(), shared.metrics.end(), kGlobalLoads) != shared.metrics.end();
  if ((!shared.modes_before.empty() || !shared.modes_after.empty()) &&
      !(counts_loads && !device_count_path(load_counter_path()).empty())) {
    std::string modes;
    for (const std::string& mode : shared.modes_before) modes += mode + " ";
    modes += own_modes;
    for (const std::string& mode : shared.modes_after) modes += " " + mode;
    Profile all = profile(ncu, metric, probe, modes, shared.metrics);
    std::size_t own = 0;
    std::istringstream words(own_modes);
    for (std::string word; words >> word;) ++own;
    if (all.trials_finished() >= shared.modes_before.size() + own) {
      first_own_trial = shared.modes_before.size();
      return all;
    }
  }
  return profile(ncu, metric, probe, own_modes, {}, alone);
}

// Why ncu cannot count `metric` on this machine, or "" when it can: its run of the probe's own
// kernel (mode "selftest") must give a count. Asked only after a run of the student's kernel
// gave none, before that is blamed on the student.
inline std::string unusable_reason(const std::string& ncu, const std::string& metric,
                                   const std::string& probe) {
  const Profile self =
      profile_with_ncu(ncu, metric, probe, "selftest");  // ncu's, not the counter's
  // A flood of output is the probe's doing (its code is the student's too), not the machine's.
  if (self.run.truncated || (self.run.exit_code == 0 && !self.kernels.empty())) return "";
  return "Nsight Compute cannot count " + metric +
         " on this machine: its run of the probe's own kernel gave no count (exit code " +
         std::to_string(self.run.exit_code) + "):\n" + self.explanation();
}

}  // namespace kit::profiler
