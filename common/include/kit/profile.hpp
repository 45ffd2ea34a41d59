// What a count of a kernel's work gives a test, whoever counted it (Nsight Compute over a lab's
// probe, kit/profiler.hpp, or the kit's load counter, kit/load_counter.hpp): one count per kernel
// launch, and the run's output for the probe's result lines and the failure messages.
#pragma once

#include <cstddef>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

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
  sanitizer::Run run;                // the counted run: command, exit status, output
  std::vector<KernelCount> kernels;  // one per kernel launch counted, in launch order
  // Who counted: "Nsight Compute", or the kit's load counter (over the probe, or over the kit's
  // own launch); and, when the load counter ran but its count was not used, why (the count is
  // then Nsight Compute's).
  std::string counted_by = "Nsight Compute";
  std::string counter_problem;
  // The count is the kit's launch of the lesson's kernel (count_kernel_alone), not the probe's;
  // `launcher` is then the probe's own run of the same modes, the student's launcher counted by
  // the same counter, which must have launched the kernel to the same count (kit/locality.hpp).
  bool kit_launched = false;
  std::shared_ptr<const Profile> launcher;

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

}  // namespace kit::profiler
