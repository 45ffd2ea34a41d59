// Lab 06's public tests, all on the CPU: the article's exercises, each allocation rule, the
// toolkit's own calculator on thousands of random configurations, the best block size, bad
// input, and the written answers' format.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "calls.hpp"
#include "device_presets.h"
#include "kit/answers.hpp"
#include "lab06_questions.hpp"
#include "lab06_support.hpp"
#include "occupancy.h"

using Catch::Matchers::ContainsSubstring;
using lab06::DeviceLimits;
using lab06::KernelUsage;
using lab06::Occupancy;
using lab06_tests::describe;
using lab06_tests::diagnose;

namespace {

// Every field of `want`, written out by hand from README section 4's rules.
struct Expected {
  int warps_per_block, registers_per_block, shared_memory_per_block;
  int blocks_by_warps, blocks_by_registers, blocks_by_shared_memory, blocks_by_sm_limit;
  int active_blocks;
  unsigned limited_by;
};

Occupancy make_occupancy(const DeviceLimits& d, const Expected& e) {
  Occupancy o;
  o.warps_per_block = e.warps_per_block;
  o.registers_per_block = e.registers_per_block;
  o.shared_memory_per_block = e.shared_memory_per_block;
  o.blocks_by_warps = e.blocks_by_warps;
  o.blocks_by_registers = e.blocks_by_registers;
  o.blocks_by_shared_memory = e.blocks_by_shared_memory;
  o.blocks_by_sm_limit = e.blocks_by_sm_limit;
  o.active_blocks = e.active_blocks;
  o.active_warps = e.active_blocks * e.warps_per_block;
  o.occupancy = static_cast<double>(o.active_warps) / d.max_warps_per_sm();
  o.limited_by = e.limited_by;
  return o;
}

// One configuration whose every field is known: fails with the diagnosis when one of `fields`
// differs. A test of one rule compares only that rule's fields, on inputs where the other
// rules do not bind, so that it fails only for a mistake in its own rule.
void check_case(const char* cc, const KernelUsage& k, const Expected& e,
                unsigned fields = lab06_tests::kAllFields) {
  const DeviceLimits& d = lab06::device_preset(cc);
  const std::string report = diagnose(d, k, lab06::occupancy(d, k), make_occupancy(d, e), fields);
  if (report.empty()) {
    SUCCEED(describe(d, k));
  } else {
    FAIL_CHECK(report);
  }
}

constexpr unsigned kWarps = lab06::kLimitWarps;
constexpr unsigned kRegs = lab06::kLimitRegisters;
constexpr unsigned kShared = lab06::kLimitSharedMemory;
constexpr unsigned kBlocks = lab06::kLimitBlocks;
constexpr int kNone = lab06::kUnlimited;
constexpr unsigned kWarpFields = lab06_tests::kWarpFields;
constexpr unsigned kRegisterFields = lab06_tests::kRegisterFields;
constexpr unsigned kSharedFields = lab06_tests::kSharedMemoryFields;
constexpr unsigned kAnswerFields = lab06_tests::kAnswerFields;

// The random comparisons show this many mismatches in all, each with its own diagnosis; the
// count says how many more there were.
constexpr int kMismatchesShown = 3;

// The largest value v in [lo, hi] for which full() holds of your occupancy() of the kernel
// usage(v) on d, or lo - 1 when none does. Every value is asked, in one call to your code
// (lab06::occupancy_of_each): a call each took seconds for a range of 48 KB.
template <typename Usage, typename Full>
int largest_where(const DeviceLimits& d, int lo, int hi, Usage usage, Full full) {
  std::vector<KernelUsage> kernels;
  for (int v = lo; v <= hi; ++v) kernels.push_back(usage(v));
  const std::vector<Occupancy> answers = lab06::occupancy_of_each(d, kernels);
  int best = lo - 1;
  for (int v = lo; v <= hi; ++v) {
    if (full(answers[static_cast<std::size_t>(v - lo)])) best = v;
  }
  return best;
}

}  // namespace

