// Counting what a kernel did with Nsight Compute (ncu) from a test: a lab's probe runs the
// student's kernel once, ncu counts one metric over every kernel the probe launched, and the
// test compares the count with what the lesson predicts (kit/locality.hpp).
#pragma once

#include <glob.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kit/gpu_gate.hpp"
#include "kit/probe.hpp"
#include "kit/sanitizer.hpp"

namespace kit::profiler {

// Warp-level global load instructions: one for each warp that issues a load from global memory,
// whatever the number of its threads. On the H100 at width 2048 (bench/RESULTS.md, "Global
// loads counted by Nsight Compute"): 536.9 M for the naive kernel, 33.6 M for the tiled kernel
// at TILE_WIDTH 16, 16.8 M at 32.
inline const std::string kGlobalLoads = "smsp__inst_executed_op_global_ld.sum";

struct KernelCount {
  std::string kernel;  // as ncu names it, e.g. "void lab03::tiled_matmul_kernel<16>(...)"
  double value = 0.0;
};

struct Profile {
  sanitizer::Run run;                // ncu's run of the probe: command, exit status, output
  std::vector<KernelCount> kernels;  // one per kernel launch ncu profiled, in launch order

  double total() const {
    double sum = 0.0;
    for (const KernelCount& k : kernels) sum += k.value;
    return sum;
  }
  // ncu ran but may not read the GPU's performance counters here (an administrator's setting).
  bool permission_denied() const {
    return run.output.find("ERR_NVGPUCTRPERM") != std::string::npos;
  }
  // The probe checked the kernel's result (kit::probe::run_counted_matmul) and found it right
  // or wrong; neither when the probe did not get that far.
  bool result_right() const { return has_line(probe::kResultRight); }
  bool result_wrong() const { return has_line(probe::kResultWrong); }
  // How many trials the probe found right, when it ran several (kit::probe::main).
  int results_right() const { return count_lines(probe::kResultRight); }

  // With several probe modes in one run, the kernels of each trial in order: the probe launches
  // its trial-end kernel after each one, and ncu profiles that like any other. Kernels after the
  // last marker (a trial that did not finish) make one more group.
  std::vector<std::vector<KernelCount>> trials() const {
    std::vector<std::vector<KernelCount>> groups(1);
    for (const KernelCount& k : kernels) {
      if (is_trial_end(k.kernel)) {
        groups.emplace_back();
      } else {
        groups.back().push_back(k);
      }
    }
    if (groups.back().empty()) groups.pop_back();
    return groups;
  }
  // The run's output without ncu's CSV rows, its ==PROF== lines and its notes on caches and clocks
  // (==WARNING== Note: Running with ...; a warning such as "No kernels were profiled" stays), its
  // last `limit` lines, for a failure message: the probe's own explanation (which element of P was
  // wrong, and what it held) and ncu's errors; the probe's result markers are left out too. ncu
  // prints its rows after the probe has ended, so the plain tail of a failed run was rows of
  // counts, and the probe's explanation was cut off.
  std::string explanation(int limit = 8) const {
    std::istringstream in(run.output);
    std::string kept;
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '"' || line.rfind("==PROF==", 0) == 0 ||
          (line.rfind("==WARNING==", 0) == 0 &&
           line.find("Note: Running with") != std::string::npos) ||
          line == probe::kResultRight || line == probe::kResultWrong) {
        continue;
      }
      kept += line + "\n";
    }
    return sanitizer::tail(kept, limit);
  }
  // How many trials ended with the kit's marker: those the probe finished.
  std::size_t trials_finished() const {
    std::size_t markers = 0;
    for (const KernelCount& k : kernels) markers += is_trial_end(k.kernel) ? 1 : 0;
    return markers;
  }

 private:
  // The kit's own marker, a kernel in namespace kit, where no student file may define one. ncu
  // is asked for mangled names (--print-kernel-base mangled): "_ZN3kit12_GLOBAL__N_19trial_endEv"
  // against "_ZN5lab03...". Demangled, ncu wrote it "kit::<unnamed>::trial_end()" in one run
  // and "unnamed>::trial_end()" in another (both on the H100), and the second was missed: the
  // trials of a CPU fallback were not told apart, and its hint was lost.
  static bool is_trial_end(const std::string& name) {
    std::string bare = name.rfind("void ", 0) == 0 ? name.substr(5) : name;
    return (bare.rfind("kit::", 0) == 0 || bare.rfind("_ZN3kit", 0) == 0) &&
           bare.find("trial_end") != std::string::npos;
  }
  bool has_line(const std::string& line) const { return count_lines(line) > 0; }
  int count_lines(const std::string& line) const {
    std::istringstream in(run.output);
    std::string l;
    int found = 0;
    while (std::getline(in, l)) {
      if (l == line) ++found;
    }
    return found;
  }
};

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

// The metric's value for every kernel in the output of `ncu --csv` (the probe's own lines
// around it are skipped): the rows after a header that names "Kernel Name", "Metric Name" and
// "Metric Value", whose Metric Name is `metric`.
inline std::vector<KernelCount> parse_csv(const std::string& output, const std::string& metric) {
  std::vector<KernelCount> counts;
  std::istringstream in(output);
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
// it changes no setting of the GPU, and needs no right to.
inline std::string profile_command(const std::string& ncu, std::vector<std::string> metrics,
                                   const std::string& probe, const std::string& probe_args) {
  std::sort(metrics.begin(), metrics.end());
  metrics.erase(std::unique(metrics.begin(), metrics.end()), metrics.end());
  std::string joined;
  for (const std::string& m : metrics) joined += (joined.empty() ? "" : ",") + m;
  return sanitizer::shell_quote(ncu) + " --metrics " + joined +
         " --csv --print-units base --clock-control none --cache-control none"
         " --print-kernel-base mangled " +
         sanitizer::shell_quote(probe) + " " + probe_args;
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
inline Profile profile(const std::string& ncu, const std::string& metric, const std::string& probe,
                       const std::string& probe_args,
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
      p.run = sanitizer::run_command(command);
      release_hold_of_ended_child();  // the probe's turn, had ncu killed it before it ended
      if (p.run.output.find("driver resource was unavailable") == std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::seconds(2 * attempt));
    }
    finished.emplace(command, p.run);
  }
  p.kernels = parse_csv(p.run.output, metric);
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
inline Profile profile_shared(const std::string& ncu, const std::string& metric,
                              const std::string& probe, const std::string& own_modes,
                              const SharedProfile& shared, std::size_t& first_own_trial) {
  first_own_trial = 0;
  if (!shared.modes_before.empty() || !shared.modes_after.empty()) {
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
  return profile(ncu, metric, probe, own_modes);
}

// Why ncu cannot count `metric` on this machine, or "" when it can: its run of the probe's own
// kernel (mode "selftest") must give a count. Asked only after a run of the student's kernel
// gave none, before that is blamed on the student.
inline std::string unusable_reason(const std::string& ncu, const std::string& metric,
                                   const std::string& probe) {
  const Profile self = profile(ncu, metric, probe, "selftest");
  if (self.run.exit_code == 0 && !self.kernels.empty()) return "";
  return "Nsight Compute cannot count " + metric +
         " on this machine: its run of the probe's own kernel gave no count (exit code " +
         std::to_string(self.run.exit_code) + "):\n" + self.explanation();
}

}  // namespace kit::profiler
