// Lab 01's public checks of answers.toml: every question of README section 8 answered in the form
// it asks for, and the copy counts of the textbook's own launch (question 14). Whether the other
// answers are right is checked by hidden tests.
#include <catch2/catch_test_macros.hpp>
#include <set>
#include <string>

#include "kit/answers_test.hpp"
#include "lab01_questions.hpp"

namespace {

kit::answers::File load_answers() {
  return kit::answers::load_or_fail(
      KIT_BUILT_PATH(KIT_ANSWERS_PATH),
      "answers.toml holds one key = value line per question of "
      "README section 8; restore any line you removed and keep each value on "
      "its own line.");
}

}  // namespace

TEST_CASE("answers file is complete and well formed", "[lab01][concepts]") {
  kit::answers::check_complete(load_answers(), lab01_tests::questions(), "README section 8",
                               "1024");
}

TEST_CASE("copy counts for the textbook launch of 1024 threads in blocks of 128 are right",
          "[lab01][concepts]") {
  const kit::answers::File file = load_answers();
  // The textbook's own launch, worked through in README section 2: 8 blocks of 128 threads.
  const struct {
    const char* key;
    double right;
    const char* where;
  } checks[] = {
      {"n1024_b128.copies_of_i", 1024, "one per thread of the grid"},
      {"n1024_b128.copies_of_x", 1024, "an automatic array: one per thread"},
      {"n1024_b128.copies_of_y_s", 8, "a __shared__ variable: one per block"},
      {"n1024_b128.copies_of_b_s", 8, "a __shared__ array: one per block"},
      {"n1024_b128.copies_of_coefficients", 1, "one for the whole program"},
      {"n1024_b128.copies_of_launches", 1, "one for the whole program"},
      {"n1024_b128.shared_bytes_per_block", 516, "y_s and b_s, 4 bytes a float"},
  };
  for (const auto& check : checks) {
    const kit::answers::Question& q = lab01_tests::question(check.key);
    const std::string problem = kit::answers::form_problem(file, q);
    if (!problem.empty()) {
      FAIL_CHECK(problem);
    } else if (kit::answers::number_of(file, q) != check.right) {
      FAIL_CHECK(kit::answers::name_of(q)
                 << ": " << kit::answers::number_of(file, q)
                 << " is not right\nhint: " << check.where << " (README section 2).");
    }
  }
}
