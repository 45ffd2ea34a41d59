#include "kit/matmul_harness.hpp"

#include <catch2/interfaces/catch_interfaces_capture.hpp>
#include <cstdint>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "kit/device_buffer.hpp"
#include "kit/gpu.hpp"
#include "kit/gpu_gate.hpp"
#include "kit/poison.hpp"
#include "kit/remote.hpp"
#include "kit/term_map.hpp"
#include "kit/timed_matmul.hpp"

namespace kit {

MatmulProblem make_matmul_problem(int rows, int inner, int cols, std::uint64_t seed) {
  MatmulProblem p;
  p.rows = rows;
  p.inner = inner;
  p.cols = cols;
  p.seed = seed;
  p.M = random_matrix(rows, inner, seed);
  p.N = random_matrix(inner, cols, seed ^ 0x5DEECE66Dull);
  p.ref = matmul_reference(p.M, p.N, rows, inner, cols);
  return p;
}

namespace {

// run_matmul's three buffers, of one shape.
struct MatmulBuffers {
  DeviceBuffer<float> M, N, P;
  bool fits(std::size_t m, std::size_t n, std::size_t p) const {
    return M.size() == m && N.size() == n && P.size() == p;
  }
};

// run_matmul's buffers between calls, kept for the process's next call of the same shape (a test
// runs several kernels on one problem; a term map runs 2 * inner launches on one shape). A call's
// buffers cross to a worker as CUDA IPC handles: new buffers for every call cost the judge an
// allocation and the worker an opening of each, driver work that every process on the GPU waits
// on (bench/RESULTS.md, "Buffers kept between calls"). Kept buffers hit the worker's mappings.
//
// They are safe to keep because they hold nothing but a call's own inputs and output: a worker
// that still maps one (it may read and write it at any time) sees inputs it was given and an
// output the judge compares with a reference of its own, never an expected value. Nothing else
// of the judge's is ever put in them; freed at exit, or when a newer shape pushes them out, they
// are held until no worker runs (kit/device_memory.hpp), like any buffer a worker mapped.
class BufferPool {
 public:
  MatmulBuffers take(std::size_t m, std::size_t n, std::size_t p) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto kept = free_.begin(); kept != free_.end(); ++kept) {
        if (!kept->fits(m, n, p)) continue;
        MatmulBuffers found = std::move(*kept);
        free_.erase(kept);
        return found;
      }
    }
    return {DeviceBuffer<float>(m), DeviceBuffer<float>(n), DeviceBuffer<float>(p)};
  }
  void give_back(MatmulBuffers buffers) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(buffers));  // newest last
    if (free_.size() > kShapesKept) free_.erase(free_.begin());
  }

 private:
  static constexpr std::size_t kShapesKept = 4;  // 12 blocks of 2 MiB at most for a small shape
  std::mutex mutex_;
  std::vector<MatmulBuffers> free_;
};

BufferPool& buffer_pool() {
  static BufferPool* const pool = new BufferPool;  // never destroyed: no cudaFree after main
  return *pool;
}

}  // namespace

std::vector<float> run_matmul(const MatmulProblem& problem, const MatmulLaunch& launch) {
  const std::size_t p_count = static_cast<std::size_t>(problem.rows) * problem.cols;
  if (launch.target<WorkerLaunch>() != nullptr && remote::calls_are_remote()) {
    std::vector<float> P(p_count, poison_value());
    // M and N are only read through a pointer to const: the worker sends nothing back for them.
    const remote::StagedArrays staged(
        {remote::staged(problem.M), remote::staged(problem.N), remote::staged(P)});
    launch(problem.M.data(), problem.N.data(), P.data());
    return P;
  }
  MatmulBuffers d = buffer_pool().take(problem.M.size(), problem.N.size(), p_count);
  d.M.copy_from_host(problem.M.data());
  d.N.copy_from_host(problem.N.data());
  poison(d.P.data(), d.P.size());
  launch(d.M.data(), d.N.data(), d.P.data());
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> P(d.P.size());
  d.P.copy_to_host(P.data());
  // Only after a clean call: a launch that threw may have left the context broken, and its
  // buffers with it.
  buffer_pool().give_back(std::move(d));
  return P;
}

