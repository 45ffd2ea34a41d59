// Lab 05's public tests: the bytes a configuration needs, the configuration chosen for made-up
// and real devices, results for every tile width and strip depth, the launch's dynamic shared
// memory (memcheck and Nsight Compute), the path above 48 KB, argument checks, speed and
// global loads.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dynamic_matmul.h"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/guarded_matmul.hpp"
#include "kit/locality.hpp"
#include "kit/matmul_harness.hpp"
#include "kit/poison.hpp"
#include "kit/profiler.hpp"
#include "kit/sanitizer.hpp"
#include "kit/speed.hpp"
#include "kit/synccheck.hpp"
#include "kit/testing.hpp"
#include "lab05_configs.hpp"
#include "lab05_support.hpp"
#include "reference_launch.hpp"

using Catch::Matchers::ContainsSubstring;
using lab05_tests::Shape;

namespace {

std::string describe(const lab05::Config& c) {
  return "tile " + std::to_string(c.tile_width) + ", strip depth " + std::to_string(c.strip_depth) +
         ", " + std::to_string(c.shared_bytes) + " bytes, " + std::to_string(c.blocks_per_sm) +
         " blocks per SM";
}

}  // namespace

TEST_CASE("shared memory size is two float strips of tile width times strip depth in bytes",
          "[lab05][resources]") {
  for (int tile : {8, 16, 32}) {
    for (int depth : {tile, 2 * tile, 4 * tile, 16 * tile}) {
      CAPTURE(tile, depth);
      const std::size_t want = lab05_tests::needed_bytes(tile, depth);
      const std::size_t got = lab05::shared_bytes_for(tile, depth);
      if (got == want) continue;
      std::ostringstream hint;
      if (got * sizeof(float) == want) {
        hint << "hint: " << got << " is the number of floats, not of bytes: the size of dynamic "
             << "shared memory is in bytes, floats times sizeof(float) (README section 3).";
      } else if (got * 2 == want) {
        hint << "hint: " << got << " bytes hold only one of the two strips: Mds and Nds each "
             << "need tile_width * strip_depth floats (README section 3).";
      } else {
        hint << "hint: Mds is tile_width x strip_depth floats and Nds strip_depth x tile_width "
             << "floats, one after the other (README section 3).";
      }
      FAIL_CHECK("shared_bytes_for(" << tile << ", " << depth << ") returned " << got
                                     << "; the two strips need " << want << " bytes\n"
                                     << hint.str());
    }
  }
}

TEST_CASE("the chosen configuration fits every device it is given", "[lab05][concepts]") {
  for (const lab05_tests::FakeDevice& device : lab05_tests::fake_devices()) {
    CAPTURE(device.name);
    const lab05::Config c = lab05::choose_config(
        device.limits, [&](int tile, std::size_t bytes) { return device.occupancy(tile, bytes); });
    CAPTURE(describe(c));
    const bool tile_ok = c.tile_width == 8 || c.tile_width == 16 || c.tile_width == 32;
    if (!tile_ok) {
      FAIL_CHECK("on " << device.name << " the configuration's tile_width is " << c.tile_width
                       << "; it must be 8, 16 or 32\nhint: fill every field of Config "
                          "(README section 7).");
      continue;
    }
    if (c.strip_depth < c.tile_width || c.strip_depth % c.tile_width != 0) {
      FAIL_CHECK("on " << device.name << " the strip depth " << c.strip_depth
                       << " is not a positive multiple of the tile width " << c.tile_width
                       << "\nhint: the strip is whole tiles deep (README section 5).");
    }
    if (c.tile_width * c.tile_width > device.limits.max_threads_per_block) {
      FAIL_CHECK("on " << device.name << " the configuration chose tile " << c.tile_width
                       << ", whose blocks have " << c.tile_width * c.tile_width
                       << " threads; this device allows " << device.limits.max_threads_per_block
                       << " per block\nhint: choose_config must read the limits it is given "
                          "(max_threads_per_block), not assume one device (README section 7).");
    }
    const std::size_t need = lab05_tests::needed_bytes(c.tile_width, c.strip_depth);
    if (need > device.limits.shared_per_block_optin) {
      FAIL_CHECK("on " << device.name << " tile " << c.tile_width << " with strip depth "
                       << c.strip_depth << " needs " << need
                       << " bytes of shared memory per block; this device allows at most "
                       << device.limits.shared_per_block_optin
                       << "\nhint: choose_config must read the limits it is given "
                          "(shared_per_block_optin), not assume one device (README section 7).");
    }
    if (c.shared_bytes != need) {
      FAIL_CHECK("on " << device.name << " Config::shared_bytes is " << c.shared_bytes
                       << " but tile " << c.tile_width << " with strip depth " << c.strip_depth
                       << " needs " << need << " bytes\nhint: README section 3.");
    }
  }
}

