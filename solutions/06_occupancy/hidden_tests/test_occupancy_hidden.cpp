// Lab 06's hidden tests: the article's Q4 and Q5 on the calculator, the reference calculator
// on random configurations of every preset (1.3 and 2.0 included), and the written answers.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "calls.hpp"
#include "device_presets.h"
#include "kit/answers.hpp"
#include "lab06_questions.hpp"
#include "lab06_support.hpp"
#include "occupancy.h"
#include "reference_bridge.hpp"

using lab06::DeviceLimits;
using lab06::KernelUsage;
using lab06::Occupancy;

namespace {

Occupancy from(const lab06_tests::ReferenceOccupancy& r) {
  Occupancy o;
  o.warps_per_block = r.warps_per_block;
  o.registers_per_block = r.registers_per_block;
  o.shared_memory_per_block = r.shared_memory_per_block;
  o.blocks_by_warps = r.blocks_by_warps;
  o.blocks_by_registers = r.blocks_by_registers;
  o.blocks_by_shared_memory = r.blocks_by_shared_memory;
  o.blocks_by_sm_limit = r.blocks_by_sm_limit;
  o.active_blocks = r.active_blocks;
  o.active_warps = r.active_warps;
  o.occupancy = r.occupancy;
  o.limited_by = r.limited_by;
  return o;
}

std::string preset_name(const DeviceLimits& d) {
  return std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
}

// The reference's answers for every kernel, in one call to its worker.
std::vector<Occupancy> reference_of_each(const DeviceLimits& d,
                                         const std::vector<KernelUsage>& kernels) {
  std::vector<lab06_tests::ReferenceKernel> asked;
  for (const KernelUsage& k : kernels) {
    asked.push_back({k.threads_per_block, k.registers_per_thread, k.shared_memory_per_block});
  }
  std::vector<Occupancy> answers;
  for (const auto& r : lab06_tests::reference_occupancy_of_each(preset_name(d), asked)) {
    answers.push_back(from(r));
  }
  return answers;
}

// The sheet, or a failed test that says what is wrong with the file.
kit::answers::File answers() {
  try {
    return kit::answers::load(KIT_BUILT_PATH(KIT_ANSWERS_PATH));
  } catch (const kit::answers::FormatError& error) {
    FAIL(error.what() << "\nhint: fix the file first: the visible test on answers.toml's format "
                         "says the same.");
  }
  return {};
}

// Checks one numeric answer; the hint explains the method, never the number.
void check_number(const kit::answers::File& sheet, const char* key, double expected,
                  const std::string& hint) {
  const kit::answers::Question& question = lab06_tests::question(key);
  const std::string problem = kit::answers::form_problem(sheet, question);
  if (!problem.empty()) {
    FAIL_CHECK(problem);
    return;
  }
  const double got = kit::answers::number_of(sheet, question);
  if (std::abs(got - expected) < 1e-9) {
    SUCCEED(key);
    return;
  }
  FAIL_CHECK(key << " = " << got << " is not right\nhint: " << hint);
}

void check_text(const kit::answers::File& sheet, const char* key,
                const std::vector<std::string>& accepted, const std::string& hint) {
  const kit::answers::Question& question = lab06_tests::question(key);
  const std::string problem = kit::answers::form_problem(sheet, question);
  if (!problem.empty()) {
    FAIL_CHECK(problem);
    return;
  }
  const std::string got = kit::answers::text_of(sheet, question);
  for (const std::string& a : accepted) {
    if (got == a) {
      SUCCEED(key);
      return;
    }
  }
  FAIL_CHECK(key << " = \"" << got << "\" is not right\nhint: " << hint);
}

}  // namespace

