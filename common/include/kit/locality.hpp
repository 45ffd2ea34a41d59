// The locality test of the tiled labs (03-05): the student's tiled kernel, launched once by the
// kit alone under the kit's load counter, or by the lab's probe under Nsight Compute where the
// counter is not built (kit/profiler.hpp),
// must issue no more global load instructions than a tiled kernel does, TILE_WIDTH times fewer than
// the naive kernel. The test reports the ratio as the metric "global_load_ratio"; the rubric turns
// it into partial credit (docs/design/tests.md).
#pragma once

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "kit/gpu_gate.hpp"
#include "kit/profiler.hpp"
#include "kit/testing.hpp"

namespace kit {

// The global load instructions of a tiled kernel for a width x width product, width a multiple
// of 32 and of the tile: each warp issues 2 (one element of M, one of N for each of its 32
// threads) per phase, and there are width / tile phases. The naive kernel issues 2 per step of
// k instead, tile times as many.
inline double tiled_global_loads(int width, int tile) {
  return 2.0 * (static_cast<double>(width) * width / 32.0) * (width / tile);
}

// The fewest global load instructions that can read all of M and N (2 * width^2 floats) for a
// width x width product: one warp's load instruction brings at most 32 threads x 16 bytes, 128
// floats. Kernels that issued fewer did not read M and N with plain global loads (the count sees
// no other kind: cp.async, TMA and texture fetches are not in it), however P came out right: an
// empty kernel of the lesson's name beside P computed on the host scored a ratio of 0, full
// marks. A tiled kernel issues 4 * width / tile times as many: 64 at tile 16, 32 at tile 32.
inline double fewest_global_loads(int width) {
  return 2.0 * static_cast<double>(width) * width / 128.0;
}

// One run of the probe to count: its mode and the tile width it runs at.
struct LoadCountTrial {
  int tile;
  std::string probe_mode;
};

// What the test says about the student's kernel: its name and where the write-up explains the
// tiles ("tiled_matmul_kernel", "README section 5"); and how the kit launches it to count it
// alone (kit::profiler::count_kernel_alone): its lab's namespace ("lab03"), and for lab 05's
// kernel the strips' depth the probe's loads modes use (0: the square kernel of labs 03 and 04).
struct LoadCountLesson {
  std::string kernel;
  std::string readme;
  std::string lab_namespace;
  int strip_depth = 0;
};

namespace detail {

inline std::string count_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", value);
  return text;
}

}  // namespace detail

// Beside a count of the kit's own launch of the lesson's kernel (`kit_trials`, one group of
// kernels a trial), the probe's own run of the same trials through the student's launcher,
// counted by the same counter (`own`, kit::profiler::Profile::launcher): it must compute P and
// launch kernels whose loads come to the kit's count in every trial, or the test fails saying what
// the launcher did. So a launcher that computes P another way (on the host, beside a kernel of the
// lesson's name that merely reads M and N) fails, as it did when Nsight Compute counted the probe.
inline void check_launcher(const profiler::Profile& own,
                           const std::vector<std::vector<profiler::KernelCount>>& kit_trials,
                           const std::vector<LoadCountTrial>& trials,
                           const LoadCountLesson& lesson) {
  const int width = probe::kCountedMatmulWidth;
  CAPTURE(own.run.command, own.run.exit_code);
  const std::size_t right = static_cast<std::size_t>(own.results_right());
  if (own.result_wrong()) {
    FAIL(lesson.kernel << " at TILE_WIDTH " << trials[std::min(right, trials.size() - 1)].tile
                       << ", width " << width
                       << ", launched by the lab's launcher, computed a wrong P, so its loads were "
                          "not judged:\n"
                       << own.explanation(4)
                       << "hint: make the correctness tests pass first; this test counts the "
                          "loads only of a kernel that computes P.");
  }
  const std::vector<std::vector<profiler::KernelCount>> own_trials = own.trials();
  if (!own.counter_problem.empty() || right < trials.size() || own_trials.size() != trials.size()) {
    FAIL("the probe failed under the kit's load counter with the lab's launcher ("
         << (own.counter_problem.empty() ? "exit code " + std::to_string(own.run.exit_code)
                                         : own.counter_problem)
         << "; " << right << " of " << trials.size() << " trials finished):\n"
         << own.explanation()
         << "hint: the kernel or its launch failed; the correctness tests "
            "show how.");
  }
  for (std::size_t i = 0; i < trials.size(); ++i) {
    double mine = 0.0, kits = 0.0;
    for (const profiler::KernelCount& k : own_trials[i]) mine += k.value;
    for (const profiler::KernelCount& k : kit_trials[i]) kits += k.value;
    if (own_trials[i].empty()) {
      FAIL("P came out right, but the kit's load counter saw no kernel launched at TILE_WIDTH "
           << trials[i].tile << " by the lab's launcher:\n"
           << own.explanation(6)
           << "hint: P was computed without a kernel (on the host?); the lab asks for "
           << lesson.kernel << " to compute it on the GPU.");
    }
    if (mine != kits) {
      FAIL("P came out right, but at TILE_WIDTH "
           << trials[i].tile << ", width " << width << " the lab's launcher ran "
           << own_trials[i].size() << (own_trials[i].size() == 1 ? " kernel" : " kernels")
           << " that issued " << detail::count_text(mine)
           << " global load instructions, where the kit's own launch of " << lesson.kernel
           << " issued " << detail::count_text(kits) << ":\n"
           << "hint: so the launcher did not compute P with one launch of " << lesson.kernel
           << " in TILE_WIDTH x TILE_WIDTH blocks, one thread per element of P (" << lesson.readme
           << "); P came from elsewhere (the host?) or from other kernels.");
    }
  }
}