TEST_CASE("16x16 blocks fill an SM at compute capability 1.3 and 2.0 and 3.0",
          "[lab06][correctness]") {
  struct Case {
    const char* cc;
    int blocks;
  };
  const Case c = GENERATE(values<Case>({{"1.3", 4}, {"2.0", 6}, {"3.0", 8}}));
  const DeviceLimits& d = lab06::device_preset(c.cc);
  const KernelUsage k{256, 10, 0};  // Q2: registers and shared memory within the limits
  // Checked on the warp rule's fields and the answer: registers and shared memory are far
  // from binding here, so that only a mistake in the warp slots or the answer fails this.
  const Occupancy o = lab06::occupancy(d, k);
  Occupancy want = o;
  want.warps_per_block = 8;
  want.blocks_by_warps = c.blocks;
  want.active_blocks = c.blocks;
  want.active_warps = d.max_warps_per_sm();
  want.occupancy = 1.0;
  const std::string report = diagnose(d, k, o, want,
                                      lab06_tests::kWarpFields | lab06_tests::kActiveBlocks |
                                          lab06_tests::kActiveWarps | lab06_tests::kOccupancy);
  if (!report.empty()) {
    FAIL_CHECK(report << "hint: 256 threads are 8 warps; the SM has " << d.max_warps_per_sm()
                      << " warp slots and room for " << d.max_blocks_per_sm
                      << " blocks, so 16x16 blocks fill every warp slot (README 5, Q2).");
  }
  CHECK(report.empty());
}

TEST_CASE("the most shared memory per block that keeps 100 percent occupancy matches the article",
          "[lab06][correctness]") {
  struct Case {
    const char* cc;
    int bytes;
  };
  const Case c = GENERATE(values<Case>({{"1.3", 4096}, {"2.0", 8192}, {"3.0", 6144}}));
  const DeviceLimits& d = lab06::device_preset(c.cc);
  // 256-thread blocks fill the SM with this many blocks (Q2). The question is how much shared
  // memory each may have so that shared memory still holds them all: asked of your
  // blocks_by_shared_memory alone, so that only the shared memory rule decides it.
  const int blocks = d.max_warps_per_sm() / 8;
  const int most = largest_where(
      d, 0, d.max_shared_memory_per_block,
      [](int bytes) {
        return KernelUsage{256, 0, bytes};
      },
      [&](const Occupancy& o) { return o.blocks_by_shared_memory >= blocks; });
  CAPTURE(c.cc, blocks, most, c.bytes);
  INFO("hint: 256-thread blocks fill the SM with "
       << blocks << " blocks, which share its " << d.shared_memory_per_sm
       << " bytes: by your blocks_by_shared_memory, the most a block may have so that " << blocks
       << " fit is " << most << " bytes, and it is " << c.bytes
       << "; one byte more rounds up to a whole " << d.shared_memory_allocation_unit
       << "-byte unit and leaves room for fewer blocks (README 4.3, Q3).");
  CHECK(most == c.bytes);
}

TEST_CASE("the calculator reproduces the spreadsheet screenshot at compute capability 3.5",
          "[lab06][correctness]") {
  // The article's screenshot: 256 threads, 32 registers, 4096 bytes -> 8 blocks, 64 warps.
  check_case("3.5", {256, 32, 4096}, {8, 8192, 4096, 8, 8, 12, 16, 8, kWarps | kRegs});
}

