// Lab 03's public check of answers.toml: every question of README section 11 answered, in the
// form it asks for. Whether the answers are right is checked by hidden tests.
#include <catch2/catch_test_macros.hpp>
#include <set>
#include <string>

#include "kit/answers.hpp"
#include "lab03_questions.hpp"

namespace {

// Parses the file; a missing or malformed file ends the test with the parser's explanation.
kit::answers::File load_answers() {
  try {
    return kit::answers::load(KIT_BUILT_PATH(KIT_ANSWERS_PATH));
  } catch (const kit::answers::FormatError& error) {
    FAIL(error.what() << "\nhint: answers.toml holds one key = value line per question of "
                         "README section 11; restore any line you removed and keep each value on "
                         "its own line.");
  }
  return {};
}

}  // namespace

TEST_CASE("answers file is complete and well formed", "[lab03][concepts]") {
  const kit::answers::File file = load_answers();
  std::set<std::string> keys;
  std::string unanswered;
  for (const kit::answers::Question& q : lab03_tests::questions()) {
    keys.insert(q.key);
    const std::string problem = kit::answers::form_problem(file, q);
    if (problem.find("not answered yet") != std::string::npos) {
      unanswered += (unanswered.empty() ? "" : ", ") + std::to_string(q.number);
    } else if (!problem.empty()) {
      FAIL_CHECK(problem << "\nhint: a number is written as a plain number (0.5), a choice as its "
                            "letter in quotes (\"b\").");
    }
  }
  if (!unanswered.empty()) {
    FAIL_CHECK("questions not answered yet in "
               << file.path << ": " << unanswered
               << "\nhint: answer every question of README section 11 in answers.toml: replace "
                  "each \"\" by your answer.");
  }
  for (const auto& [key, value] : file.values) {
    if (keys.count(key) == 0) {
      FAIL_CHECK(file.path << " line " << value.line << ": unknown key " << key
                           << "\nhint: keep the keys as the handout has them; only the values "
                              "after = are yours to change.");
    }
  }
}