// The whole test: each trial's count over a tiled kernel's at the probe's width
// (kit::probe::kCountedMatmulWidth); the worst one is the metric. Skips with the reason where
// ncu is missing or may not read the counters; fails when the kernel's result is wrong or no
// kernel ran.
inline void check_tiled_global_loads(const std::string& probe, const std::string& cuda_bin_dir,
                                     const std::vector<LoadCountTrial>& trials,
                                     const LoadCountLesson& lesson,
                                     const profiler::SharedProfile& shared = {}) {
  const int width = probe::kCountedMatmulWidth;
  const std::string ncu = profiler::find_ncu(cuda_bin_dir);
  const profiler::KitLaunch alone{lesson.lab_namespace + "::" + lesson.kernel, lesson.strip_depth,
                                  sanitizer::find_cuda_tool("cuobjdump", cuda_bin_dir)};
  const bool kit_counts = !alone.cuobjdump.empty() &&
                          !profiler::device_count_path(profiler::load_counter_path()).empty();
  if (ncu.empty() && !kit_counts) {
    SKIP("Nsight Compute (ncu) was found neither on PATH nor in "
         << cuda_bin_dir
         << " nor in /usr/local/cuda/bin, and the kit's load counter was not built; counting "
            "global loads needs one of them (ncu comes with the CUDA toolkit)");
  }
  // Where the load counter is given, it counts the kit's own launch of the kernel, and ncu runs
  // only where that count could not be made for a reason of the kit's
  // (kit::profiler::count_kernel_alone). Under ncu:
  // All trials run in one probe process under one ncu (its start takes seconds), which becomes
  // the GPU's one profiling process once, after creating its context (kit/gpu_gate.hpp: ncu's
  // counts do not depend on other processes, but two profilers at once collide), and marks
  // where each trial ends.
  std::string modes;
  for (const LoadCountTrial& trial : trials) modes += (modes.empty() ? "" : " ") + trial.probe_mode;
  std::size_t skipped = 0;  // the trials of another test's part of a shared run (lab 05's)
  const profiler::Profile p =
      profiler::profile_shared(ncu, profiler::kGlobalLoads, probe, modes, shared, skipped,
                               kit_counts ? alone : profiler::KitLaunch{});
  if (p.kit_launched && !p.counter_problem.empty()) {  // no ncu to count instead
    SKIP("the kit's load counter could not count here ("
         << p.counter_problem
         << "), and Nsight Compute (ncu), which would count instead, was found neither on PATH "
            "nor in "
         << cuda_bin_dir << " nor in /usr/local/cuda/bin");
  }
  // Where the kit launched the kernel itself, its hints say how (in the same hint: the kit's
  // launch is no cause to fix first).
  const std::string launched =
      p.kit_launched ? " (the kit launched " + lesson.kernel +
                           " itself here, as the lab's launcher must: TILE_WIDTH x TILE_WIDTH "
                           "blocks, one thread per element of P)"
                     : std::string();
  CAPTURE(p.run.command, p.run.exit_code);
  if (p.permission_denied()) {
    SKIP(
        "Nsight Compute may not read the GPU's performance counters on this machine "
        "(ERR_NVGPUCTRPERM: an administrator must allow it, "
        "https://developer.nvidia.com/ERR_NVGPUCTRPERM), so global loads cannot be counted");
  }
  // The probe stops at the first trial whose P is wrong; the ones before it were right.
  const std::size_t right = static_cast<std::size_t>(p.results_right());
  if (p.result_wrong()) {
    FAIL(lesson.kernel << " at TILE_WIDTH " << trials[std::min(right, trials.size() - 1)].tile
                       << ", width " << width
                       << " computed a wrong P, so its loads were not judged:\n"
                       << p.explanation(4)
                       << "hint: make the correctness tests pass first; this test counts the "
                          "loads only of a kernel that computes P"
                       << launched << ".");
  }
  std::vector<std::vector<profiler::KernelCount>> per_trial = p.trials();
  // A shared run is read only where it finished this test's trials, so each has its group;
  // another test's groups before these are dropped (they check no result, so `right` counts
  // only these).
  per_trial.erase(per_trial.begin(), per_trial.begin() + static_cast<std::ptrdiff_t>(
                                                             std::min(skipped, per_trial.size())));
  if (right < trials.size() || per_trial.size() != trials.size()) {
    // Whether ncu can count here at all is asked only of ncu's own runs.
    if (!p.kit_launched && (p.kernels.empty() || right < trials.size())) {
      const std::string why = profiler::unusable_reason(ncu, profiler::kGlobalLoads, probe);
      if (!why.empty()) SKIP(why);
    }
    FAIL("the probe failed under " << p.counted_by << " (exit code " << p.run.exit_code << "; "
                                   << right << " of " << trials.size() << " trials finished):\n"
                                   << p.explanation() << "hint: the kernel or its launch failed"
                                   << launched << "; the correctness tests show how.");
  }
  if (p.launcher) check_launcher(*p.launcher, per_trial, trials, lesson);
  double worst = 0.0;
  int worst_tile = 0;
  std::ostringstream report;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const LoadCountTrial& trial = trials[i];
    double total = 0.0;
    for (const profiler::KernelCount& k : per_trial[i]) total += k.value;
    if (per_trial[i].empty()) {
      FAIL("P came out right, but "
           << p.counted_by << " saw no kernel launched at TILE_WIDTH " << trial.tile << ":\n"
           << p.explanation(6)
           << "hint: P was computed without a kernel (on the host?); the lab asks for "
           << lesson.kernel << " to compute it on the GPU.");
    }
    if (total < fewest_global_loads(width)) {
      FAIL("P came out right, but the kernels launched at TILE_WIDTH "
           << trial.tile << ", width " << width << " issued " << detail::count_text(total)
           << " global load instructions (counted by " << p.counted_by << "), fewer than the "
           << detail::count_text(fewest_global_loads(width))
           << " that reading M and N once with plain loads takes at 16 bytes a thread:\n"
           << "hint: so P was not computed from M and N read with plain global loads: it came "
              "from elsewhere (the host?), or the tiles were copied by means this count does not "
              "see (cp.async, TMA, textures); the lab asks "
           << lesson.kernel << " to load its tiles of M and N into shared memory with plain loads ("
           << lesson.readme << ").");
    }
    const double expected = tiled_global_loads(width, trial.tile);
    const double ratio = total / expected;
    report << "TILE_WIDTH " << trial.tile << ", width " << width << ": "
           << detail::count_text(total) << " global load instructions in " << per_trial[i].size()
           << (per_trial[i].size() == 1 ? " kernel" : " kernels") << "; a tiled kernel issues "
           << detail::count_text(expected) << " (2 per warp per phase), the naive kernel "
           << trial.tile << " times as many\n";
    if (ratio > worst) {
      worst = ratio;
      worst_tile = trial.tile;
    }
  }
  report << "counted by " << p.counted_by;
  if (!p.counter_problem.empty()) {
    report << " (the kit's load counter ran first, but its count was not used: "
           << p.counter_problem << ")";
  }
  WARN(report.str());
  // Above 1.05 the kernel issues loads that a tiled kernel does not: say how many times as many.
  if (worst > 1.05) {
    char times[16];
    std::snprintf(times, sizeof times, "%.1f", worst);
    std::ostringstream hint;
    hint << "hint: at TILE_WIDTH " << worst_tile << " your kernel issues " << times
         << "x the global load instructions of a tiled kernel";
    if (std::fabs(worst - worst_tile) < 0.05 * worst_tile) {
      hint << ", as many as the naive kernel of lab 02";
    }
    hint << ": is the inner loop reading Mds and Nds? Every element a thread needs should come "
            "from the tiles, loaded once per phase ("
         << lesson.readme << ").";
    WARN(hint.str());
  }
  KIT_METRIC("global_load_ratio", worst);
}

}  // namespace kit