TEST_CASE("the chosen configuration follows the occupancy the device reports and says why",
          "[lab05][concepts]") {
  for (const lab05_tests::FakeDevice& device : lab05_tests::fake_devices()) {
    CAPTURE(device.name);
    int queries = 0;
    const lab05::Config c = lab05::choose_config(device.limits, [&](int tile, std::size_t bytes) {
      ++queries;
      return device.occupancy(tile, bytes);
    });
    CAPTURE(describe(c), c.reason);
    if (queries == 0) {
      FAIL_CHECK("choose_config never called the occupancy query it was given on "
                 << device.name
                 << "\nhint: ask `occupancy` how many blocks of each candidate fit on an SM "
                    "(README section 7).");
      continue;
    }
    const int blocks =
        device.occupancy(c.tile_width, lab05_tests::needed_bytes(c.tile_width, c.strip_depth));
    if (blocks < 1) {
      FAIL_CHECK("on " << device.name << " the occupancy query says no block of tile "
                       << c.tile_width << " with strip depth " << c.strip_depth
                       << " can be resident on an SM, yet it was chosen\nhint: skip candidates "
                          "the occupancy query gives 0 blocks (README section 7).");
      continue;
    }
    if (c.blocks_per_sm != blocks) {
      FAIL_CHECK("on " << device.name << " Config::blocks_per_sm is " << c.blocks_per_sm
                       << " but the occupancy query gives " << blocks
                       << " for the chosen configuration\nhint: README section 7.");
    }
    if (c.reason.find(std::to_string(c.tile_width)) == std::string::npos) {
      FAIL_CHECK("on " << device.name << " Config::reason does not name the tile width "
                       << c.tile_width << ": '" << c.reason
                       << "'\nhint: say which limits and numbers led to the choice "
                          "(README section 7).");
    }
  }
}

TEST_CASE("a configuration that needs more than the device has is refused with the numbers",
          "[lab05][safety]") {
  constexpr std::size_t KB = 1024;
  const lab05::DeviceLimits roomy{48 * KB, 100 * KB, 1024};
  // Above 48 KB but within what opting in allows: allowed.
  CHECK_NOTHROW(lab05::check_config(roomy, 32, 256));
  CHECK_NOTHROW(lab05::check_config(roomy, 8, 8));
  // 131072 bytes asked, 102400 allowed: both numbers belong in the message.
  CHECK_THROWS_WITH(lab05::check_config(roomy, 32, 512),
                    ContainsSubstring("131072") && ContainsSubstring("102400"));
  const lab05::DeviceLimits small{48 * KB, 48 * KB, 256};
  CHECK_NOTHROW(lab05::check_config(small, 16, 16));
  CHECK_THROWS_AS(lab05::check_config(small, 32, 32), std::invalid_argument);
  CHECK_THROWS_WITH(lab05::check_config(small, 32, 32), ContainsSubstring("1024"));
}