TEST_CASE("registers are allocated per warp in units of the allocation size",
          "[lab06][correctness]") {
  // Whole warps only (a multiple of 32 threads), and only the register fields compared.
  SECTION("33 registers take 1280 per warp on an H100") {
    check_case("9.0", {128, 33, 0}, {4, 5120, 1024, 16, 12, 228, 32, 12, kRegs}, kRegisterFields);
  }
  SECTION("21 registers take 704 per warp at compute capability 2.0") {
    check_case("2.0", {256, 21, 0}, {8, 5632, 0, 6, 5, kNone, 8, 5, kRegs}, kRegisterFields);
  }
  SECTION("warps that fit in the register file come in pairs at compute capability 2.0") {
    // 25 registers: 832 per warp, 39 warps fit, rounded down to 38: 12 blocks of 3 warps.
    check_case("2.0", {96, 25, 0}, {3, 2496, 0, 16, 12, kNone, 8, 8, kBlocks}, kRegisterFields);
  }
  SECTION("warps that fit in the register file come in fours at compute capability 3.0") {
    // 36 registers: 1280 per warp, 51 warps fit, rounded down to 48: 9 blocks of 5 warps.
    check_case("3.0", {160, 36, 0}, {5, 6400, 0, 12, 9, kNone, 16, 9, kRegs}, kRegisterFields);
  }
  SECTION("a block that needs more than the register file cannot launch") {
    check_case("9.0", {1024, 72, 0}, {32, 73728, 1024, 2, 0, 228, 32, 0, kRegs}, kRegisterFields);
  }
  SECTION("a kernel without registers is not limited by them") {
    check_case("8.0", {256, 0, 0}, {8, 0, 1024, 8, kNone, 164, 32, 8, kWarps}, kRegisterFields);
  }
}

TEST_CASE("compute capability 1.3 allocates registers per block", "[lab06][correctness]") {
  SECTION("32 registers for 256 threads: 8192 per block and 2 blocks as the article says") {
    check_case("1.3", {256, 32, 0}, {8, 8192, 0, 4, 2, kNone, 8, 2, kRegs}, kRegisterFields);
  }
  SECTION("5 warps round up to 6 before the block's registers round up to 512") {
    check_case("1.3", {160, 25, 0}, {5, 5120, 0, 6, 3, kNone, 8, 3, kRegs}, kRegisterFields);
  }
  SECTION("17 registers for 256 threads round up to 4608 per block") {
    check_case("1.3", {256, 17, 0}, {8, 4608, 0, 4, 3, kNone, 8, 3, kRegs}, kRegisterFields);
  }
}

TEST_CASE("a block that needs more registers than one block may use cannot launch",
          "[lab06][correctness]") {
  // A register file larger than one block may use, as on the Tesla K80 (131072 registers per
  // SM, 65536 per block): on every preset the two are equal, so only such a device tells a
  // calculator that checks max_registers_per_block from one that does not.
  DeviceLimits d = lab06::device_preset("9.0");
  d.name = "the H100's limits with a K80's register file (131072 per SM, 65536 per block)";
  d.registers_per_sm = 131072;
  const Occupancy fits = lab06::occupancy(d, {1024, 64, 0});  // 32 warps x 2048 = 65536
  const Occupancy over = lab06::occupancy(d, {1024, 72, 0});  // 32 warps x 2304 = 73728
  CAPTURE(d.name, fits.registers_per_block, fits.blocks_by_registers, over.registers_per_block,
          over.blocks_by_registers, over.active_blocks);
  CHECK(fits.blocks_by_registers == 2);
  if (over.registers_per_block == 73728 && over.blocks_by_registers > 0) {
    FAIL_CHECK("1024 threads with 72 registers each: "
               << over.blocks_by_registers
               << " blocks by registers, 0 expected\nhint: a block of 73728 registers is more "
                  "than max_registers_per_block (65536): it cannot launch, so "
                  "blocks_by_registers is 0 whatever the SM's register file holds (README 4.2).");
  } else {
    CHECK(over.blocks_by_registers == 0);
  }
  CHECK(over.active_blocks == 0);
}

