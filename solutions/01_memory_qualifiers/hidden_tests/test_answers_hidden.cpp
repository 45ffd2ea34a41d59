// Lab 01's hidden checks of answers.toml: are the answers to README section 8 right? The copy
// counts of every launch come from one set of rules (expected_counts), so a launch added to
// lab01_questions.hpp is checked without new numbers here.
#include <catch2/catch_test_macros.hpp>
#include <string>

#include "kit/answers_test.hpp"
#include "lab01_questions.hpp"

namespace {

kit::answers::File load_answers() {
  return kit::answers::load_or_fail(KIT_BUILT_PATH(KIT_ANSWERS_PATH),
                                    "the public test 'answers file is complete and well formed' "
                                    "says how to fix the file.");
}

// Fails (and goes on) unless the question is answered with exactly `right`; the message never
// gives the right answer away.
void check_number(const kit::answers::File& file, const std::string& key, double right,
                  const std::string& where) {
  const kit::answers::Question& q = lab01_tests::question(key);
  const std::string problem = kit::answers::form_problem(file, q);
  if (!problem.empty()) {
    FAIL_CHECK(problem);
    return;
  }
  const double got = kit::answers::number_of(file, q);
  if (got != right) {
    FAIL_CHECK(kit::answers::name_of(q) << ": " << got << " is not right\nhint: " << where);
  }
}

void check_choice(const kit::answers::File& file, const char* key, char right, const char* where) {
  const kit::answers::Question& q = lab01_tests::question(key);
  const std::string problem = kit::answers::form_problem(file, q);
  if (!problem.empty()) {
    FAIL_CHECK(problem);
    return;
  }
  if (kit::answers::choice_of(file, q) != right) {
    FAIL_CHECK(kit::answers::name_of(q)
               << ": \"" << kit::answers::choice_of(file, q) << "\" is not right\nhint: " << where);
  }
}

// The rules of README section 2 for foo_kernel<B> launched as (N + B - 1) / B blocks of B.
struct Counts {
  long long i, x, y_s, b_s, coefficients, launches, shared_bytes;
};

Counts expected_counts(long long n, long long b) {
  const long long blocks = (n + b - 1) / b;
  const long long threads = blocks * b;  // the last block is launched whole
  return {threads, threads, blocks, blocks, 1, 1, static_cast<long long>(sizeof(float)) * (1 + b)};
}

}  // namespace

TEST_CASE("answers about where each variable lives and for how long are right",
          "[lab01][concepts]") {
  const kit::answers::File file = load_answers();
  const char* table = "the table of README section 2.";
  check_choice(file, "memory_of_i", 'a', table);
  check_choice(file, "memory_of_x_by_the_table", 'b', table);
  check_choice(file, "memory_of_x_as_compiled", 'a',
               "README section 6: what happens to an array whose indices are all known after "
               "unrolling?");
  check_choice(file, "memory_of_y_s", 'c', table);
  check_choice(file, "memory_of_b_s", 'c', table);
  check_choice(file, "memory_of_coefficients", 'e', table);
  check_choice(file, "memory_of_launches", 'd', table);
  check_choice(file, "scope_of_b_s", 'b', table);
  check_choice(file, "lifetime_of_b_s", 'a', table);
  check_choice(file, "lifetime_of_launches", 'b', table);
  check_choice(file, "constant_broadcast_when", 'a', "README section 3.");
  check_number(file, "local_bytes_per_thread", 32,
               "kBins counts of 4 bytes each; README section 6 says how to read it from the "
               "compiler.");
  check_choice(file, "why_local_memory", 'a', "README section 6.");
}

TEST_CASE("copy counts are right for launches the public tests do not check", "[lab01][concepts]") {
  const kit::answers::File file = load_answers();
  for (const lab01_tests::Launch& launch : lab01_tests::launches()) {
    if (launch.n == 1024 && launch.b == 128) continue;  // checked by the public test
    const Counts want = expected_counts(launch.n, launch.b);
    const std::string t = std::string(launch.table) + ".";
    const std::string threads =
        "one per thread, and a launch runs whole blocks: count the threads of (N + B - 1) / B "
        "blocks, not N (README section 2).";
    const std::string blocks = "one per block (README section 2).";
    check_number(file, t + "copies_of_i", want.i, threads);
    check_number(file, t + "copies_of_x", want.x, threads);
    check_number(file, t + "copies_of_y_s", want.y_s, blocks);
    check_number(file, t + "copies_of_b_s", want.b_s, blocks);
    check_number(file, t + "copies_of_coefficients", want.coefficients,
                 "how many copies of a __constant__ variable does a program have? (README "
                 "section 2)");
    check_number(file, t + "copies_of_launches", want.launches,
                 "how many copies of a __device__ variable does a program have? (README "
                 "section 2)");
    check_number(file, t + "shared_bytes_per_block", static_cast<double>(want.shared_bytes),
                 "y_s and b_s of one block, 4 bytes a float; b_s has B elements (README "
                 "section 2).");
  }
}
