// kit/answers.hpp: the reader of the labs' answers.toml files.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string>
#include <vector>

#include "kit/answers.hpp"

using Catch::Matchers::ContainsSubstring;
namespace answers = kit::answers;

namespace {

const std::vector<answers::Question>& sample_questions() {
  static const std::vector<answers::Question> all = {
      {1, "ratio", answers::Kind::kNumber, "FLOP per byte"},
      {2, "hazard", answers::Kind::kChoice, nullptr, "ab"},
      {3, "q3.limit", answers::Kind::kText, "\"warps\" or \"blocks\""},
  };
  return all;
}

}  // namespace

TEST_CASE("answers reads numbers", "[common]") {
  const answers::File file =
      answers::parse("a = 0.25\nb = 1024\nc = -3\nd = 16_384\ne = 2.5e3  # comment\n", "x.toml");
  CHECK(file.path == "x.toml");
  REQUIRE(file.values.size() == 5);
  CHECK(file.values.at("a").type == answers::Value::Type::kNumber);
  CHECK(file.values.at("a").number == 0.25);
  CHECK(file.values.at("a").line == 1);
  CHECK(file.values.at("b").number == 1024);
  CHECK(file.values.at("c").number == -3);
  CHECK(file.values.at("d").number == 16384);
  CHECK(file.values.at("e").number == 2500);
  CHECK(file.values.at("e").line == 5);
}

TEST_CASE("answers reads double and single quoted strings", "[common]") {
  const answers::File file = answers::parse(
      "a = \"b\"\nb = 'no'\nc = \"say \\\"hi\\\" # not a comment\"\nd = \"0.5\"\n", "x.toml");
  CHECK(file.values.at("a").type == answers::Value::Type::kText);
  CHECK(file.values.at("a").text == "b");
  CHECK(file.values.at("b").text == "no");
  CHECK(file.values.at("c").text == "say \"hi\" # not a comment");
  CHECK(file.values.at("d").text == "0.5");
  CHECK(file.values.at("d").number == 0.5);
}

TEST_CASE("answers reads blank values as not answered yet", "[common]") {
  const answers::File file =
      answers::parse("a = \"\"\nb = ''\nc = \"\"   # later\ne = \"  \"\n", "x.toml");
  for (const char* key : {"a", "b", "c", "e"}) {
    CAPTURE(key);
    CHECK(file.values.at(key).type == answers::Value::Type::kBlank);
  }
  const answers::Question q{4, "c", answers::Kind::kNumber, "bytes"};
  CHECK_THAT(answers::form_problem(file, q), ContainsSubstring("question 4 (c)") &&
                                                 ContainsSubstring("not answered yet") &&
                                                 ContainsSubstring("line 3"));
}

TEST_CASE("answers skips comments and blank lines and reads tables", "[common]") {
  const answers::File file = answers::parse(
      "# a comment\n"
      "\n"
      "   \t\n"
      "top = 1 # after a value\n"
      "[q3]  # the table of question 3\n"
      "  # TODO: answer\n"
      "limit = \"warps\" # after a string\n",
      "x.toml");
  REQUIRE(file.values.size() == 2);
  CHECK(file.values.at("top").number == 1);
  CHECK(file.values.at("q3.limit").text == "warps");
  CHECK(file.values.at("q3.limit").line == 7);
}

TEST_CASE("answers refuses what is not TOML so that every sheet it reads is TOML", "[common]") {
  CHECK_THROWS_WITH(
      answers::parse("// a comment\na = 1\n", "f.toml"),
      ContainsSubstring("f.toml line 1") && ContainsSubstring("start comments with #"));
  CHECK_THROWS_WITH(answers::parse("a = 1 // after\n", "f.toml"),
                    ContainsSubstring("must be a number"));
  CHECK_THROWS_WITH(answers::parse("[q1]\na =\n", "f.toml"),
                    ContainsSubstring("f.toml line 2") && ContainsSubstring("a = \"\""));
  const answers::File unanswered = answers::parse("a = \"\"\nb = ''\n", "f.toml");
  CHECK(unanswered.values.at("a").type == answers::Value::Type::kBlank);
  CHECK(unanswered.values.at("b").type == answers::Value::Type::kBlank);
}