TEST_CASE("shared memory is allocated in whole units including the reserved bytes",
          "[lab06][correctness]") {
  SECTION("9830 bytes round up to 9984 at compute capability 3.0") {
    check_case("3.0", {256, 0, 9830}, {8, 0, 9984, 8, kNone, 4, 16, 4, kShared}, kSharedFields);
  }
  SECTION("32257 bytes and 1024 reserved round up to 33408 on an H100") {
    check_case("9.0", {64, 0, 32257}, {2, 0, 33408, 32, kNone, 6, 32, 6, kShared}, kSharedFields);
  }
  SECTION("10241 bytes and 1024 reserved round up to 11392 at compute capability 8.6") {
    check_case("8.6", {64, 0, 10241}, {2, 0, 11392, 24, kNone, 8, 16, 8, kShared}, kSharedFields);
  }
  SECTION("a block without shared memory still takes the reserved 1024 bytes") {
    check_case("8.6", {32, 0, 0}, {1, 0, 1024, 48, kNone, 100, 16, 16, kBlocks}, kSharedFields);
  }
  SECTION("all 16 KB in one block leaves one block and 25 percent at compute capability 1.3") {
    check_case("1.3", {256, 0, 16384}, {8, 0, 16384, 4, kNone, 1, 8, 1, kShared}, kSharedFields);
  }
}

TEST_CASE("a partial warp occupies a whole warp slot", "[lab06][correctness]") {
  SECTION("48 threads are 2 warps") {
    check_case("9.0", {48, 0, 0}, {2, 0, 1024, 32, kNone, 228, 32, 32, kWarps | kBlocks},
               kWarpFields);
  }
  SECTION("700 threads are 22 warps and only 2 such blocks fit") {
    check_case("9.0", {700, 0, 0}, {22, 0, 1024, 2, kNone, 228, 32, 2, kWarps}, kWarpFields);
  }
  SECTION("100 threads with registers are 4 warps at compute capability 3.0") {
    check_case("3.0", {100, 20, 0}, {4, 3072, 0, 16, 21, kNone, 16, 16, kWarps | kBlocks},
               kWarpFields);
  }
}

TEST_CASE("the SM block limit caps small blocks", "[lab06][correctness]") {
  SECTION("32-thread blocks on an H100 stop at 32 blocks and half occupancy") {
    check_case("9.0", {32, 16, 0}, {1, 512, 1024, 64, 128, 228, 32, 32, kBlocks}, kAnswerFields);
  }
  SECTION("64-thread blocks at compute capability 3.0 stop at 16 blocks") {
    check_case("3.0", {64, 0, 0}, {2, 0, 0, 32, kNone, kNone, 16, 16, kBlocks}, kAnswerFields);
  }
  SECTION("32-thread blocks on a T4 stop at 16 blocks") {
    check_case("7.5", {32, 0, 0}, {1, 0, 0, 32, kNone, kNone, 16, 16, kBlocks}, kAnswerFields);
  }
}

TEST_CASE("the limiting resource is reported for each kind of limit", "[lab06][correctness]") {
  // Judged on your own four limits and your own active_blocks, so that a mistake in one of
  // the limits fails that limit's test, not this one: limited_by must have the bit of every
  // limit of yours that equals your answer. Each configuration makes one kind of limit bind
  // (the last two make two tie).
  struct Case {
    const char* what;
    const char* cc;
    KernelUsage kernel;
  };
  const Case c = GENERATE(values<Case>({{"warps", "9.0", {1024, 0, 0}},
                                        {"registers", "9.0", {256, 128, 0}},
                                        {"shared memory", "9.0", {64, 0, 49152}},
                                        {"blocks", "9.0", {32, 8, 0}},
                                        {"a tie of warps and registers", "9.0", {256, 32, 0}},
                                        {"a tie of warps and blocks", "3.0", {128, 0, 0}}}));
  const DeviceLimits& d = lab06::device_preset(c.cc);
  const Occupancy o = lab06::occupancy(d, c.kernel);
  const unsigned want = lab06_tests::limits_equal_to_answer(o);
  CAPTURE(c.what, o.blocks_by_warps, o.blocks_by_registers, o.blocks_by_sm_limit,
          o.blocks_by_shared_memory, o.active_blocks);
  if (o.limited_by == want) {
    SUCCEED(describe(d, c.kernel));
    return;
  }
  FAIL_CHECK("for " << describe(d, c.kernel) << ": your limited_by is "
                    << lab06::limit_names(o.limited_by) << ", but the limits of yours equal to "
                    << "your active_blocks (" << o.active_blocks << ") are "
                    << lab06::limit_names(want)
                    << "\nhint: limited_by needs the Limit bit of every limit equal to "
                       "active_blocks; a tie sets several bits (README 4.4).");
}

