// Reading answers.toml, where the student answers the write-up's questions: a small subset of
// TOML (key = value lines; values are "strings", 'strings' or numbers; comments start with #
// or //), parsed here so the tests need no TOML library. The // comments are the kit's own:
// the handout generator writes its TODO lines that way.
#pragma once

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace answers {

// Thrown for a missing or malformed file; what() names the file and line and says the fix.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Value {
  int line = 0;
  bool is_string = false;
  std::string text;  // a string's contents, or a number as written
};

struct File {
  std::string path;
  std::map<std::string, Value> values;
};

// One question of the write-up: its number, its key, and for a multiple-choice question the
// letters it allows (nullptr for a question whose answer is a number).
struct Question {
  int number;
  const char* key;
  const char* choices;
};

namespace detail {

inline std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

inline bool is_comment(const std::string& rest) {
  return rest.empty() || rest[0] == '#' || rest.compare(0, 2, "//") == 0;
}

inline bool is_key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

// The whole of `text` as a number, or false.
inline bool to_number(const std::string& text, double* out) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  char* end = nullptr;
  const double value = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return false;
  *out = value;
  return true;
}

}  // namespace detail

inline File parse(const std::string& text, const std::string& path) {
  File file;
  file.path = path;
  std::istringstream in(text);
  std::string raw;
  int number = 0;
  auto fail = [&](const std::string& why) -> FormatError {
    return FormatError(path + " line " + std::to_string(number) + ": " + why);
  };
  while (std::getline(in, raw)) {
    ++number;
    if (number == 1 && raw.compare(0, 3, "\xEF\xBB\xBF") == 0) raw.erase(0, 3);  // a UTF-8 BOM
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const std::string line = detail::trim(raw);
    if (detail::is_comment(line)) continue;
    if (line[0] == '[') {
      throw fail("tables such as " + line +
                 " are not used in this file; write key = value lines only");
    }
    std::size_t i = 0;
    while (i < line.size() && detail::is_key_char(line[i])) ++i;
    const std::string key = line.substr(0, i);
    if (key.empty()) {
      throw fail("expected key = value, found '" + line + "'; a key is letters, digits and _");
    }
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size() || line[i] != '=') {
      throw fail("expected = after the key " + key + " (write " + key + " = your answer)");
    }
    std::string rest = detail::trim(line.substr(i + 1));
    if (rest.empty() || detail::is_comment(rest)) {
      throw fail(key + " has no value; write " + key + " = \"\" while you have no answer yet");
    }
    Value value;
    value.line = number;
    if (rest[0] == '"' || rest[0] == '\'') {
      const char quote = rest[0];
      std::size_t j = 1;
      bool closed = false;
      for (; j < rest.size(); ++j) {
        const char c = rest[j];
        if (c == quote) {
          closed = true;
          break;
        }
        if (c == '\\' && quote == '"') {
          if (j + 1 >= rest.size()) break;
          const char e = rest[++j];
          if (e == '"' || e == '\\')
            value.text += e;
          else if (e == 'n')
            value.text += '\n';
          else if (e == 't')
            value.text += '\t';
          else
            throw fail(std::string("unknown escape \\") + e + " in the value of " + key);
        } else {
          value.text += c;
        }
      }
      if (!closed) {
        throw fail("the value of " + key + " has no closing " + std::string(1, quote) +
                   "; a value must end on its own line");
      }
      const std::string after = detail::trim(rest.substr(j + 1));
      if (!detail::is_comment(after)) {
        throw fail("unexpected text after the value of " + key + ": '" + after + "'");
      }
      value.is_string = true;
    } else {
      std::size_t end = 0;
      while (end < rest.size() && !std::isspace(static_cast<unsigned char>(rest[end])) &&
             rest[end] != '#' && rest.compare(end, 2, "//") != 0) {
        ++end;
      }
      value.text = rest.substr(0, end);
      double unused = 0;
      if (!detail::to_number(value.text, &unused) ||
          !detail::is_comment(detail::trim(rest.substr(end)))) {
        throw fail("the value of " + key + " must be a number (such as 0.5) or text in quotes " +
                   "(such as \"b\"), found '" + rest + "'");
      }
    }
    const auto known = file.values.find(key);
    if (known != file.values.end()) {
      throw fail(key + " is given twice (first on line " + std::to_string(known->second.line) +
                 "); keep one");
    }
    file.values.emplace(key, value);
  }
  return file;
}

inline File load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw FormatError(path +
                      " cannot be read: the answers file is missing. Restore it from the "
                      "handout and fill in your answers (README section 11).");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

// Empty when the question is answered in the form it asks for, else what is wrong.
inline std::string form_problem(const File& file, const Question& q) {
  const std::string name = "question " + std::to_string(q.number) + " (" + q.key + ")";
  const auto it = file.values.find(q.key);
  if (it == file.values.end()) {
    return name + " is missing: add the line " + q.key + " = \"\" back and answer it";
  }
  const Value& v = it->second;
  const std::string at = " (line " + std::to_string(v.line) + ")";
  if (detail::trim(v.text).empty()) return name + " is not answered yet" + at;
  if (q.choices == nullptr) {
    double unused = 0;
    if (!detail::to_number(v.text, &unused)) {
      return name + " asks for a number, found '" + v.text + "'" + at;
    }
    return "";
  }
  std::string letter;
  for (char c : v.text) {
    if (c != '(' && c != ')' && !std::isspace(static_cast<unsigned char>(c))) {
      letter += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  if (letter.size() != 1 || std::string(q.choices).find(letter[0]) == std::string::npos) {
    std::string allowed;
    for (const char* c = q.choices; *c != '\0'; ++c) {
      allowed += std::string(allowed.empty() ? "" : ", ") + "\"" + *c + "\"";
    }
    return name + " asks for one of " + allowed + ", found '" + v.text + "'" + at;
  }
  return "";
}

// The answer of a question that form_problem accepted.
inline double number_of(const File& file, const Question& q) {
  double value = 0;
  detail::to_number(file.values.at(q.key).text, &value);
  return value;
}

inline char choice_of(const File& file, const Question& q) {
  for (char c : file.values.at(q.key).text) {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return '\0';
}

// Lab 03's questions (README section 11), in the order of answers.toml.
inline const std::vector<Question>& lab03_questions() {
  static const std::vector<Question> questions = {
      {1, "naive_flop_per_byte", nullptr},
      {2, "tiled_flop_per_byte_tile16", nullptr},
      {3, "tiled_flop_per_byte_tile32", nullptr},
      {4, "shared_bytes_per_block_tile16", nullptr},
      {5, "shared_bytes_per_block_tile32", nullptr},
      {6, "phases_width1024_tile32", nullptr},
      {7, "global_loads_per_thread_width2048_tile16", nullptr},
      {8, "first_racing_block_width", nullptr},
      {9, "first_barrier_hazard", "ab"},
      {10, "second_barrier_hazard", "ab"},
      {11, "speedup_reason", "abcd"},
      {12, "load_ratio_naive_to_tile32", nullptr},
      {13, "dram_ratio_naive_to_tile16", nullptr},
  };
  return questions;
}

inline const Question& lab03_question(const std::string& key) {
  for (const Question& q : lab03_questions()) {
    if (key == q.key) return q;
  }
  throw std::logic_error("no lab 03 question has the key " + key);
}

}  // namespace answers
