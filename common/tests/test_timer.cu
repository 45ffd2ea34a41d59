// The timer's promises (docs/design/tests.md, "Timing"): fresh inputs and a check
// after every timed call, work on any stream timed, persisting L2 refused.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstddef>
#include <vector>

#include "kit/cublas_matmul.hpp"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/matmul_harness.hpp"
#include "kit/poison.hpp"
#include "kit/testing.hpp"
#include "kit/timed_matmul.hpp"
#include "kit/timer.hpp"
#include "spin_kernel.cuh"

using Catch::Matchers::ContainsSubstring;

namespace {

// A stream that does not wait for the default one, as a launcher hiding its work would use.
struct SideStream {
  cudaStream_t stream = nullptr;
  SideStream() { KIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); }
  ~SideStream() { cudaStreamDestroy(stream); }
};

constexpr int kWidth = 128;

}  // namespace

TEST_CASE("a timed product that skips its work after the first call fails its timing",
          "[common][gpu]") {
  KIT_REQUIRE_GPU();
  const kit::MatmulProblem problem = kit::make_square_problem(kWidth, 5);
  kit::CublasMatmul cublas;
  const kit::MatmulLaunch honest = [&cublas](const float* M, const float* N, float* P) {
    cublas(M, N, P, kWidth);
  };
  int calls = 0;
  const kit::MatmulLaunch once = [&](const float* M, const float* N, float* P) {
    if (calls++ == 0) cublas(M, N, P, kWidth);  // then nothing: P stays poisoned
  };
  CHECK_THROWS_WITH(kit::time_ratio(problem, once, honest), ContainsSubstring("never written"));

  // Keeps the first result and copies it back on every later call: right once, then stale.
  kit::DeviceBuffer<float> kept(static_cast<std::size_t>(kWidth) * kWidth);
  calls = 0;
  const kit::MatmulLaunch stale = [&](const float* M, const float* N, float* P) {
    if (calls++ == 0) {
      cublas(M, N, kept.data(), kWidth);
    }
    KIT_CUDA_CHECK(
        cudaMemcpy(P, kept.data(), kept.size() * sizeof(float), cudaMemcpyDeviceToDevice));
  };
  CHECK_THROWS_WITH(kit::time_ratio(problem, stale, honest), ContainsSubstring("expected"));

  // The honest launch passes every check, and its ratio to itself is about 1.
  const kit::TimeRatio same = kit::time_ratio(problem, honest, honest);
  CHECK(same.ratio() > 0.5);
  CHECK(same.ratio() < 2.0);
}

TEST_CASE("every timed call gets its hooks before and after it in order", "[common][gpu]") {
  KIT_REQUIRE_GPU();
  std::vector<int> seen;
  kit::TimedCallHooks hooks;
  hooks.before = [&](int call) { seen.push_back(call); };
  hooks.after = [&](int call) { seen.push_back(-1 - call); };
  const kit::TimingOptions options{2, 3};
  (void)kit::time_on_device(
      [] {
        spin<<<1, 1>>>(1000);
        KIT_CHECK_LAUNCH();
      },
      options, hooks);
  CHECK(seen == std::vector<int>{0, -1, 1, -2, 2, -3, 3, -4, 4, -5});
}

TEST_CASE("two launches timed in turns each get their own hooks in the order of the turns",
          "[common][gpu]") {
  KIT_REQUIRE_GPU();
  std::vector<int> seen;  // 100 + call for the first launch's hooks, 200 + call for the second's
  const auto hooks = [&seen](int side) {
    kit::TimedCallHooks h;
    h.before = [&seen, side](int call) { seen.push_back(side + call); };
    return h;
  };
  const auto launch = [] {
    spin<<<1, 1>>>(1000);
    KIT_CHECK_LAUNCH();
  };
  const kit::TimedTurns turns =
      kit::time_in_turns(launch, launch, kit::TimingOptions{1, 3}, hooks(100), hooks(200));
  // The warm-ups, then first-second, second-first, first-second.
  CHECK(seen == std::vector<int>{100, 200, 101, 201, 202, 102, 103, 203});
  CHECK(turns.first.repeats == 3);
  CHECK(turns.second.repeats == 3);
}

// Timed ([performance], so CTest runs it alone): whatever slows the GPU's work for most of the
// timing, as the driver's work for other GPUs of a node did, must not move the ratio when it
// slows both sides of each turn. Timed one launch's repeats after the other's, the same slowdown
// falling on the second's repeats alone would give a ratio of about 5.
TEST_CASE("a slowdown that lasts several turns slows both launches of a turn alike",
          "[common][performance][gpu]") {
  KIT_REQUIRE_GPU();
  const kit::TimingOptions options{2, 21};
  int launches = 0;
  // Turns 2 to 15 of the 23 (two warm-up turns first) take 5 ms a launch instead of 1 ms: more
  // than half of the timed repeats, so each side's median is a slowed one.
  const auto launch = [&launches] {
    const int turn = launches++ / 2;
    const bool slowed = turn >= 2 && turn < 16;
    spin<<<1, 1>>>(slowed ? 5'000'000ull : 1'000'000ull);
    KIT_CHECK_LAUNCH();
  };
  const kit::TimedTurns turns = kit::time_in_turns(launch, launch, options);
  CAPTURE(turns.first.median_ms, turns.second.median_ms, turns.median_ratio);
  CHECK(turns.first.median_ms > 4.5);
  CHECK(turns.second.median_ms > 4.5);
  CHECK(turns.median_ratio > 0.95);
  CHECK(turns.median_ratio < 1.05);
}

