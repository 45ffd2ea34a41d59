#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <stdexcept>
#include <string>

#include "fake_gate.hpp"
#include "kit/cublas_matmul.hpp"
#include "kit/matmul_harness.hpp"
#include "kit/speed.hpp"
#include "kit/testing.hpp"

using Catch::Matchers::ContainsSubstring;

namespace {

kit::TimeRatio measured(double candidate_ms, double baseline_ms) {
  kit::TimeRatio r;
  r.candidate.median_ms = candidate_ms;
  r.candidate.repeats = 21;
  r.baseline.median_ms = baseline_ms;
  r.baseline.repeats = 21;
  r.median_ratio = candidate_ms / baseline_ms;
  return r;
}

}  // namespace

TEST_CASE("speed comparison scores the slowest trial against the reference", "[common]") {
  kit::SpeedComparison speed("reference tiled kernel");
  speed.record("TILE_WIDTH 16", measured(3.0, 2.0), 1024, true);
  speed.record("TILE_WIDTH 32", measured(2.0, 2.0), 1024, true);
  CHECK(speed.graded());
  CHECK(speed.metric_name() == "time_ratio");
  CHECK(speed.worst_ratio() == 1.5);
  const std::string report = speed.report();
  CHECK_THAT(report,
             ContainsSubstring("TILE_WIDTH 16: your kernel 3 ms, reference tiled kernel 2 ms") &&
                 ContainsSubstring("median of 21 runs each, width 1024") &&
                 ContainsSubstring("your time over its time: 1.5") &&
                 ContainsSubstring("TILE_WIDTH 32"));
}

TEST_CASE("speed comparison against cuBLAS is shown under a metric no rubric grades", "[common]") {
  kit::SpeedComparison speed("reference kernel");
  speed.record("16 x 16 blocks", measured(6.0, 1.0), 1000, false);
  CHECK_FALSE(speed.graded());
  CHECK(speed.metric_name() == "time_ratio_vs_cublas");
  CHECK(speed.worst_ratio() == 6.0);
  CHECK_THAT(speed.report(), ContainsSubstring("6x the time of cuBLAS (6 ms vs 1 ms, width 1000)"));
}

TEST_CASE("speed comparison refuses a missing or unmeasured trial", "[common]") {
  kit::SpeedComparison speed("reference kernel");
  CHECK_FALSE(speed.graded());
  CHECK_THROWS_WITH(speed.worst_ratio(), ContainsSubstring("no trial was timed"));
  CHECK_THROWS_WITH(speed.record("t", measured(1.0, 0.0), 64, true),
                    ContainsSubstring("'t'") && ContainsSubstring("not positive"));
  const kit::MatmulProblem rectangular = kit::make_matmul_problem(4, 8, 4, 1);
  const kit::MatmulLaunch never = [](const float*, const float*, float*) {
    FAIL("a rectangular problem must be refused before anything is launched");
  };
  CHECK_THROWS_WITH(speed.time("t", rectangular, never, {}), ContainsSubstring("square"));
}

TEST_CASE("the cuBLAS yardstick multiplies right and times against a kernel on the device",
          "[common][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = 96;
  const kit::MatmulProblem problem = kit::make_square_problem(width, 31);
  kit::CublasMatmul cublas;  // opened at run time: this is where a missing cuBLAS would show
  const kit::MatmulLaunch launch = [&cublas, width](const float* M, const float* N, float* P) {
    cublas(M, N, P, width);
  };
  const kit::Comparison cmp = kit::check_matmul(problem, launch);
  INFO(cmp.report);
  CHECK(cmp.ok);
  kit::SpeedComparison speed("reference kernel");
  speed.time("cuBLAS against itself", problem, launch, kit::MatmulLaunch{});
  CHECK(speed.metric_name() == "time_ratio_vs_cublas");
  CHECK(speed.worst_ratio() > 0.5);  // the same kernel twice: about 1
  CHECK(speed.worst_ratio() < 2.0);
}

TEST_CASE("a speed comparison makes a call of each side before it asks for the GPU alone",
          "[common][gpu]") {
  KIT_REQUIRE_GPU();
  // A side's first call starts its worker and makes contexts, which under the grader took seconds
  // while other processes started on the node; made inside the window, it kept the GPU emptied.
  constexpr int width = 64;
  const kit::MatmulProblem problem = kit::make_square_problem(width, 7);
  kit::CublasMatmul cublas;
  kit_tests::FakeGate gate;
  gate.grant_once();
  gate.grant_once();  // a second window, wrongly asked for, is then seen below instead of hanging
  std::string log;    // per call: what the gate was asked since the last call, then the side
  const auto side = [&](char name) -> kit::MatmulLaunch {
    return [&, name](const float* M, const float* N, float* P) {
      log += gate.asked();
      log += name;
      cublas(M, N, P, width);
    };
  };
  {
    kit::SpeedComparison speed("reference kernel");
    speed.time("first", problem, side('c'), side('r'));
    speed.time("second", problem, side('c'), side('r'));
  }
  log += gate.asked();
  CAPTURE(log);
  CHECK(log.rfind("rcA", 0) == 0);         // the reference, the candidate, then the window
  CHECK(log.find('A') == log.rfind('A'));  // one window for both trials
  CHECK(log.back() == 'R');
}
