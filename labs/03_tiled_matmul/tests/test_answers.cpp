// Lab 03's public check of answers.toml: every question of README section 11 answered, in the
// form it asks for. Whether the answers are right is checked by hidden tests.
#include <catch2/catch_test_macros.hpp>
#include <set>
#include <string>

#include "kit/answers_test.hpp"
#include "lab03_questions.hpp"

namespace {

kit::answers::File load_answers() {
  return kit::answers::load_or_fail(
      KIT_BUILT_PATH(KIT_ANSWERS_PATH),
      "answers.toml holds one key = value line per question of "
      "README section 11; restore any line you removed and keep each value on "
      "its own line.");
}

}  // namespace

TEST_CASE("answers file is complete and well formed", "[lab03][concepts]") {
  kit::answers::check_complete(load_answers(), lab03_tests::questions(), "README section 11",
                               "0.5");
}