TEST_CASE(
    "the calculator agrees with cuda_occupancy.h on random configurations for every modern preset",
    "[lab06][correctness]") {
  const std::vector<DeviceLimits> presets = lab06::toolkit_presets();
  int mismatches = 0, configurations = 0;
  for (size_t p = 0; p < presets.size(); ++p) {
    const DeviceLimits& d = presets[p];
    const unsigned seed = 6000 + static_cast<unsigned>(p);
    std::mt19937 rng(seed);
    const auto uniform = [&](int lo, int hi) {
      return std::uniform_int_distribution<int>(lo, hi)(rng);
    };
    const int trials = 2000;
    std::vector<KernelUsage> kernels;
    for (int t = 0; t < trials; ++t) {
      KernelUsage k;
      k.threads_per_block = uniform(0, 1)
                                ? d.warp_size * uniform(1, d.max_threads_per_block / d.warp_size)
                                : uniform(1, d.max_threads_per_block);
      const int r = uniform(0, 9);
      k.registers_per_thread = r == 0
                                   ? 0
                                   : uniform(1, r <= 7 ? std::min(128, d.max_registers_per_thread)
                                                       : d.max_registers_per_thread);
      const int s = uniform(0, 9);
      k.shared_memory_per_block =
          s <= 1 ? 0 : uniform(0, s <= 6 ? 16384 : d.max_shared_memory_per_block);
      kernels.push_back(k);
    }
    const std::vector<Occupancy> yours = lab06::occupancy_of_each(d, kernels);  // one call
    for (int t = 0; t < trials; ++t) {
      const KernelUsage& k = kernels[static_cast<std::size_t>(t)];
      ++configurations;
      const std::string report =
          diagnose(d, k, yours[static_cast<std::size_t>(t)], lab06_tests::toolkit_occupancy(d, k));
      if (report.empty()) continue;
      if (++mismatches <= kMismatchesShown) {
        FAIL_CHECK("configuration " << t << " of preset " << d.name << " (seed " << seed
                                    << ") differs from cudaOccMaxActiveBlocksPerMultiprocessor "
                                    << report);
      }
    }
  }
  CAPTURE(configurations, mismatches, kMismatchesShown);
  CHECK(mismatches == 0);
}

