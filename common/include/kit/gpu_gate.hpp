// The GPU to this process alone while it measures something the whole device sees: a kernel's
// time, the device's free memory.
//
// The grader runs test processes of several submissions on one GPU at once. A test that
// measures holds an ExclusiveGpu for as long as its measurement lasts; under the grader the
// constructor asks for the GPU and waits until every other process on it has finished or is
// waiting too (grader/confine/gate.py says how), and the destructor gives it back. Holds nest: only
// the outermost one asks. Outside the grader (ctest, a student running a test by hand) nothing is
// asked and nothing waits: the process is then the only one the kit runs on the GPU.
//
// A count of Nsight Compute (the locality tests' global loads) needs less: ncu's count of a
// kernel is that kernel's, whatever other processes run beside it (on the H100 the probe's
// counts came out the same to the instruction beside eight busy test processes), but two
// processes profiling one GPU at once collide. So such a hold asks only to be the one profiling
// process on its GPU (GpuUse::profiling), which costs the class no drain of the GPU.
#pragma once

namespace kit {

enum class GpuUse { alone, profiling };

// A profiling hold is one kernel's run or a few, under Nsight Compute: about 1-3 s on an H200,
// 15 s at the most seen in a class (bench/RESULTS.md). But a kernel being profiled holds up every
// other process's kernels on the GPU until it ends (there, a tiny kernel of another process
// waited 4.0 s beside a profiled one of 6 s; "A profiled kernel holds up the GPU"), so a kernel
// that never ends would stall every classmate's tests on the GPU until its test's time limit.
// Where a profiling hold lasts longer than this many seconds after its grant
// (KIT_PROFILING_HOLD_LIMIT_S overrides it, for the kit's tests), the process says so on its
// standard error and ends at once with kProfiledTooLong, which ends its kernels too; Nsight
// Compute then returns, and the test that ran it fails with what the process said. The watch
// follows the outermost hold of the process, which the probes take from one thread; a profiling
// hold inside another kind of hold (the GPU alone, where nothing else runs) is not watched.
constexpr int kProfilingHoldLimitS = 30;
constexpr int kProfiledTooLong = 5;

// Between two test cases of one judge process (the grader runs a lab's shareable tests in one,
// grader/pipeline/run.py): under the grader it writes 'C' on the gate and waits for 'G', which the
// grader holds back while its GPU is being emptied for another process's measurement, so that a
// measurement waits for the case under way, not for the rest of the process. The grader also
// counts the process's time limit from here (one case's limit, not one for all). Outside the
// grader, or inside a hold, it does nothing.
void between_test_cases();

// After a child process that may have asked through this process's gate has ended (a probe under
// Nsight Compute, kit/profiler.hpp): gives back whatever the gate still holds, unless this process
// holds something itself. The child shares the gate's pipes, and the grader closes a turn when it
// reads 'R' or when every writer has gone; this process keeps its copy open, so a child killed
// before its hold ended left the turn held while this process went on with its other tests. ncu
// kills its application after a kernel faults: lab 05's mutants that fault held the GPU's one
// profiler turn 10-13 s in a class (bench/RESULTS.md, "A profiler turn left held"). Outside the
// grader it does nothing. Only after a child that ran alone: where children run side by side
// (kit::sanitizer::run_each), one's end would give back another's hold.
void release_hold_of_ended_child();

class ExclusiveGpu {
 public:
  explicit ExclusiveGpu(GpuUse use = GpuUse::alone);
  ~ExclusiveGpu();
  ExclusiveGpu(const ExclusiveGpu&) = delete;
  ExclusiveGpu& operator=(const ExclusiveGpu&) = delete;
};

}  // namespace kit
