// Lab 04's public tests: results for awkward widths and rectangular shapes, out-of-bounds
// accesses (guard bands and memcheck), shared memory, global loads (Nsight Compute), argument
// checks and speed.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "boundary_matmul.h"
#include "kit/guarded_matmul.hpp"
#include "kit/locality.hpp"
#include "kit/matmul_harness.hpp"
#include "kit/poison.hpp"
#include "kit/sanitizer.hpp"
#include "kit/speed.hpp"
#include "kit/synccheck.hpp"
#include "kit/testing.hpp"
#include "lab04_support.hpp"
#include "reference_launch.hpp"

using Catch::Matchers::ContainsSubstring;
using lab04_tests::Shape;

TEST_CASE("tiled result matches the host reference for widths below and just past the tile",
          "[lab04][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = GENERATE(1, 2, 15, 17, 31, 33);
  lab04_tests::check_square_with_both_tiles(width, 4100 + width);
}

TEST_CASE(
    "tiled result matches the host reference for large widths that are not multiples of the tile",
    "[lab04][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = GENERATE(100, 257, 1000, 1023, 1025);
  lab04_tests::check_square_with_both_tiles(width, 4200 + width);
}

TEST_CASE("tiled result matches the host reference when the width is a multiple of the tile",
          "[lab04][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = GENERATE(32, 64, 1024);
  lab04_tests::check_square_with_both_tiles(width, 4300 + width);
}

TEST_CASE("rectangular result matches the host reference for thin and wide shapes",
          "[lab04][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const Shape s = GENERATE(Shape{1, 1, 1}, Shape{1, 50, 7}, Shape{7, 50, 1}, Shape{17, 33, 5},
                           Shape{100, 1, 100}, Shape{64, 1000, 48}, Shape{33, 17, 1025},
                           Shape{1000, 50, 3}, Shape{257, 300, 31}, Shape{48, 96, 16});
  lab04_tests::check_rect_with_both_tiles(s, 4400 + s.I * 7 + s.J * 3 + s.K);
}

TEST_CASE("host function returns the product of rectangular host matrices",
          "[lab04][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const Shape s = GENERATE(Shape{1, 1, 1}, Shape{45, 70, 20}, Shape{20, 45, 70});
  const kit::MatmulProblem problem = lab04_tests::make_problem(s, 4500 + s.I + s.J + s.K);
  for (int tile : {16, 32}) {
    CAPTURE(s.I, s.J, s.K, tile, problem.seed);
    std::vector<float> P(problem.ref.value.size(), kit::poison_value());
    lab04::rect_matmul(problem.M.data(), problem.N.data(), P.data(), s.I, s.J, s.K, tile);
    KIT_CHECK_MATRIX(kit::compare_matrix(P, problem.ref, kit::Tolerance{}, tile));
  }
}

TEST_CASE("tiled kernels read nothing outside their input matrices", "[lab04][safety][gpu]") {
  KIT_REQUIRE_GPU();
  int judged = 0;  // runs that wrote all of P: only those can show a stray access
  for (const Shape s : lab04_tests::guard_shapes()) {
    const kit::MatmulProblem problem = lab04_tests::make_problem(s, 4600 + s.I + s.J + s.K);
    for (int tile : {16, 32}) {
      for (const auto& [kernel, launch] : lab04_tests::kernels_for(s, tile)) {
        CAPTURE(kernel, s.I, s.J, s.K, tile);
        const kit::GuardedMatmulRun r = kit::run_guarded_matmul(problem, launch);
        if (!kit::fully_written(r.P)) continue;  // the correctness tests say what is missing
        ++judged;
        const long long bad = kit::not_finite(r.P);
        if (bad > 0) {
          FAIL_CHECK(bad << " of " << r.P.size()
                         << " elements of P are NaN or infinite although "
                            "every element of M and N is finite\n"
                            "hint: a load read past the edge of M or N, into the NaN sentinels "
                            "the test puts around them: guard both loads and store 0.0f in the "
                            "tile where the element lies outside the matrix (README section 3).");
        }
      }
    }
  }
  INFO(
      "no kernel wrote all of P in any shape, so nothing was judged: make the correctness tests "
      "pass first.");
  CHECK(judged > 0);
}