TEST_CASE("host functions reject bad dimensions tile widths and strip depths", "[lab05][safety]") {
  std::vector<float> M(64), N(64), P(64);
  for (int bad : {0, -1}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(lab05::dynamic_matmul(M.data(), N.data(), P.data(), bad, 4, 4),
                      ContainsSubstring("I") && ContainsSubstring("at least 1"));
    CHECK_THROWS_WITH(lab05::launch_dynamic_matmul(M.data(), N.data(), P.data(), 4, bad, 4, 16, 16),
                      ContainsSubstring("J") && ContainsSubstring("at least 1"));
  }
  CHECK_THROWS_WITH(lab05::dynamic_matmul(nullptr, N.data(), P.data(), 8, 8, 8),
                    ContainsSubstring("h_M"));
  for (int tile : {0, 4, 64}) {
    CAPTURE(tile);
    CHECK_THROWS_WITH(lab05::launch_dynamic_matmul(M.data(), N.data(), P.data(), 8, 8, 8, tile, 64),
                      ContainsSubstring("tile_width"));
  }
  for (int depth : {0, 8, 24}) {
    CAPTURE(depth);
    CHECK_THROWS_WITH(
        lab05::launch_dynamic_matmul(M.data(), N.data(), P.data(), 8, 8, 8, 16, depth),
        ContainsSubstring("strip_depth"));
  }
}

TEST_CASE("result matches the host reference for every tile width with strips one tile deep",
          "[lab05][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const Shape s =
      GENERATE(Shape{1, 1, 1}, Shape{17, 17, 17}, Shape{33, 33, 33}, Shape{100, 100, 100},
               Shape{1, 50, 7}, Shape{7, 50, 1}, Shape{17, 33, 5}, Shape{64, 1000, 48},
               Shape{33, 17, 1025}, Shape{257, 300, 31}, Shape{512, 512, 512});
  lab05_tests::check_shape(s, 5100 + s.I * 7 + s.J * 3 + s.K, {1});
}

TEST_CASE("result matches the host reference with strips deeper than the tile",
          "[lab05][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const Shape s = GENERATE(Shape{1, 1, 1}, Shape{17, 17, 17}, Shape{100, 100, 100}, Shape{1, 50, 7},
                           Shape{17, 33, 5}, Shape{64, 1000, 48}, Shape{33, 130, 65},
                           Shape{257, 300, 31}, Shape{512, 512, 512});
  lab05_tests::check_shape(s, 5200 + s.I * 7 + s.J * 3 + s.K, {2, 3, 4});
}

TEST_CASE("host function returns the product in the configuration it chose for this device",
          "[lab05][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const Shape s =
      GENERATE(Shape{1, 1, 1}, Shape{45, 70, 20}, Shape{20, 45, 70}, Shape{300, 260, 130});
  const kit::MatmulProblem problem = lab05_tests::make_problem(s, 5300 + s.I + s.J + s.K);
  std::vector<float> P(problem.ref.value.size(), kit::poison_value());
  const lab05::Config c =
      lab05::dynamic_matmul(problem.M.data(), problem.N.data(), P.data(), s.I, s.J, s.K);
  CAPTURE(s.I, s.J, s.K, describe(c), c.reason);
  KIT_CHECK_MATRIX(kit::compare_matrix(P, problem.ref, kit::Tolerance{}, c.tile_width));
}

TEST_CASE("device limits and occupancy come from the device at hand", "[lab05][concepts][gpu]") {
  KIT_REQUIRE_GPU();
  int device = 0;
  KIT_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  KIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const lab05::DeviceLimits got = lab05::device_limits();
  CHECK(got.shared_per_block == prop.sharedMemPerBlock);
  CHECK(got.shared_per_block_optin == prop.sharedMemPerBlockOptin);
  CHECK(got.max_threads_per_block == prop.maxThreadsPerBlock);
  for (int tile : {8, 16, 32}) {
    for (int depth : {tile, 4 * tile}) {
      const std::size_t bytes = lab05_tests::needed_bytes(tile, depth);
      CAPTURE(tile, depth, bytes);
      CHECK(lab05::blocks_per_sm(tile, bytes) == lab05_tests::expected_blocks_per_sm(tile, bytes));
    }
  }
  const lab05::Config c = lab05::choose_config();
  CAPTURE(describe(c), c.reason);
  CHECK_NOTHROW(lab05::check_config(got, c.tile_width, c.strip_depth));
}

