// What the labs' probes share. A probe (labs/NN_slug/tools/) is a small program of the kit's
// that runs the student's kernels in one of a few modes, so that a safety test can run it under
// compute-sanitizer (kit/sanitizer.hpp) and read the tool's report; each mode then checks that
// the kernels did their work, so that an empty kernel cannot pass for a safe one.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "kit/sanitizer.hpp"

namespace kit::probe {

// A probe's exit codes: 0 done, 1 a CUDA error or an exception, 2 usage, this one for a result
// that is wrong or was never written, and kit::kProfiledTooLong (5, kit/gpu_gate.hpp) for a
// profiled run that held the GPU's profiler turn past its limit.
constexpr int kWrongResult = kit::sanitizer::kWrongResult;

// kit_device_count's own (common/load_counter/device_count.cpp): it could not set its count up
// before the student's kernel ran (no CUDA, no device code for this GPU in the probe: the kit's
// doing, never the student's, so the judge counts with Nsight Compute instead), or the probe
// holds device code but not the lesson's kernel.
constexpr int kCountNotSetUp = 6;
constexpr int kNoLessonKernel = 7;

struct Mode {
  std::string name;
  std::function<int()> run;  // returns the exit code
};

// A probe's main: runs the mode that argv[1] names, one of `modes` or "selftest": a kernel of
// the kit's own (shared memory written, a barrier, then read by other threads; race-free and in
// bounds) that tells whether the sanitizer is usable on this machine at all. Given several of
// `modes`, it runs them in order, stopping at the first that fails, as the GPU's one profiling
// process throughout (kit::ExclusiveGpu, GpuUse::profiling) and with a kernel named trial_end
// launched after each, so that one run of Nsight Compute can count every trial
// (kit::profiler::Profile::trials). With sanitizer::kModesTogether first, it runs the modes after
// it in order,
// stopping at the first that fails, as a plain process: no turn, no marker (a sanitizer's run of
// several modes in one process: kit::sanitizer::run_modes).
// With kProfiled first (every run under Nsight Compute: kit::profiler::profile_command), one
// mode or the selftest also runs as the GPU's one profiling process.
int main(int argc, char** argv, const std::string& program, const std::vector<Mode>& modes);

// The probe's first argument in every run under Nsight Compute.
inline const std::string kProfiled = "--profiled";

// What a probe prints on its standard output after checking a counted run's result (kit/
// profiler.hpp reads it back from Nsight Compute's output): kResultRight, or kResultWrong and a
// line saying where.
inline const std::string kResultRight = "kit-probe-result: right";
inline const std::string kResultWrong = "kit-probe-result: wrong";

// The width of the counted run: small, so that ncu takes seconds, and a multiple of 32 and of
// both tile widths, so that a tiled kernel's count is exact (kit::tiled_global_loads).
constexpr int kCountedMatmulWidth = 256;

// One run of a square matrix product for Nsight Compute to count (the locality tests): inputs of
// small whole numbers, so that every order of summation gives the exact product, P poisoned with
// a memset (no kernel of the kit's own runs, so every kernel ncu counts is the student's), one
// call of `launch` on device pointers, then the check that P is exactly M * N. Returns 0, or
// kWrongResult after printing kResultWrong when an element is unwritten or wrong: a count of
// loads judges only a kernel that computes P.
int run_counted_matmul(const std::string& program, int width, int tile,
                       const std::function<void(const float*, const float*, float*)>& launch);

// The index of the first of `count` floats at d_out (device memory) still holding the poison
// of kit/poison.hpp, that is never written; -1 when every one was.
long long first_unwritten(const float* d_out, std::size_t count);

}  // namespace kit::probe