TEST_CASE("tiled kernels write nothing outside their output matrix", "[lab04][safety][gpu]") {
  KIT_REQUIRE_GPU();
  int judged = 0;  // runs that wrote all of P: only those can show a stray access
  for (const Shape s : lab04_tests::guard_shapes()) {
    const kit::MatmulProblem problem = lab04_tests::make_problem(s, 4700 + s.I + s.J + s.K);
    for (int tile : {16, 32}) {
      for (const auto& [kernel, launch] : lab04_tests::kernels_for(s, tile)) {
        CAPTURE(kernel, s.I, s.J, s.K, tile);
        const kit::GuardedMatmulRun r = kit::run_guarded_matmul(problem, launch);
        if (!kit::fully_written(r.P)) continue;  // the correctness tests say what is missing
        ++judged;
        if (!r.P_damage.empty()) {
          FAIL_CHECK(r.P_damage << "\nhint: threads outside P stored their Pvalue: guard the "
                                   "store with row < width && col < width (row < I && col < K "
                                   "for the rectangular kernel), after the phase loop "
                                   "(README section 3).");
        }
      }
    }
  }
  INFO(
      "no kernel wrote all of P in any shape, so nothing was judged: make the correctness tests "
      "pass first.");
  CHECK(judged > 0);
}

TEST_CASE("tiled kernels make no out-of-bounds access under memcheck",
          "[lab04][safety][alone][gpu]") {
  KIT_REQUIRE_GPU();
  const std::string tool = kit::require_compute_sanitizer(KIT_CUDA_BIN_DIR, "the memory check");
  const std::string memcheck = "--tool memcheck";
  const std::string probe = KIT_BUILT_PATH(KIT_PROBE_PATH);
  const std::vector<std::string> modes = {"square", "rect"};
  for (const kit::sanitizer::ModesRun& run :
       kit::sanitizer::run_modes(tool, memcheck, probe, modes)) {
    const std::string& mode = run.modes;
    const kit::sanitizer::Run& r = run.run;
    CAPTURE(mode, r.command, r.exit_code);
    if (r.exit_code == 0) continue;
    if (r.exit_code == kit::sanitizer::kWrongResult) {
      FAIL_CHECK("memcheck found no error in the "
                 << mode
                 << " kernel, but it left elements of "
                    "P unwritten, so there was nothing to judge:\n"
                 << kit::sanitizer::tail(r.output, 4)
                 << "hint: make the correctness tests pass first; this test judges only a "
                    "kernel that computes P.");
      continue;
    }
    std::ostringstream out;
    out << "memcheck reports errors in the " << mode << " kernel:\n"
        << kit::sanitizer::lines_with(r.output, {"Invalid", "at ", "Address", "SUMMARY"});
    const bool reads = r.output.find("__global__ read") != std::string::npos;
    const bool writes = r.output.find("__global__ write") != std::string::npos;
    if (reads) {
      out << "hint: a load read outside M or N: guard both loads (the M element exists when "
             "row and ph * TILE_WIDTH + tx are inside M, the N element when ph * TILE_WIDTH + ty "
             "and col are inside N) and store 0.0f otherwise (README section 3).\n";
    }
    if (writes) {
      out << "hint: a store wrote outside P: only threads with row and col inside P may store "
             "(README section 3).\n";
    }
    if (!reads && !writes) {
      // Not a memcheck report: before blaming the kernel, is memcheck usable here at all?
      const std::string why = kit::sanitizer::unusable_reason(tool, memcheck, probe);
      if (!why.empty()) SKIP(why);
      out << "hint: the probe failed (exit code " << r.exit_code << "):\n"
          << kit::sanitizer::tail(r.output);
    }
    FAIL_CHECK(out.str());
  }
}

TEST_CASE("tiled kernels let every thread reach each barrier under synccheck",
          "[lab04][safety][alone][gpu]") {
  KIT_REQUIRE_GPU();
  const std::string tool = kit::require_compute_sanitizer(KIT_CUDA_BIN_DIR, "the barrier check");
  kit::require_only_the_labs_kernels("README section 9");
  // Shapes no multiple of either tile: a barrier inside a guard splits a warp there.
  kit::synccheck::check_barriers_reached(tool, KIT_BUILT_PATH(KIT_PROBE_PATH), {"square", "rect"},
                                         "tiled_matmul_kernel or rect_matmul_kernel",
                                         {"boundary_matmul.cu"}, "README section 3");
}