TEST_CASE("a configuration larger than the device allows is refused before any launch",
          "[lab05][safety][gpu]") {
  KIT_REQUIRE_GPU();
  int device = 0;
  KIT_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  KIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  // The shallowest strip of 32-wide tiles that needs more than the device allows after opting in.
  const int tile = 32;
  const int depth =
      static_cast<int>(prop.sharedMemPerBlockOptin / lab05_tests::needed_bytes(tile, 1) / tile +
                       1) *
      tile;
  CAPTURE(prop.sharedMemPerBlockOptin, tile, depth, lab05_tests::needed_bytes(tile, depth));
  const int width = 64;
  kit::DeviceBuffer<float> d_M(width * width), d_N(width * width), d_P(width * width);
  kit::poison(d_P.data(), d_P.size());
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  bool refused = false;
  try {
    lab05::launch_dynamic_matmul(d_M.data(), d_N.data(), d_P.data(), width, width, width, tile,
                                 depth);
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    FAIL_CHECK("launch_dynamic_matmul accepted tile " << tile << " with strip depth " << depth
                                                      << ", which needs more shared memory than "
                                                         "this device has\nhint: call "
                                                         "check_config before launching "
                                                         "(README section 4).");
  } catch (const std::invalid_argument& e) {
    refused = true;
    UNSCOPED_INFO("refused: " << e.what());
  } catch (const kit::CudaError& e) {
    FAIL_CHECK("a CUDA call failed instead of the configuration being refused before it: "
               << e.what()
               << "\nhint: check the configuration against the device's limits with "
                  "check_config before any CUDA call of the launch (README section 4).");
  }
  // Nothing of the refused configuration may have reached the GPU.
  CHECK(cudaGetLastError() == cudaSuccess);
  if (refused) {
    std::vector<float> P(d_P.size());
    d_P.copy_to_host(P.data());
    INFO("the configuration was refused, but P was written: a kernel ran anyway");
    CHECK(kit::is_poison(P[0]));
  }
}

TEST_CASE("more than 48 KB of dynamic shared memory per block works where the device allows it",
          "[lab05][resources][gpu]") {
  KIT_REQUIRE_GPU();
  int device = 0;
  KIT_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  KIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const std::size_t above = lab05_tests::needed_bytes(32, 256);  // 64 KB
  if (prop.sharedMemPerBlockOptin < above ||
      prop.sharedMemPerBlockOptin <= prop.sharedMemPerBlock) {
    SKIP(prop.name << " allows at most " << prop.sharedMemPerBlockOptin
                   << " bytes of shared memory per block after opting in (sharedMemPerBlock "
                   << prop.sharedMemPerBlock << "), so the path above it (" << above
                   << " bytes) cannot be tried here");
  }
  const Shape s{96, 600, 80};
  const kit::MatmulProblem problem = lab05_tests::make_problem(s, 5500);
  // Below the default limit first: a failure only above it is the opt-in's.
  bool below_ok = false;
  try {
    below_ok = kit::check_matmul(problem, lab05_tests::dynamic(s, 32, 128), 32).ok;
  } catch (const std::exception& e) {
    FAIL_CHECK("tile 32 with strip depth 128 (32768 bytes) failed: " << e.what());
  }
  const struct { int tile, depth; } above_limit[] = {{32, 256}, {16, 512}};
  for (const auto& c : above_limit) {
    CAPTURE(c.tile, c.depth, lab05_tests::needed_bytes(c.tile, c.depth), prop.sharedMemPerBlock);
    try {
      KIT_CHECK_MATRIX(
          kit::check_matmul(problem, lab05_tests::dynamic(s, c.tile, c.depth), c.tile));
    } catch (const kit::CudaError& e) {
      if (below_ok) {
        FAIL_CHECK("the launch failed above sharedMemPerBlock ("
                   << prop.sharedMemPerBlock << " bytes) but worked below it: " << e.what()
                   << "\nhint: above sharedMemPerBlock, raise the kernel's "
                      "cudaFuncAttributeMaxDynamicSharedMemorySize with cudaFuncSetAttribute "
                      "before launching (README section 4).");
      } else {
        FAIL_CHECK("the launch failed: " << e.what()
                                         << "\nhint: make the correctness tests pass first.");
      }
    } catch (const std::invalid_argument& e) {
      FAIL_CHECK("the configuration was refused although the device allows "
                 << prop.sharedMemPerBlockOptin << " bytes after opting in: " << e.what()
                 << "\nhint: compare with sharedMemPerBlockOptin, not sharedMemPerBlock "
                    "(README section 4).");
    }
  }
}