TEST_CASE("best block size matches cudaOccMaxPotentialOccupancyBlockSize on every modern preset",
          "[lab06][correctness]") {
  std::mt19937 rng(6100);
  const auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  int mismatches = 0;
  for (const DeviceLimits& d : lab06::toolkit_presets()) {
    for (int t = 0; t < 60; ++t) {
      const int regs =
          t % 6 == 0 ? 0 : uniform(1, std::min(d.max_registers_per_thread, t % 3 ? 64 : 255));
      const int shared = t % 4 == 0 ? 0 : uniform(0, t % 5 ? 12288 : d.max_shared_memory_per_block);
      const lab06::BlockSizeChoice mine = lab06::best_block_size(d, regs, shared);
      const lab06_tests::ToolkitBlockSize want =
          lab06_tests::toolkit_best_block_size(d, regs, shared);
      if (mine.threads_per_block == want.threads_per_block &&
          mine.min_grid_size == want.min_grid_size) {
        continue;
      }
      if (++mismatches > kMismatchesShown) continue;
      const Occupancy at_mine =
          lab06::occupancy(d, {std::max(mine.threads_per_block, 1), regs, shared});
      const Occupancy at_want = lab06::occupancy(d, {want.threads_per_block, regs, shared});
      // Your occupancy() at the two block sizes, against the toolkit's: where they differ,
      // the search is not what went wrong.
      const auto toolkit_warps = [&](int threads) {
        return lab06_tests::toolkit_occupancy(d, {threads, regs, shared}).active_warps;
      };
      const bool differs_at_want = at_want.active_warps != toolkit_warps(want.threads_per_block);
      const int differing_size =
          differs_at_want || mine.threads_per_block <= 0 ||
                  mine.threads_per_block > d.max_threads_per_block ||
                  at_mine.active_warps == toolkit_warps(mine.threads_per_block)
              ? want.threads_per_block
              : mine.threads_per_block;
      const Occupancy& at_differing = differing_size == want.threads_per_block ? at_want : at_mine;
      std::string hint = lab06_tests::search_mistake(d, regs, shared, mine.threads_per_block);
      if (!hint.empty()) {
        // The search's own mistake, proven by the student's occupancy().
      } else if (at_differing.active_warps != toolkit_warps(differing_size)) {
        hint = "hint: at " + std::to_string(differing_size) +
               " threads per block your occupancy() keeps " +
               std::to_string(at_differing.active_warps) + " warps resident and cuda_occupancy.h " +
               std::to_string(toolkit_warps(differing_size)) +
               ": the best block size follows from occupancy(), so fix the difference that "
               "the test on random configurations shows first (README 4 and 6).";
      } else if (mine.threads_per_block == want.threads_per_block) {
        hint =
            "hint: the block size is right but min_grid_size is not: it is active_blocks x "
            "multiprocessors (README 6).";
      } else {
        hint =
            "hint: try every multiple of the warp size from warp_size to "
            "max_threads_per_block and keep the one with the most active warps; if your "
            "occupancy() fails other tests, fix it first (README 6).";
      }
      FAIL_CHECK("on " << d.name << " with " << regs << " registers per thread and " << shared
                       << " bytes of shared memory per block: yours " << mine.threads_per_block
                       << " threads per block (min grid " << mine.min_grid_size
                       << "), cudaOccMaxPotentialOccupancyBlockSize " << want.threads_per_block
                       << " (min grid " << want.min_grid_size << ")\n"
                       << hint);
    }
  }
  CAPTURE(mismatches);
  CHECK(mismatches == 0);
}

