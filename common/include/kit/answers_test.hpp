// The checks every lab with an answers file makes the same way (labs 01, 03): loading it inside
// a test, and the public test that every question is answered in the form it asks for. Whether
// the answers are right is each lab's own business (its public and hidden tests).
#pragma once

#include <catch2/catch_test_macros.hpp>
#include <set>
#include <string>
#include <vector>

#include "kit/answers.hpp"

namespace kit::answers {

// Parses the answers file at `path`; a missing or malformed one ends the test with the parser's
// explanation and `hint`.
inline File load_or_fail(const std::string& path, const std::string& hint) {
  try {
    return load(path);
  } catch (const FormatError& error) {
    FAIL(error.what() << "\nhint: " << hint);
  }
  return {};
}

// Every question answered, in its form, and no key the handout does not have. `readme_section`
// names where the questions are ("README section 8"); `number_example` is a number as the lab's
// answers are written ("1024").
inline void check_complete(const File& file, const std::vector<Question>& questions,
                           const std::string& readme_section, const std::string& number_example) {
  std::set<std::string> keys;
  std::string unanswered;
  for (const Question& q : questions) {
    keys.insert(q.key);
    const std::string problem = form_problem(file, q);
    if (problem.find("not answered yet") != std::string::npos) {
      unanswered += (unanswered.empty() ? "" : ", ") + std::to_string(q.number);
    } else if (!problem.empty()) {
      FAIL_CHECK(problem << "\nhint: a number is written as a plain number (" << number_example
                         << "), a choice as its letter in quotes (\"b\").");
    }
  }
  if (!unanswered.empty()) {
    FAIL_CHECK("questions not answered yet in "
               << file.path << ": " << unanswered << "\nhint: answer every question of "
               << readme_section << " in answers.toml: replace each \"\" by your answer.");
  }
  for (const auto& [key, value] : file.values) {
    if (keys.count(key) == 0) {
      FAIL_CHECK(file.path << " line " << value.line << ": unknown key " << key
                           << "\nhint: keep the keys (and any [tables]) as the handout has them; "
                              "only the values after = are yours to change.");
    }
  }
}

}  // namespace kit::answers