TEST_CASE("answers names the file and line of a malformed line", "[common]") {
  CHECK_THROWS_AS(answers::parse("a = 1\nthis line is wrong\n", "answers.toml"),
                  answers::FormatError);
  CHECK_THROWS_WITH(answers::parse("a = 1\nthis line is wrong\n", "answers.toml"),
                    ContainsSubstring("answers.toml line 2") && ContainsSubstring("this"));
  CHECK_THROWS_WITH(
      answers::parse("# c\n\nb = twelve\n", "answers.toml"),
      ContainsSubstring("answers.toml line 3") && ContainsSubstring("must be a number"));
  CHECK_THROWS_WITH(answers::parse("b = \"open\n", "f.toml"),
                    ContainsSubstring("f.toml line 1") && ContainsSubstring("closing"));
  CHECK_THROWS_WITH(answers::parse("b = \"x\" \"y\"\n", "f.toml"),
                    ContainsSubstring("f.toml line 1") && ContainsSubstring("unexpected text"));
  CHECK_THROWS_WITH(answers::parse("\n[q2\n", "f.toml"),
                    ContainsSubstring("f.toml line 2") && ContainsSubstring("table header"));
  CHECK_THROWS_WITH(answers::parse("= 4\n", "f.toml"), ContainsSubstring("expected key = value"));
}

TEST_CASE("answers rejects a key given twice", "[common]") {
  CHECK_THROWS_WITH(answers::parse("a = 1\n\n# c\na = 2\n", "f.toml"),
                    ContainsSubstring("f.toml line 4") && ContainsSubstring("given twice") &&
                        ContainsSubstring("first on line 1"));
  // The same key under two tables is two keys.
  const answers::File file = answers::parse("[q1]\na = 1\n[q2]\na = 2\n", "f.toml");
  CHECK(file.values.at("q1.a").number == 1);
  CHECK(file.values.at("q2.a").number == 2);
  CHECK_THROWS_WITH(answers::parse("[q1]\na = 1\n[q1]\na = 2\n", "f.toml"),
                    ContainsSubstring("q1.a is given twice"));
}

TEST_CASE("answers says which file is missing", "[common]") {
  CHECK_THROWS_WITH(answers::load("/nonexistent/answers.toml"),
                    ContainsSubstring("/nonexistent/answers.toml") && ContainsSubstring("missing"));
}

TEST_CASE("answers checks the form of each kind of question", "[common]") {
  const auto& qs = sample_questions();
  const answers::File good =
      answers::parse("ratio = 0.25\nhazard = \"(B)\"\n[q3]\nlimit = \" Warps \"\n", "f.toml");
  for (const answers::Question& q : qs) CHECK(answers::form_problem(good, q).empty());
  CHECK(answers::number_of(good, answers::question(qs, "ratio")) == 0.25);
  CHECK(answers::choice_of(good, answers::question(qs, "hazard")) == 'b');
  CHECK(answers::text_of(good, answers::question(qs, "q3.limit")) == "warps");
  CHECK_THROWS_AS(answers::question(qs, "nope"), std::logic_error);

  const answers::File quoted = answers::parse("ratio = \"0.25\"\n", "f.toml");
  CHECK(answers::form_problem(quoted, qs[0]).empty());
  CHECK(answers::number_of(quoted, qs[0]) == 0.25);

  const answers::File bad =
      answers::parse("ratio = \"a quarter\"\nhazard = \"c\"\n[q3]\nlimit = 2\n", "f.toml");
  CHECK_THAT(answers::form_problem(bad, qs[0]),
             ContainsSubstring("question 1 (ratio)") && ContainsSubstring("number") &&
                 ContainsSubstring("a quarter") && ContainsSubstring("line 1"));
  CHECK_THAT(answers::form_problem(bad, qs[1]),
             ContainsSubstring("\"a\" or \"b\"") && ContainsSubstring("line 2"));
  CHECK_THAT(answers::form_problem(bad, qs[2]),
             ContainsSubstring("double quotes") && ContainsSubstring("line 4"));

  const answers::File none = answers::parse("", "f.toml");
  CHECK_THAT(answers::form_problem(none, qs[2]), ContainsSubstring("missing") &&
                                                     ContainsSubstring("under [q3]") &&
                                                     ContainsSubstring("limit = \"\""));
}