TEST_CASE("best block size is the largest block size with the most active warps",
          "[lab06][correctness]") {
  struct Usage {
    int registers, shared;
  };
  const std::vector<Usage> usages = {{0, 0}, {16, 0}, {32, 2048}, {40, 6000}, {63, 12000}};
  int mismatches = 0, cases = 0;
  for (const char* cc : {"1.3", "2.0", "3.0", "7.5", "8.6", "9.0"}) {
    const DeviceLimits& d = lab06::device_preset(cc);
    for (const Usage& u : usages) {
      ++cases;
      // The answer by brute force over your own occupancy(), so that this test checks only
      // the search: the largest block size among those with the most active warps.
      int best_threads = 0, best_warps = 0;
      for (int threads = d.warp_size; threads <= d.max_threads_per_block; threads += d.warp_size) {
        const int warps = lab06::occupancy(d, {threads, u.registers, u.shared}).active_warps;
        if (warps > 0 && warps >= best_warps) {
          best_threads = threads;
          best_warps = warps;
        }
      }
      if (best_threads == 0) {
        FAIL("your occupancy() keeps no warp resident at any block size on "
             << d.name
             << "\nhint: finish occupancy() (steps 1 to 4) first; this test then checks "
                "best_block_size's search against it (README 6).");
      }
      const lab06::BlockSizeChoice mine = lab06::best_block_size(d, u.registers, u.shared);
      const Occupancy o = lab06::occupancy(d, {best_threads, u.registers, u.shared});
      const bool block_size_ok =
          mine.threads_per_block == best_threads && mine.active_warps == best_warps;
      const bool fields_ok = mine.active_blocks == o.active_blocks &&
                             std::abs(mine.occupancy - o.occupancy) < 1e-9 &&
                             mine.min_grid_size == o.active_blocks * d.multiprocessors;
      if (block_size_ok && fields_ok) continue;
      if (++mismatches > kMismatchesShown) continue;
      std::string hint =
          lab06_tests::search_mistake(d, u.registers, u.shared, mine.threads_per_block);
      if (!hint.empty()) {
        // The search's own mistake, proven by the student's occupancy().
      } else if (block_size_ok) {
        hint =
            "hint: fill every field of the choice from occupancy() at the chosen block size; "
            "min_grid_size is active_blocks x multiprocessors (README 6).";
      } else {
        hint = "hint: by your own occupancy(), " + std::to_string(best_threads) +
               " threads per block keep " + std::to_string(best_warps) +
               " warps resident, the most of any multiple of the warp size, and no larger "
               "block keeps as many (README 6).";
      }
      FAIL_CHECK("on " << d.name << " with " << u.registers << " registers per thread and "
                       << u.shared << " bytes of shared memory per block: yours "
                       << mine.threads_per_block << " threads per block (" << mine.active_warps
                       << " warps, " << mine.active_blocks << " blocks, min grid "
                       << mine.min_grid_size << "), by your occupancy() " << best_threads << " ("
                       << best_warps << " warps, " << o.active_blocks << " blocks, min grid "
                       << o.active_blocks * d.multiprocessors << ")\n"
                       << hint);
    }
  }
  CAPTURE(cases, mismatches, kMismatchesShown);
  CHECK(mismatches == 0);
}

TEST_CASE(
    "the H100 runs 8 tiled blocks per SM at TILE 16 and 2 at TILE 32 because of its thread limit",
    "[lab06][correctness]") {
  const DeviceLimits& h100 = lab06::device_preset("9.0");
  // Lab 03's tiled kernel as ptxas builds it for sm_90: 32 registers per thread, two tiles of
  // floats in static shared memory (2 KB at TILE 16, 8 KB at TILE 32).
  struct Case {
    int tile, blocks;
  };
  const Case c = GENERATE(values<Case>({{16, 8}, {32, 2}}));
  const int threads = c.tile * c.tile;
  const int shared = 2 * c.tile * c.tile * static_cast<int>(sizeof(float));
  const Occupancy o = lab06::occupancy(h100, {threads, 32, shared});
  CAPTURE(c.tile, threads, shared, o.active_blocks, o.blocks_by_warps, o.blocks_by_registers,
          o.blocks_by_shared_memory, o.blocks_by_sm_limit, lab06::limit_names(o.limited_by));
  INFO("hint: " << threads << " threads are " << threads / 32 << " warps and the H100 has 64 "
                << "warp slots per SM; shared memory (" << shared
                << " bytes + 1024 reserved) and the "
                << "32-block cap allow more blocks than that (README 5.4).");
  // Which limit binds is read from the limits themselves, not from limited_by, which the
  // test on the limiting resource checks.
  CHECK(o.active_blocks == c.blocks);
  CHECK(o.blocks_by_warps == c.blocks);
  CHECK(o.blocks_by_shared_memory > c.blocks);
  CHECK(o.blocks_by_sm_limit > c.blocks);
  // The thread limit alone decides it: without registers the answer is the same.
  const Occupancy no_registers = lab06::occupancy(h100, {threads, 0, shared});
  CHECK(no_registers.active_blocks == c.blocks);
  CHECK(no_registers.blocks_by_registers > c.blocks);
}