namespace {

// Term maps one test case may make: each is 2 * inner launches. A test case runs several sizes,
// and a map at one of them may name nothing where the next size proves the cause: up to this many
// maps, until one has named a cause, after which the case makes no more.
constexpr int kTermMapsPerTestCase = 4;

struct TermMapBudget {
  std::string test_case;
  int made = 0;
  bool named = false;
};

// This test case's budget (reset when the case changes); nullptr outside a Catch2 test case (a
// program that only measures), which makes no maps.
TermMapBudget* term_map_budget() {
  static TermMapBudget budget;
  std::string current;
  try {
    current = Catch::getResultCapture().getCurrentTestName();
  } catch (const std::exception&) {
    return nullptr;
  }
  if (current != budget.test_case) budget = TermMapBudget{current, 0, false};
  return budget.named || budget.made >= kTermMapsPerTestCase ? nullptr : &budget;
}

}  // namespace

Comparison check_matmul(const MatmulProblem& problem, const MatmulLaunch& launch, int tile,
                        const MistakeCatalogue& lab_mistakes) {
  const std::vector<float> P = run_matmul(problem, launch);
  Comparison cmp = compare_with_diagnoses(P, problem, tile, lab_mistakes);
  // Only where no hint names a cause: a map never argues with a proven one, and a second cause
  // for one failure is worse than none (kit/term_map.hpp).
  if (cmp.ok || report_names_a_cause(cmp.report) ||
      !term_map_fits(problem.rows, problem.inner, problem.cols)) {
    return cmp;
  }
  TermMapBudget* budget = term_map_budget();
  if (budget == nullptr) return cmp;
  ++budget->made;
  try {
    const TermMap map = map_terms(launch, problem.rows, problem.inner, problem.cols);
    TermDiagnosis d = explain_terms(map, tile);
    if (!d.cause.empty() && !map_replays(map, problem, P)) {
      // The codes read as a rule of the chapter, but the kernel's result on the test's own
      // inputs is not what that map gives: its values are not sums of these terms, so the map
      // proves nothing, and what one element took is shown instead.
      d = {"", wrong_element_text(map)};
    }
    // Right on whole numbers, 0 on these fractions: only a conversion to an integer does that.
    if (d.cause.empty() && d.example.empty() &&
        cmp.report.find(kAllWrittenZero) != std::string::npos) {
      d.cause =
          "every element of P is right when the inputs are whole numbers, and 0 for these, all "
          "smaller than 1: the sum is converted to an integer along the way, as a sum kept in an "
          "int is; accumulate Pvalue in a float";
    }
    budget->named = !d.cause.empty();
    apply_term_diagnosis(cmp, d);
  } catch (const std::exception&) {
    // The launch failed on the map's inputs (a fault, a worker that died): the comparison stands
    // as it was, and the failure it reports is the one the test judges.
  }
  return cmp;
}

Comparison compare_with_diagnoses(const std::vector<float>& P, const MatmulProblem& problem,
                                  int tile, const MistakeCatalogue& lab_mistakes) {
  Comparison cmp = compare_matrix(P, problem.ref, Tolerance{}, tile);
  if (cmp.ok) return cmp;
  // Worth the extra host work only once we know the result is wrong.
  std::vector<Alternative> alternatives;
  if (lab_mistakes) alternatives = lab_mistakes(problem);
  for (Alternative& a : matmul_term_mistakes(problem.M, problem.N, problem.ref, problem.inner)) {
    alternatives.push_back(std::move(a));
  }
  if (problem.rows == problem.inner && problem.inner == problem.cols) {
    for (Alternative& a : matmul_index_mistakes(problem.M, problem.N, problem.rows)) {
      alternatives.push_back(std::move(a));
    }
  }
  if (alternatives.empty()) return cmp;
  return compare_matrix(P, problem.ref, Tolerance{}, tile, alternatives);
}