TEST_CASE("the calculator answers Q4 on 1024-thread blocks at compute capability 3.0",
          "[lab06][correctness]") {
  // Two questions, each asked of its own rule's fields, each with its own hint.
  const DeviceLimits& d = lab06::device_preset("3.0");
  const Occupancy o = lab06::occupancy(d, {1024, 0, 0});
  CAPTURE(o.warps_per_block, o.blocks_by_warps, o.active_blocks, o.active_warps, o.occupancy);
  if (o.active_blocks != 2 || std::abs(o.occupancy - 1.0) > 1e-9) {
    FAIL_CHECK("1024-thread blocks at compute capability 3.0: yours "
               << o.active_blocks << " blocks and occupancy " << o.occupancy
               << ", expected 2 and 1\nhint: 1024 threads are 32 warps and the SM has 64 warp "
                  "slots (README 5, Q4).");
  }
  // The most bytes for which your blocks_by_shared_memory still holds the 2 blocks.
  // Every size asked in one call to your code (lab06::occupancy_of_each).
  std::vector<KernelUsage> kernels;
  for (int bytes = 0; bytes <= d.max_shared_memory_per_block; ++bytes) {
    kernels.push_back({1024, 0, bytes});
  }
  const std::vector<Occupancy> answers = lab06::occupancy_of_each(d, kernels);
  int most = -1;
  for (int bytes = 0; bytes <= d.max_shared_memory_per_block; ++bytes) {
    if (answers[static_cast<std::size_t>(bytes)].blocks_by_shared_memory >= 2) most = bytes;
  }
  CAPTURE(most);
  if (most != 24576) {
    FAIL_CHECK("by your blocks_by_shared_memory, two 1024-thread blocks fit with at most "
               << most
               << " bytes each\nhint: two resident blocks share the SM's 49152 bytes "
                  "(README 4.3, Q4).");
  }
}

TEST_CASE("registers per thread for full occupancy follow each architecture's allocation rules",
          "[lab06][correctness]") {
  struct Case {
    const char* cc;
    int threads, registers;
    const char* rule;
  };
  const Case c = GENERATE(values<Case>({
      {"1.3", 256, 16, "per block: the block's warps round up to 2, its registers to 512"},
      {"2.0", 256, 20, "per warp: a warp's registers round up to 64"},
      {"3.0", 256, 32, "per warp: a warp's registers round up to 256, warps that fit to 4"},
      {"3.0", 1024, 32, "per warp: a warp's registers round up to 256, warps that fit to 4"},
  }));
  const DeviceLimits& d = lab06::device_preset(c.cc);
  // Asked of your blocks_by_registers alone: the most registers for which the register file
  // still holds the blocks that fill the SM's warp slots.
  const int blocks = d.max_warps_per_sm() / (c.threads / d.warp_size);
  int most = -1;
  for (int regs = 0; regs <= d.max_registers_per_thread; ++regs) {
    if (lab06::occupancy(d, {c.threads, regs, 0}).blocks_by_registers >= blocks) most = regs;
  }
  CAPTURE(c.cc, c.threads, blocks, most);
  INFO("hint: at compute capability "
       << c.cc << " registers are allocated " << c.rule
       << "; registers must be allocated in units, so a count just above the answer costs a "
          "whole unit more (README 4.2, Q5).");
  CHECK(most == c.registers);
}

TEST_CASE(
    "the calculator agrees with the reference calculator on random configurations for every preset",
    "[lab06][correctness]") {
  int mismatches = 0;
  for (const DeviceLimits& d : lab06::device_presets()) {
    std::mt19937 rng(66000 + static_cast<unsigned>(d.cc_major * 10 + d.cc_minor));
    const auto uniform = [&](int lo, int hi) {
      return std::uniform_int_distribution<int>(lo, hi)(rng);
    };
    std::vector<KernelUsage> kernels;
    for (int t = 0; t < 1500; ++t) {
      kernels.push_back({uniform(1, d.max_threads_per_block),
                         t % 7 == 0 ? 0 : uniform(1, d.max_registers_per_thread),
                         t % 5 == 0 ? 0 : uniform(0, d.max_shared_memory_per_block)});
    }
    const std::vector<Occupancy> yours = lab06::occupancy_of_each(d, kernels);  // one call
    const std::vector<Occupancy> right = reference_of_each(d, kernels);         // one call
    for (std::size_t t = 0; t < kernels.size(); ++t) {
      const KernelUsage& k = kernels[t];
      const std::string report = lab06_tests::diagnose(d, k, yours[t], right[t]);
      if (report.empty()) continue;
      if (++mismatches <= 3) FAIL_CHECK(report);
    }
  }
  CAPTURE(mismatches);
  CHECK(mismatches == 0);
}