TEST_CASE("calculator rejects a block size of zero or above the device maximum",
          "[lab06][safety]") {
  const DeviceLimits& d = lab06::device_preset("9.0");
  const int threads = GENERATE(0, -32, 1025, 4096);
  CAPTURE(threads);
  CHECK_THROWS_AS(lab06::occupancy(d, {threads, 32, 0}), std::invalid_argument);
  CHECK_THROWS_WITH(
      lab06::occupancy(d, {threads, 32, 0}),
      ContainsSubstring("lab06::occupancy") && ContainsSubstring("threads_per_block"));
  // 1.3 allows only 512 threads per block.
  CHECK_THROWS_WITH(lab06::occupancy(lab06::device_preset("1.3"), {513, 0, 0}),
                    ContainsSubstring("threads_per_block") && ContainsSubstring("512"));
}

TEST_CASE("calculator rejects negative or too many registers and too much shared memory",
          "[lab06][safety]") {
  const DeviceLimits& d = lab06::device_preset("9.0");
  CHECK_THROWS_WITH(lab06::occupancy(d, {256, -1, 0}), ContainsSubstring("registers_per_thread"));
  CHECK_THROWS_WITH(lab06::occupancy(d, {256, 256, 0}), ContainsSubstring("registers_per_thread"));
  CHECK_THROWS_WITH(lab06::occupancy(lab06::device_preset("3.0"), {256, 64, 0}),
                    ContainsSubstring("registers_per_thread") && ContainsSubstring("63"));
  CHECK_THROWS_WITH(lab06::occupancy(d, {256, 32, -4}),
                    ContainsSubstring("shared_memory_per_block"));
  CHECK_THROWS_WITH(lab06::occupancy(d, {256, 32, d.max_shared_memory_per_block + 1}),
                    ContainsSubstring("shared_memory_per_block"));
  CHECK_THROWS_WITH(
      lab06::best_block_size(d, 300, 0),
      ContainsSubstring("lab06::best_block_size") && ContainsSubstring("registers_per_thread"));
  CHECK_THROWS_WITH(lab06::best_block_size(d, 32, -1),
                    ContainsSubstring("shared_memory_per_block"));
  // The largest legal values are accepted.
  CHECK_NOTHROW(lab06::occupancy(d, {1024, 0, d.max_shared_memory_per_block}));
  CHECK_NOTHROW(lab06::occupancy(d, {32, 255, 0}));
}

TEST_CASE("calculator rejects a device with impossible limits", "[lab06][safety]") {
  DeviceLimits broken = lab06::device_preset("8.0");
  SECTION("warp size zero") {
    broken.warp_size = 0;
    CHECK_THROWS_WITH(lab06::occupancy(broken, {256, 32, 0}), ContainsSubstring("warp_size"));
  }
  SECTION("no shared memory allocation unit") {
    broken.shared_memory_allocation_unit = 0;
    CHECK_THROWS_WITH(lab06::occupancy(broken, {256, 32, 0}),
                      ContainsSubstring("shared_memory_allocation_unit"));
  }
  SECTION("no register allocation unit") {
    broken.register_allocation_unit = 0;
    CHECK_THROWS_WITH(lab06::best_block_size(broken, 32, 0),
                      ContainsSubstring("register_allocation_unit"));
  }
}

TEST_CASE("answers.toml has an answer of the right kind for every question", "[lab06][concepts]") {
  INFO(
      "hint: answers.toml holds your answers to the questions of README section 7: a number "
      "(4, 6144) or a word in double quotes (\"no\") after each = sign.");
  kit::answers::File sheet;
  try {
    sheet = kit::answers::load(KIT_BUILT_PATH(KIT_ANSWERS_PATH));
  } catch (const kit::answers::FormatError& error) {
    FAIL(error.what());
  }
  int problems = 0;
  for (const kit::answers::Question& q : lab06_tests::questions()) {
    const std::string problem = kit::answers::form_problem(sheet, q);
    if (problem.empty()) continue;
    ++problems;
    FAIL_CHECK(sheet.path << ": " << problem);
  }
  CHECK(problems == 0);
}