TEST_CASE(
    "a median is the middle value of an odd count and the mean of the middle two of an even one",
    "[common]") {
  CHECK(kit::median_of({3.0, 1.0, 2.0}) == 2.0);
  CHECK(kit::median_of({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(kit::median_of({7.0}) == 7.0);
  CHECK_THROWS_WITH(kit::median_of({}), ContainsSubstring("no values"));
}

// Timed: another process's kernels on the GPU would make a plain launch look device-wide (seen
// once on the H100 under ctest -j 16), so CTest runs it alone ([performance]).
TEST_CASE("work launched on a side stream is timed until the whole device is idle",
          "[common][performance][gpu]") {
  KIT_REQUIRE_GPU();
  SideStream side;
  const kit::Timing t = kit::time_on_device(
      [&side] {
        spin<<<1, 1, 0, side.stream>>>(3'000'000);  // 3 ms the default stream does not wait for
        KIT_CHECK_LAUNCH();
      },
      kit::TimingOptions{1, 5});
  CAPTURE(t.median_ms, t.device_wide_repeats);
  CHECK(t.median_ms >= 2.5);
  CHECK(t.device_wide_repeats == 5);

  // On the default stream the events see it all, and the host's clock is not used.
  const kit::Timing plain = kit::time_on_device(
      [] {
        spin<<<1, 1>>>(3'000'000);
        KIT_CHECK_LAUNCH();
      },
      kit::TimingOptions{1, 5});
  CAPTURE(plain.median_ms);
  CHECK(plain.median_ms >= 2.9);
  CHECK(plain.device_wide_repeats == 0);
}

TEST_CASE("a timed launch that sets L2 aside for persisting accesses is refused", "[common][gpu]") {
  KIT_REQUIRE_GPU();
  int device = 0, persisting_max = 0;
  KIT_CUDA_CHECK(cudaGetDevice(&device));
  KIT_CUDA_CHECK(
      cudaDeviceGetAttribute(&persisting_max, cudaDevAttrMaxPersistingL2CacheSize, device));
  if (persisting_max == 0) SKIP("this GPU has no persisting L2 cache to set aside");
  const auto greedy = [persisting_max] {
    KIT_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize,
                                      static_cast<std::size_t>(persisting_max)));
    spin<<<1, 1>>>(1000);
    KIT_CHECK_LAUNCH();
  };
  CHECK_THROWS_WITH(kit::time_on_device(greedy, kit::TimingOptions{1, 3}),
                    ContainsSubstring("persisting"));
  // The limit is put back to 0 by the next timing, which then passes.
  std::size_t limit = 1;
  (void)kit::time_on_device(
      [] {
        spin<<<1, 1>>>(1000);
        KIT_CHECK_LAUNCH();
      },
      kit::TimingOptions{1, 3});
  KIT_CUDA_CHECK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
  CHECK(limit == 0);
}

TEST_CASE("spot checks find a wrong or unwritten element of a product", "[common][gpu]") {
  KIT_REQUIRE_GPU();
  const int rows = 37, inner = 19, cols = 23;
  kit::DeviceBuffer<float> M(static_cast<std::size_t>(rows) * inner);
  kit::DeviceBuffer<float> N(static_cast<std::size_t>(inner) * cols);
  kit::fill_fresh_inputs(M.data(), M.size(), 1);
  kit::fill_fresh_inputs(N.data(), N.size(), 2);
  std::vector<float> hM(M.size()), hN(N.size());
  M.copy_to_host(hM.data());
  N.copy_to_host(hN.data());
  const kit::MatmulReference ref = kit::reference_matmul(hM, hN, rows, inner, cols);
  std::vector<float> hP(ref.value.begin(), ref.value.end());
  kit::DeviceBuffer<float> P(hP.size());
  P.copy_from_host(hP.data());
  // 20000 places among 851 elements: every one is sampled (a miss has odds of e^-23).
  CHECK(kit::spot_check_matmul(M.data(), N.data(), P.data(), rows, inner, cols, 9, 20000).ok());

  hP[5 * cols + 7] += 0.5f;
  P.copy_from_host(hP.data());
  const kit::SpotCheck wrong =
      kit::spot_check_matmul(M.data(), N.data(), P.data(), rows, inner, cols, 9, 20000);
  CHECK(wrong.wrong == 5 * cols + 7);
  CHECK(wrong.unwritten == -1);

  kit::poison(P.data() + 100, 1);
  const kit::SpotCheck unwritten =
      kit::spot_check_matmul(M.data(), N.data(), P.data(), rows, inner, cols, 9, 20000);
  CHECK(unwritten.unwritten == 100);
  CHECK_THAT(kit::describe_spot_check(unwritten, cols, 4, "your kernel"),
             ContainsSubstring("P[4][8] was never written"));
}

TEST_CASE("a wrong timed call is named by its number and the untimed one before it as untimed",
          "[common]") {
  kit::SpotCheck check;
  check.wrong = 2 * 10 + 3;
  check.got = 1.0f;
  check.want = 2.0;
  CHECK_THAT(kit::describe_spot_check(check, 10, 3, "your kernel"),
             ContainsSubstring("timed call 3 of your kernel: P[2][3] is 1, expected 2."));
  const std::string untimed = kit::describe_spot_check(check, 10, -1, "your kernel");
  CHECK_THAT(untimed,
             ContainsSubstring("the untimed call of your kernel before the timing: P[2][3]"));
  CHECK_THAT(untimed, !ContainsSubstring("timed call -1"));
}
