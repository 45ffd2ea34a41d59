// kit::ExclusiveGpu against a stand-in for the grader's gate (grader/confine/gate.py): two pipes.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string>

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