namespace {

// The call number of time_ratio's readying calls: below every warm-up's and timed call's, which
// count from 0, so that its inputs are no other call's (and its message says it was untimed).
constexpr int kReadyingCall = -1;

}  // namespace

TimeRatio time_ratio(const MatmulProblem& problem, const MatmulLaunch& candidate,
                     const MatmulLaunch& baseline, TimingOptions options,
                     const std::function<void()>& ready) {
  wait_for_the_gpu_asleep();  // before the judge's context, which these buffers make
  DeviceBuffer<float> d_M(problem.M.size()), d_N(problem.N.size());
  DeviceBuffer<float> d_P(static_cast<std::size_t>(problem.rows) * problem.cols);
  // The check reads its own copies of the inputs, never handed to the timed code: code in
  // another process (a worker, kit/remote.hpp) that still holds d_M and d_N after its call could
  // otherwise change them to match whatever it left in P.
  DeviceBuffer<float> kept_M(problem.M.size()), kept_N(problem.N.size());
  // Drawn afresh in every process: a kernel cannot know the inputs, or which elements are
  // checked, before it runs.
  std::random_device entropy;
  const std::uint64_t salt = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
  // Every call, warm-ups included, gets fresh inputs and a poisoned P before it, and its P
  // checked after it. The seed tells the baseline's calls (side 1) from the candidate's (side 2).
  auto hooks_for = [&](const std::string& who, std::uint64_t side) {
    const auto seed = [&, side](int call, std::uint64_t part) {
      return salt ^ (side << 56) ^ (part << 48) ^ static_cast<std::uint64_t>(call);
    };
    TimedCallHooks hooks;
    hooks.before = [&, seed](int call) {
      fill_fresh_inputs(d_M.data(), d_M.size(), seed(call, 1));
      fill_fresh_inputs(d_N.data(), d_N.size(), seed(call, 2));
      fill_fresh_inputs(kept_M.data(), kept_M.size(), seed(call, 1));
      fill_fresh_inputs(kept_N.data(), kept_N.size(), seed(call, 2));
      poison(d_P.data(), d_P.size());
    };
    hooks.after = [&, seed, who](int call) {
      const SpotCheck check =
          spot_check_matmul(kept_M.data(), kept_N.data(), d_P.data(), problem.rows, problem.inner,
                            problem.cols, seed(call, 3));
      if (!check.ok()) {
        throw std::runtime_error(describe_spot_check(check, problem.cols, call, who));
      }
    };
    return hooks;
  };
  const TimedCallHooks baseline_hooks = hooks_for("the kit's yardstick", 1);
  const TimedCallHooks candidate_hooks = hooks_for("your kernel", 2);
  const std::function<void()> run_baseline = [&] { baseline(d_M.data(), d_N.data(), d_P.data()); };
  const std::function<void()> run_candidate = [&] {
    candidate(d_M.data(), d_N.data(), d_P.data());
  };
  // One untimed, checked call of each side while the GPU is still shared (the buffers above made
  // this process's context). A side's first call starts its worker (a process and a CUDA context)
  // and maps these buffers in it: driver work that took seconds on a node whose other GPUs were
  // starting processes, and kept this GPU emptied for the timing meanwhile (bench/RESULTS.md,
  // "Starts outside the window"). Its inputs are drawn for a call number no other call has.
  untimed_call(run_baseline, baseline_hooks, kReadyingCall);
  untimed_call(run_candidate, candidate_hooks, kReadyingCall);
  if (ready) ready();
  // In turns, call by call: whatever slows the machine for a while slows both sides of a turn
  // alike (kit/timer.hpp), where timed one after the other it fell on one side alone.
  const TimedTurns turns =
      time_in_turns(run_baseline, run_candidate, options, baseline_hooks, candidate_hooks);
  TimeRatio r;
  r.baseline = turns.first;
  r.candidate = turns.second;
  r.median_ratio = turns.median_ratio;
  return r;
}

double gflops(const MatmulProblem& problem, double ms) {
  const double flops = 2.0 * problem.rows * static_cast<double>(problem.inner) * problem.cols;
  return flops / (ms * 1e-3) / 1e9;
}

}  // namespace kit