TEST_CASE("both tiled kernels keep two TILE_WIDTH x TILE_WIDTH float tiles in shared memory",
          "[lab04][resources][gpu]") {
  KIT_REQUIRE_GPU();
  kit::require_only_the_labs_kernels("README section 8");
  for (int tile : {16, 32}) {
    const std::pair<const char*, kit::KernelAttributes> kernels[] = {
        {"tiled_matmul_kernel", lab04_tests::square_kernel_attributes(tile)},
        {"rect_matmul_kernel", lab04_tests::rect_kernel_attributes(tile)}};
    for (const auto& [kernel, a] : kernels) {
      CAPTURE(kernel, tile, a.static_shared_bytes);
      const std::string problem = kit::tile_shared_memory_problem(a.static_shared_bytes, tile, 4);
      if (!problem.empty()) FAIL_CHECK(kernel << "<" << tile << ">: " << problem);
    }
  }
}

TEST_CASE(
    "boundary-checked kernel loads from global memory TILE_WIDTH times less often than the naive "
    "kernel",
    "[lab04][performance][alone][gpu]") {
  KIT_REQUIRE_GPU();
  // As in lab 03: Nsight Compute counts the square kernel's global load instructions at both
  // tile widths, on a width where every guard is true.
  kit::check_tiled_global_loads(KIT_BUILT_PATH(KIT_PROBE_PATH), KIT_CUDA_BIN_DIR,
                                {{16, "loads-16"}, {32, "loads-32"}},
                                {"tiled_matmul_kernel",
                                 "README section 7; lab 03's README, "
                                 "section 10",
                                 "lab04"});
}

TEST_CASE("host functions reject dimensions that are zero or negative", "[lab04][safety]") {
  std::vector<float> M(64), N(64), P(64);
  for (int bad : {0, -1, -100}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(lab04::rect_matmul(M.data(), N.data(), P.data(), bad, 4, 4, 16),
                      ContainsSubstring("I") && ContainsSubstring("at least 1"));
    CHECK_THROWS_WITH(lab04::rect_matmul(M.data(), N.data(), P.data(), 4, bad, 4, 16),
                      ContainsSubstring("J") && ContainsSubstring("at least 1"));
    CHECK_THROWS_WITH(lab04::rect_matmul(M.data(), N.data(), P.data(), 4, 4, bad, 16),
                      ContainsSubstring("K") && ContainsSubstring("at least 1"));
    CHECK_THROWS_WITH(lab04::launch_tiled_matmul(M.data(), N.data(), P.data(), bad, 16),
                      ContainsSubstring("width") && ContainsSubstring("at least 1"));
    CHECK_THROWS_AS(lab04::launch_rect_matmul(M.data(), N.data(), P.data(), 4, bad, 4, 32),
                    std::invalid_argument);
  }
}

TEST_CASE("host functions reject null matrices and tile widths other than 16 and 32",
          "[lab04][safety]") {
  std::vector<float> M(64), N(64), P(64);
  CHECK_THROWS_WITH(lab04::rect_matmul(nullptr, N.data(), P.data(), 8, 8, 8, 16),
                    ContainsSubstring("h_M"));
  CHECK_THROWS_WITH(lab04::rect_matmul(M.data(), nullptr, P.data(), 8, 8, 8, 16),
                    ContainsSubstring("h_N"));
  CHECK_THROWS_WITH(lab04::rect_matmul(M.data(), N.data(), nullptr, 8, 8, 8, 16),
                    ContainsSubstring("h_P"));
  for (int tile : {0, 8, 64}) {
    CAPTURE(tile);
    CHECK_THROWS_WITH(lab04::rect_matmul(M.data(), N.data(), P.data(), 8, 8, 8, tile),
                      ContainsSubstring("tile_width"));
    CHECK_THROWS_WITH(lab04::launch_tiled_matmul(M.data(), N.data(), P.data(), 8, tile),
                      ContainsSubstring("tile_width"));
    CHECK_THROWS_WITH(lab04::launch_rect_matmul(M.data(), N.data(), P.data(), 8, 8, 8, tile),
                      ContainsSubstring("tile_width"));
  }
}

TEST_CASE("boundary-checked kernel speed is close to the reference kernel",
          "[lab04][performance][alone][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = 1000;  // no multiple of either tile: the guards are exercised
  const kit::MatmulProblem problem = kit::make_square_problem(width, 4800);
  for (int tile : {16, 32}) {
    CAPTURE(width, tile);
    KIT_REQUIRE_MATRIX(lab04_tests::check_launch(problem, lab04_tests::square(width, tile), tile));
  }
  // The slower of the two tile widths sets the score.
  kit::SpeedComparison speed("reference kernel");
  for (int tile : {16, 32}) {
    speed.time("TILE_WIDTH " + std::to_string(tile), problem, lab04_tests::square(width, tile),
               lab04_tests::reference_square(width, tile));
  }
  kit::report_speed(speed);
}
