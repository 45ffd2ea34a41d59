// Lab 03's hidden checks of answers.toml: are the answers to README section 11 right?
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <string>

#include "kit/answers_test.hpp"
#include "lab03_questions.hpp"

namespace {

kit::answers::File load_answers() {
  return kit::answers::load_or_fail(KIT_BUILT_PATH(KIT_ANSWERS_PATH),
                                    "the public test 'answers file is complete and well formed' "
                                    "says how to fix the file.");
}

// Fails (and goes on) unless the question is answered with a number within rel of `right`;
// the message never gives the right answer away.
void check_number(const kit::answers::File& file, const char* key, double right, double rel,
                  const char* where) {
  const kit::answers::Question& q = lab03_tests::question(key);
  const std::string problem = kit::answers::form_problem(file, q);
  if (!problem.empty()) {
    FAIL_CHECK(problem);
    return;
  }
  const double got = kit::answers::number_of(file, q);
  if (std::fabs(got - right) > rel * std::fabs(right)) {
    FAIL_CHECK("question " << q.number << " (" << key << "): " << got
                           << " is not right\nhint: " << where);
  }
}

void check_choice(const kit::answers::File& file, const char* key, char right, const char* where) {
  const kit::answers::Question& q = lab03_tests::question(key);
  const std::string problem = kit::answers::form_problem(file, q);
  if (!problem.empty()) {
    FAIL_CHECK(problem);
    return;
  }
  if (kit::answers::choice_of(file, q) != right) {
    FAIL_CHECK("question " << q.number << " (" << key << "): \"" << kit::answers::choice_of(file, q)
                           << "\" is not right\nhint: " << where);
  }
}

}  // namespace

TEST_CASE("answers about memory traffic and shared memory are right", "[lab03][concepts]") {
  const kit::answers::File file = load_answers();
  check_number(file, "naive_flop_per_byte", 0.25, 1e-3,
               "count the FLOPs and the bytes loaded in one step of the naive inner loop "
               "(README section 2).");
  check_number(file, "tiled_flop_per_byte_tile16", 4.0, 1e-3,
               "each element loaded into a tile is used TILE_WIDTH times (README section 2).");
  check_number(file, "tiled_flop_per_byte_tile32", 8.0, 1e-3,
               "each element loaded into a tile is used TILE_WIDTH times (README section 2).");
  check_number(file, "shared_bytes_per_block_tile16", 2048, 1e-6,
               "two tiles of TILE_WIDTH x TILE_WIDTH floats, 4 bytes each (README section 8).");
  check_number(file, "shared_bytes_per_block_tile32", 8192, 1e-6,
               "two tiles of TILE_WIDTH x TILE_WIDTH floats, 4 bytes each (README section 8).");
  check_number(file, "global_loads_per_thread_width2048_tile16", 256, 1e-6,
               "a thread loads one element of M and one of N per phase (README sections 2 and 5).");
}

TEST_CASE("answers about barriers phases and measured speed are right", "[lab03][concepts]") {
  const kit::answers::File file = load_answers();
  check_number(file, "phases_width1024_tile32", 32, 1e-6,
               "one phase per tile along a row of M (README section 5).");
  check_number(file, "first_racing_block_width", 8, 1e-6,
               "a warp is 32 threads; count the threads of a block (README section 3).");
  check_choice(file, "first_barrier_hazard", 'a',
               "what would the inner product read without it? (README section 6)");
  check_choice(file, "second_barrier_hazard", 'b',
               "what would the next phase's loads overwrite without it? (README section 6)");
  check_choice(file, "speedup_reason", 'c', "README sections 9 and 10.");
  check_number(file, "load_ratio_naive_to_tile32", 32, 0.02,
               "the load instructions counted in README section 10, or your own prediction.");
  check_number(file, "dram_ratio_naive_to_tile16", 1.0, 0.1,
               "the DRAM bytes counted in README section 10.");
}