TEST_CASE("dynamic kernel reads and writes nothing outside its matrices", "[lab05][safety][gpu]") {
  KIT_REQUIRE_GPU();
  const std::vector<Shape> shapes = {{1, 1, 1},   {17, 17, 17}, {33, 33, 33}, {100, 100, 100},
                                     {17, 33, 5}, {5, 40, 47},  {33, 17, 100}};
  int judged = 0;  // runs that wrote all of P: only those can show a stray access
  for (const Shape s : shapes) {
    const kit::MatmulProblem problem = lab05_tests::make_problem(s, 5600 + s.I + s.J + s.K);
    for (int tile : {8, 16, 32}) {
      for (int depth : {tile, 2 * tile}) {
        CAPTURE(s.I, s.J, s.K, tile, depth);
        const kit::GuardedMatmulRun r =
            kit::run_guarded_matmul(problem, lab05_tests::dynamic(s, tile, depth));
        if (!kit::fully_written(r.P)) continue;  // the correctness tests say what is missing
        ++judged;
        const long long bad = kit::not_finite(r.P);
        if (bad > 0) {
          FAIL_CHECK(bad << " of " << r.P.size()
                         << " elements of P are NaN or infinite although every element of M "
                            "and N is finite\nhint: a load read past the edge of M or N, into "
                            "the NaN sentinels around them: guard every load of the strip and "
                            "store 0.0f where the element lies outside (README section 5).");
        }
        if (!r.P_damage.empty()) {
          FAIL_CHECK(r.P_damage << "\nhint: threads outside P stored their Pvalue: guard the "
                                   "store with row < I && col < K (lab 04's README, section 3).");
        }
      }
    }
  }
  INFO("no run wrote all of P, so nothing was judged: make the correctness tests pass first.");
  CHECK(judged > 0);
}

TEST_CASE("dynamic kernel makes no out-of-bounds access under memcheck",
          "[lab05][safety][alone][gpu]") {
  KIT_REQUIRE_GPU();
  const std::string tool = kit::require_compute_sanitizer(KIT_CUDA_BIN_DIR, "the memory check");
  const std::string memcheck = "--tool memcheck";
  const std::string probe = KIT_BUILT_PATH(KIT_PROBE_PATH);
  const std::vector<std::string> modes = {"tiles", "strips"};
  for (const kit::sanitizer::ModesRun& run :
       kit::sanitizer::run_modes(tool, memcheck, probe, modes)) {
    const std::string& mode = run.modes;
    const kit::sanitizer::Run& r = run.run;
    CAPTURE(mode, r.command, r.exit_code);
    if (r.exit_code == 0) continue;
    if (r.exit_code == kit::sanitizer::kWrongResult) {
      FAIL_CHECK("memcheck found no error in the probe's "
                 << mode << " runs, but they left elements of P unwritten:\n"
                 << kit::sanitizer::tail(r.output, 4)
                 << "hint: make the correctness tests pass first; this test judges only a "
                    "kernel that computes P.");
      continue;
    }
    std::ostringstream out;
    out << "memcheck reports errors in the probe's " << mode << " runs:\n"
        << kit::sanitizer::lines_with(r.output, {"Invalid", "at ", "Address", "SUMMARY"});
    const bool shared = r.output.find("__shared__") != std::string::npos;
    const bool global = r.output.find("__global__") != std::string::npos;
    if (shared) {
      out << "hint: an access fell outside the dynamic shared memory the launch gave the block: "
             "the launch's third parameter is in bytes and must be shared_bytes_for(tile, "
             "strip_depth), and Mds and Nds must both lie inside it (README section 3).\n";
    }
    if (global) {
      out << "hint: a load or store fell outside M, N or P: guard every load of the strip and "
             "the store (README section 5).\n";
    }
    if (!shared && !global) {
      const std::string why = kit::sanitizer::unusable_reason(tool, memcheck, probe);
      if (!why.empty()) SKIP(why);
      out << "hint: the probe failed (exit code " << r.exit_code << "):\n"
          << kit::sanitizer::tail(r.output);
    }
    FAIL_CHECK(out.str());
  }
}