TEST_CASE("written answer to Q1 says whether matrix addition gains from shared memory",
          "[lab06][concepts]") {
  const auto sheet = answers();
  check_text(sheet, "q1.benefits_from_shared_memory", {"no"},
             "shared memory pays off when threads of a block read the same element; count how "
             "many threads read each input element of a matrix addition (README 7, Q1).");
  check_number(sheet, "q1.reads_per_input_element", 1,
               "count the global reads of one element of A over the whole kernel (README 7, Q1).");
}

TEST_CASE("written answers to Q2 give the blocks and occupancy of 16x16 blocks",
          "[lab06][concepts]") {
  const auto sheet = answers();
  const std::string why =
      "256 threads are 8 warps; divide the SM's warp slots by 8 and check "
      "the block limit (README 5, Q2).";
  check_number(sheet, "q2.cc13_blocks_per_sm", 4, why);
  check_number(sheet, "q2.cc20_blocks_per_sm", 6, why);
  check_number(sheet, "q2.cc30_blocks_per_sm", 8, why);
  const std::string percent = "occupancy in percent is 100 x active warps / the SM's warp slots.";
  check_number(sheet, "q2.cc13_occupancy_percent", 100, percent);
  check_number(sheet, "q2.cc20_occupancy_percent", 100, percent);
  check_number(sheet, "q2.cc30_occupancy_percent", 100, percent);
}

TEST_CASE(
    "written answers to Q3 give the most shared memory per 256-thread block at full occupancy",
    "[lab06][concepts]") {
  const auto sheet = answers();
  const std::string why =
      "the blocks of Q2 share the SM's shared memory; give each its equal "
      "share and check it is a whole number of allocation units (README 5, Q3).";
  check_number(sheet, "q3.cc13_max_shared_bytes", 4096, why);
  check_number(sheet, "q3.cc20_max_shared_bytes", 8192, why);
  check_number(sheet, "q3.cc30_max_shared_bytes", 6144, why);
}

TEST_CASE("written answers to Q4 give the blocks and shared memory of 1024-thread blocks",
          "[lab06][concepts]") {
  const auto sheet = answers();
  const std::string why =
      "1024 threads are 32 warps; count the blocks that fit in 64 warp "
      "slots, then share the SM's shared memory among them (README 5, Q4).";
  check_number(sheet, "q4.blocks_per_sm", 2, why);
  check_number(sheet, "q4.occupancy_percent", 100, why);
  check_number(sheet, "q4.max_shared_bytes", 24576, why);
}

TEST_CASE("written answers to Q5 give the most registers per thread at full occupancy",
          "[lab06][concepts]") {
  const auto sheet = answers();
  const std::string why =
      "the register file must hold every resident warp; round a warp's (or "
      "at 1.3 a block's) registers up to the allocation unit before "
      "dividing, or sweep the count with your calculator (README 4.2, Q5).";
  check_number(sheet, "q5.cc13_max_registers", 16, why);
  check_number(sheet, "q5.cc20_max_registers", 20, why);
  check_number(sheet, "q5.cc30_max_registers", 32, why);
  check_number(sheet, "q5.cc30_1024_max_registers", 32, why);
}

TEST_CASE("written answers to Q6 explain the tiled kernel's blocks per SM on an H100",
          "[lab06][concepts]") {
  const auto sheet = answers();
  const std::string why =
      "run the calculator on the 9.0 preset with the tiled kernel's threads, "
      "registers and shared memory (README 5.4, Q6).";
  check_number(sheet, "q6.tile16_blocks_per_sm", 8, why);
  check_number(sheet, "q6.tile32_blocks_per_sm", 2, why);
  check_text(sheet, "q6.tile32_limited_by", {"warps", "threads"},
             "which limit still gives 2 blocks when the kernel uses no registers and no shared "
             "memory? (README 5.4, Q6)");
}
