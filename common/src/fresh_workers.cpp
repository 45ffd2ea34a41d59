// A test case of a lab's tests meets workers in a known state. The grader may run several test
// cases in one judge process (grader/pipeline/run.py, tests_per_process), and a case's verdict must
// not depend on an earlier case's trouble: after a case whose student's worker crashed, hung,
// faulted or held too much (each of which ends that worker at once, kit/remote.hpp), after one
// that left a worker mid-call, one whose student's code set what outlives a call (a kernel's
// attributes: common/src/worker_state.cpp), one that left a kernel running past the case's end
// (a call that threw after launching it: common/src/remote_worker.cpp, device_work_done), or
// one that left the student's worker holding more
// device memory than it held after its first case (a leak, local memory still reserved), the next
// case starts new workers. Otherwise they serve the next case too, whether the case passed or
// failed, which spares it the worker's start (a process, its sandbox and a CUDA context: most of
// what a short GPU test costs). Nothing a worker keeps is trusted: every call gets fresh inputs
// from the judge (outputs poisoned, inputs with a zeroed tail) and every output is checked on the
// judge's side. What the student's code keeps for itself does carry over, as it did after a
// passing case before: host statics, __device__ and __constant__ variables, its own allocations
// (less than the growth allowed below), the in-kernel heap. Code whose result depends on an
// earlier call (a buffer cached at its first call's size) can then fail or pass a case where a
// new worker would not; what shows that none of the sample students do is the bench's comparison
// with each test alone (`grader bench --each-alone`: identical scores on the whole sample class,
// bench/RESULTS.md, "Workers kept after a failing case"). Before, every case that did not pass met
// new workers: the sample class's mutants started 3.9 student's workers a student-lab, the
// reference 1.7. A new worker that a later part of a case started, after the student's worker had
// ended in an earlier one, serves the next case too: it is no older than that trouble. Linked into
// every split lab's test executable (cmake/KitLab.cmake), since nothing else refers to it.
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>
#include <cstdint>
#include <exception>

#include "kit/gpu_gate.hpp"
#include "kit/remote.hpp"

namespace {

// Device memory a student's worker may gain over a run of cases before the next case
// gets a new one: below the driver's granularity for a context's growth, far below a leak's.
constexpr long long kGrowthAllowed = 32LL << 20;

class FreshWorkers : public Catch::EventListenerBase {
 public:
  using Catch::EventListenerBase::EventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo&) override {
    kit::remote::begin_case_part(true);
    kit::between_test_cases();
    if (keep_) return;
    kit::remote::stop_worker(kit::remote::Role::student);
    kit::remote::stop_worker(kit::remote::Role::reference);
    baseline_pid_ = 0;
  }

  // A later part of a case (another GENERATE value or section) runs no student call once the
  // student's worker ended in trouble in an earlier part (kit::remote::begin_case_part).
  void testCasePartialStarting(const Catch::TestCaseInfo&, std::uint64_t part) override {
    if (part > 0) kit::remote::begin_case_part(false);
  }
  void testCasePartialEnded(const Catch::TestCaseStats& stats, std::uint64_t) override {
    // A failure a test may expect ([!shouldfail]) counts too; a skip does not (allPassed() would
    // count it).
    const Catch::Counts& a = stats.totals.assertions;
    kit::remote::end_case_part(a.failed + a.failedButOk > 0 || stats.aborting);
  }

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    keep_ = !stats.aborting && kit::remote::workers_in_step() && at_baseline();
  }

 private:
  // True when the student's worker holds no more device memory than after the first case it
  // served, or none at all, never having opened the GPU; false when the driver's count is not
  // readable (no GPU, no worker, no NVML: a worker the case ended is gone). What the first case
  // left is the baseline, so only growth past it is seen.
  bool at_baseline() {
    const long pid = kit::remote::worker_pid(kit::remote::Role::student);
    try {
      // The copies of staged arrays workers keep between calls are the kit's, not a leak (nor a
      // yardstick's: lab 02's leak test reads the reference's worker too); each worker takes back
      // its last error too. A student's worker whose code set what outlives a call (a kernel's
      // attributes) serves no further case; the reference's settings are the kit's own.
      const bool settings_kept = kit::remote::end_case(kit::remote::Role::student);
      (void)kit::remote::end_case(kit::remote::Role::reference);
      if (!settings_kept) return false;
    } catch (const std::exception&) {
      return false;  // a worker that cannot answer serves no further case
    }
    const long long used = kit::remote::process_device_memory(pid);
    if (pid <= 0 || used < 0) return false;
    // A worker that never opened the GPU (host calls alone: lab 06's calculator) holds nothing
    // and serves the next case; its first count with a context becomes the baseline. Before,
    // such a worker's unreadable count started a new one for every case: 26 a lab 06 student.
    if (used == 0) return true;
    if (pid != baseline_pid_) baseline_pid_ = pid, baseline_ = used;
    return used <= baseline_ + kGrowthAllowed;
  }

  bool keep_ = false;
  long baseline_pid_ = 0;
  long long baseline_ = 0;
};

}  // namespace

CATCH_REGISTER_LISTENER(FreshWorkers)