TEST_CASE("dynamic kernel lets every thread reach each barrier under synccheck",
          "[lab05][safety][alone][gpu]") {
  KIT_REQUIRE_GPU();
  const std::string tool = kit::require_compute_sanitizer(KIT_CUDA_BIN_DIR, "the barrier check");
  kit::require_only_the_labs_kernels("README section 9");
  // Shapes no multiple of any tile: a barrier inside a guard splits a warp there.
  kit::synccheck::check_barriers_reached(tool, KIT_BUILT_PATH(KIT_PROBE_PATH), {"tiles", "strips"},
                                         "dynamic_matmul_kernel", {"dynamic_matmul.cu"},
                                         "README sections 3 and 5");
}

// Both of the lab's counts by Nsight Compute (each launch's dynamic shared memory, the global
// loads) read one run of the probe: the launches first, then the counted trials. Whichever test
// runs first in a judge process makes it, and the other reads it (kit::profiler::profile_shared):
// one start of ncu and one turn as the GPU's profiling process instead of two. A run that does
// not finish cleanly is not shared: each test then runs its own modes alone. Where the kit's load
// counter counts the loads (kit/load_counter.hpp), ncu runs for the launches alone.
const std::string kLaunchBytesMetric = "launch__shared_mem_per_block_dynamic";
const std::vector<kit::LoadCountTrial> kLoadTrials = {{16, "loads-16"}, {32, "loads-32"}};

TEST_CASE("each launch asks for exactly the dynamic shared memory its configuration needs",
          "[lab05][resources][gpu]") {
  KIT_REQUIRE_GPU();
  const std::string ncu = kit::profiler::find_ncu(KIT_CUDA_BIN_DIR);
  if (ncu.empty()) {
    SKIP(
        "Nsight Compute (ncu) was not found; reading each launch's dynamic shared memory "
        "needs it (it comes with the CUDA toolkit)");
  }
  kit::require_only_the_labs_kernels("README section 9");
  const std::string metric = kLaunchBytesMetric;
  const std::string probe = KIT_BUILT_PATH(KIT_PROBE_PATH);
  std::vector<std::string> load_modes;
  for (const kit::LoadCountTrial& trial : kLoadTrials) load_modes.push_back(trial.probe_mode);
  std::size_t first = 0;  // its trial's group: the first, in the shared run and alone
  const kit::profiler::Profile p = kit::profiler::profile_shared(
      ncu, metric, probe, "sizes", {{}, load_modes, {kit::profiler::kGlobalLoads}}, first);
  CAPTURE(p.run.command, p.run.exit_code);
  if (p.permission_denied()) {
    SKIP("Nsight Compute may not profile on this machine (ERR_NVGPUCTRPERM)");
  }
  const std::vector<lab05_tests::TileDepth> launches = lab05_tests::sized_launches();
  // Only the lab's kernel is judged: the launcher may run none of another name (checked above),
  // but may run the kit's own beside it.
  std::vector<kit::profiler::KernelCount> kernels;
  // A run of "sizes" alone has no marker: its one group is every kernel.
  const std::vector<std::vector<kit::profiler::KernelCount>> trials = p.trials();
  for (const kit::profiler::KernelCount& k :
       first < trials.size() ? trials[first] : std::vector<kit::profiler::KernelCount>{}) {
    if (k.kernel.find("dynamic_matmul_kernel") != std::string::npos) kernels.push_back(k);
  }
  if (kernels.size() != launches.size()) {
    if (p.kernels.empty()) {
      const std::string why = kit::profiler::unusable_reason(ncu, metric, probe);
      if (!why.empty()) SKIP(why);
    }
    FAIL("the probe launched " << launches.size() << " configurations; Nsight Compute saw "
                               << kernels.size() << " launches of dynamic_matmul_kernel:\n"
                               << p.explanation()
                               << "hint: launch_dynamic_matmul must launch dynamic_matmul_kernel "
                                  "exactly once per call; the correctness tests show whether it "
                                  "runs.");
  }
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const lab05_tests::TileDepth& c = launches[i];
    const double want = static_cast<double>(lab05_tests::needed_bytes(c.tile, c.depth));
    const double got = kernels[i].value;
    CAPTURE(c.tile, c.depth, want, got);
    if (got == want) continue;
    std::ostringstream hint;
    if (got * sizeof(float) == want) {
      hint << "hint: the launch passed the number of floats; its third parameter is in bytes "
              "(README section 3).";
    } else if (got < want) {
      hint << "hint: the launch gave the block less than Mds and Nds need together: pass "
              "shared_bytes_for(tile, strip_depth) as the launch's third parameter "
              "(README section 3).";
    } else {
      hint << "hint: the launch gave the block more shared memory than Mds and Nds need, which "
              "costs resident blocks: pass exactly shared_bytes_for(tile, strip_depth) "
              "(README sections 3 and 7).";
    }
    FAIL_CHECK("tile " << c.tile << " with strip depth " << c.depth << " was launched with " << got
                       << " bytes of dynamic shared memory; it needs " << want << "\n"
                       << hint.str());
  }
}

