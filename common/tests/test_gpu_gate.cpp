// kit::ExclusiveGpu against a stand-in for the grader's gate (grader/confine/gate.py): two pipes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "fake_gate.hpp"
#include "kit/gpu_gate.hpp"

using Catch::Matchers::ContainsSubstring;

TEST_CASE("outside the grader holding the GPU asks nothing and waits for nothing", "[common]") {
  unsetenv("KIT_GPU_GATE");
  const kit::ExclusiveGpu alone;
  SUCCEED("no gate, no wait");
}

TEST_CASE("a measurement asks the grader's gate once for nested holds and gives it back",
          "[common]") {
  kit_tests::FakeGate gate;
  gate.grant_once();
  {
    const kit::ExclusiveGpu outer;
    CHECK(gate.asked() == "A");
    {
      const kit::ExclusiveGpu inner;  // the timer inside a speed comparison's window
      CHECK(gate.asked().empty());
    }
    CHECK(gate.asked().empty());
  }
  CHECK(gate.asked() == "R");
  gate.grant_once();
  { const kit::ExclusiveGpu again; }
  CHECK(gate.asked() == "AR");
}

TEST_CASE("a count of Nsight Compute asks only to be the GPU's one profiling process", "[common]") {
  kit_tests::FakeGate gate;
  gate.grant_once();
  { const kit::ExclusiveGpu profiling(kit::GpuUse::profiling); }
  CHECK(gate.asked() == "PR");
}

TEST_CASE("a gate that closes without granting is a kit problem and not a measurement",
          "[common]") {
  kit_tests::FakeGate gate;
  gate.close_grant();
  CHECK_THROWS_WITH(kit::ExclusiveGpu(), ContainsSubstring("kit problem") &&
                                             ContainsSubstring("did not give this test the GPU"));
}

TEST_CASE("a malformed KIT_GPU_GATE names the variable and who sets it", "[common]") {
  setenv("KIT_GPU_GATE", "3;4", 1);
  CHECK_THROWS_WITH(kit::ExclusiveGpu(), ContainsSubstring("KIT_GPU_GATE is '3;4'") &&
                                             ContainsSubstring("grader sets it"));
  unsetenv("KIT_GPU_GATE");
}

TEST_CASE("between test cases a judge asks the gate to go on but not while it holds the GPU",
          "[common]") {
  kit_tests::FakeGate gate;
  gate.grant_once();
  kit::between_test_cases();
  CHECK(gate.asked() == "C");
  gate.grant_once();
  {
    const kit::ExclusiveGpu alone;
    kit::between_test_cases();  // inside a hold: nothing asked, nothing waited for
    CHECK(gate.asked() == "A");
  }
  CHECK(gate.asked() == "R");
  unsetenv("KIT_GPU_GATE");
  kit::between_test_cases();  // outside the grader: nothing asked
}

TEST_CASE("a gate that closes before letting the next case start is a kit problem", "[common]") {
  kit_tests::FakeGate gate;
  gate.close_grant();
  CHECK_THROWS_WITH(
      kit::between_test_cases(),
      ContainsSubstring("kit problem") && ContainsSubstring("did not let this test start"));
}

namespace {

struct Ended {
  int exit_code = -1;  // -1: killed, or still running at the deadline
  double seconds = 0.0;
  std::string said;  // its standard error
};

// Runs `body` in a child process with KIT_PROFILING_HOLD_LIMIT_S=1 and no gate, and waits for it
// at most `deadline_s`: the watch ends the process, so it is tried in one of its own.
template <typename Body>
Ended in_child(Body body, double deadline_s) {
  int err[2];
  REQUIRE(pipe(err) == 0);
  const auto start = std::chrono::steady_clock::now();
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    dup2(err[1], 2);
    close(err[0]);
    unsetenv("KIT_GPU_GATE");
    setenv("KIT_PROFILING_HOLD_LIMIT_S", "1", 1);
    try {
      body();
    } catch (...) {
      std::_Exit(99);  // never the rest of the test run, in a copy of it
    }
    std::_Exit(0);
  }
  close(err[1]);
  Ended ended;
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - start > std::chrono::duration<double>(deadline_s)) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      status = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ended.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (status != -1 && WIFEXITED(status)) ended.exit_code = WEXITSTATUS(status);
  char buffer[1024];
  for (ssize_t n; (n = read(err[0], buffer, sizeof buffer)) > 0;) ended.said.append(buffer, n);
  close(err[0]);
  return ended;
}

}  // namespace

TEST_CASE("a profiled run that holds the GPU past its limit ends itself and says why", "[common]") {
  const Ended ended = in_child(
      [] {
        const kit::ExclusiveGpu profiling(kit::GpuUse::profiling);
        std::this_thread::sleep_for(std::chrono::seconds(10));  // a kernel that never ends
      },
      8.0);
  CAPTURE(ended.said, ended.seconds);
  CHECK(ended.exit_code == kit::kProfiledTooLong);
  CHECK(ended.seconds < 5.0);
  CHECK_THAT(ended.said, ContainsSubstring("had not finished 1 s after") &&
                             ContainsSubstring("holds up every other process"));
}

TEST_CASE("a profiled run that gives the GPU back in time runs on undisturbed", "[common]") {
  const Ended ended = in_child(
      [] {
        {
          const kit::ExclusiveGpu profiling(kit::GpuUse::profiling);
          const kit::ExclusiveGpu nested(kit::GpuUse::profiling);  // only the outermost watches
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the limit, not held
        const kit::ExclusiveGpu alone;                                 // a window is not watched
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      },
      8.0);
  CAPTURE(ended.said);
  CHECK(ended.exit_code == 0);
  CHECK(ended.seconds > 3.0);
  CHECK(ended.said.empty());
}