TEST_CASE("dynamic kernel keeps its tiles in dynamic shared memory only",
          "[lab05][resources][gpu]") {
  KIT_REQUIRE_GPU();
  kit::require_only_the_labs_kernels("README section 9");
  // Static tiles are told first: beside the dynamic buffer they may be why no launch works.
  bool static_tiles = false;
  for (int tile : {8, 16, 32}) {
    const kit::KernelAttributes a = lab05_tests::kernel_attributes(tile);
    CAPTURE(tile, a.static_shared_bytes);
    if (a.static_shared_bytes != 0) {
      static_tiles = true;
      FAIL_CHECK("dynamic_matmul_kernel<" << tile << "> declares " << a.static_shared_bytes
                                          << " bytes of static shared memory\nhint: the tiles "
                                             "are carved from the one extern __shared__ buffer, "
                                             "sized at launch (README section 3).");
    }
  }
  if (static_tiles) return;
  // An empty kernel has no static shared memory either: pass only a kernel that computes P.
  const Shape s{17, 40, 23};
  const kit::MatmulProblem problem = lab05_tests::make_problem(s, 5700);
  for (int tile : {8, 16, 32}) {
    if (!kit::check_matmul(problem, lab05_tests::dynamic(s, tile, 2 * tile), tile).ok) {
      FAIL("tile " << tile
                   << " with strips two tiles deep does not compute P, so where its tiles "
                      "live was not judged\nhint: make the correctness tests pass first.");
    }
  }
}

TEST_CASE("dynamic kernel speed is close to the reference kernel",
          "[lab05][performance][alone][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = 1000;  // no multiple of any tile: the guards are exercised
  const Shape s{width, width, width};
  const kit::MatmulProblem problem = kit::make_square_problem(width, 5800);
  const struct { int tile, depth; } configs[] = {{16, 16}, {16, 64}, {32, 64}};
  for (const auto& c : configs) {
    CAPTURE(width, c.tile, c.depth);
    KIT_REQUIRE_MATRIX(
        kit::check_matmul(problem, lab05_tests::dynamic(s, c.tile, c.depth), c.tile));
  }
  // The slowest configuration sets the score.
  kit::SpeedComparison speed("reference kernel");
  for (const auto& c : configs) {
    speed.time("tile " + std::to_string(c.tile) + ", strip depth " + std::to_string(c.depth),
               problem, lab05_tests::dynamic(s, c.tile, c.depth),
               lab05_tests::reference_square(width, c.tile, c.depth));
  }
  kit::report_speed(speed);
}

TEST_CASE(
    "dynamic kernel loads from global memory TILE_WIDTH times less often than the naive kernel",
    "[lab05][performance][gpu]") {
  KIT_REQUIRE_GPU();
  // As in labs 03 and 04, with strips deeper than the tile: each thread still loads one element
  // of M and one of N per tile of the strip, so the count is a tiled kernel's.
  kit::check_tiled_global_loads(KIT_BUILT_PATH(KIT_PROBE_PATH), KIT_CUDA_BIN_DIR, kLoadTrials,
                                {"dynamic_matmul_kernel",
                                 "README section 8; lab 03's README, "
                                 "section 10",
                                 "lab05", lab05_tests::kCountedStripDepth},
                                {{"sizes"}, {}, {kLaunchBytesMetric}});
}
