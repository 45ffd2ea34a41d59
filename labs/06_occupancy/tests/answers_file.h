// Reads lab 06's written answers (answers.toml): a small subset of TOML, enough for
// `[table]` headers, `key = number`, `key = "text"` and # comments. A key with nothing after
// its = sign is a question not answered yet. Errors name the file, the line and the fix.
#pragma once

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace lab06_answers {

enum class Kind { kBlank, kNumber, kText };

struct Answer {
  Kind kind = Kind::kBlank;
  double number = 0.0;
  std::string text;  // for kText: lower-case, trimmed
  int line = 0;
};

struct AnswerSheet {
  std::string path;
  std::string error;                      // empty when the whole file parsed
  std::map<std::string, Answer> answers;  // "q2.cc13_blocks_per_sm" -> its answer
};

// The questions, the kind of answer each wants, and what it asks (no answers here).
struct Question {
  const char* key;
  Kind kind;
  const char* asks;
};

inline const std::vector<Question>& questions() {
  static const std::vector<Question> all = {
      {"q1.benefits_from_shared_memory", Kind::kText, "\"yes\" or \"no\""},
      {"q1.reads_per_input_element", Kind::kNumber, "global reads of each input element"},
      {"q2.cc13_blocks_per_sm", Kind::kNumber, "resident 16x16 blocks per SM at 1.3"},
      {"q2.cc20_blocks_per_sm", Kind::kNumber, "resident 16x16 blocks per SM at 2.0"},
      {"q2.cc30_blocks_per_sm", Kind::kNumber, "resident 16x16 blocks per SM at 3.0"},
      {"q2.cc13_occupancy_percent", Kind::kNumber, "occupancy in percent at 1.3"},
      {"q2.cc20_occupancy_percent", Kind::kNumber, "occupancy in percent at 2.0"},
      {"q2.cc30_occupancy_percent", Kind::kNumber, "occupancy in percent at 3.0"},
      {"q3.cc13_max_shared_bytes", Kind::kNumber, "bytes of shared memory per block at 1.3"},
      {"q3.cc20_max_shared_bytes", Kind::kNumber, "bytes of shared memory per block at 2.0"},
      {"q3.cc30_max_shared_bytes", Kind::kNumber, "bytes of shared memory per block at 3.0"},
      {"q4.blocks_per_sm", Kind::kNumber, "resident 1024-thread blocks per SM at 3.0"},
      {"q4.occupancy_percent", Kind::kNumber, "occupancy in percent"},
      {"q4.max_shared_bytes", Kind::kNumber, "bytes of shared memory per block"},
      {"q5.cc13_max_registers", Kind::kNumber, "registers per thread at 1.3"},
      {"q5.cc20_max_registers", Kind::kNumber, "registers per thread at 2.0"},
      {"q5.cc30_max_registers", Kind::kNumber, "registers per thread at 3.0, 256 threads"},
      {"q5.cc30_1024_max_registers", Kind::kNumber, "registers per thread at 3.0, 1024 threads"},
      {"q6.tile16_blocks_per_sm", Kind::kNumber, "tiled blocks per SM at TILE 16 on H100"},
      {"q6.tile32_blocks_per_sm", Kind::kNumber, "tiled blocks per SM at TILE 32 on H100"},
      {"q6.tile32_limited_by", Kind::kText,
       "\"warps\", \"registers\", \"shared_memory\" or \"blocks\""},
  };
  return all;
}

namespace detail {

inline std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

inline bool is_bare_key(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// The line without its # comment; a # inside a "string" does not start one.
inline std::string strip_comment(const std::string& line) {
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') in_string = !in_string;
    if (line[i] == '#' && !in_string) return line.substr(0, i);
  }
  return line;
}

inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Parses the text after "=": blank, a number, or a "string". Returns false if malformed.
inline bool parse_value(const std::string& raw, Answer& out) {
  const std::string v = trim(raw);
  if (v.empty()) {
    out.kind = Kind::kBlank;
    return true;
  }
  if (v.front() == '"') {
    if (v.size() < 2 || v.back() != '"') return false;
    const std::string inner = v.substr(1, v.size() - 2);
    if (inner.find('"') != std::string::npos || inner.find('\\') != std::string::npos) {
      return false;
    }
    out.kind = Kind::kText;
    out.text = lower(trim(inner));
    return true;
  }
  std::string digits;
  for (char c : v) {
    if (c != '_') digits += c;  // TOML allows 16_384
  }
  char* end = nullptr;
  const double number = std::strtod(digits.c_str(), &end);
  if (end == digits.c_str() || *end != '\0') return false;
  out.kind = Kind::kNumber;
  out.number = number;
  return true;
}

}  // namespace detail

inline AnswerSheet load_answers(const std::string& path) {
  AnswerSheet sheet;
  sheet.path = path;
  std::ifstream in(path);
  if (!in) {
    sheet.error = path + " cannot be read: it should be the lab's answers.toml (README section 7)";
    return sheet;
  }
  std::string table, line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string text = detail::trim(detail::strip_comment(line));
    const std::string where = path + " line " + std::to_string(number) + ": ";
    if (text.empty()) continue;
    if (text.front() == '[') {
      const std::string name =
          text.back() == ']' ? detail::trim(text.substr(1, text.size() - 2)) : std::string();
      if (!detail::is_bare_key(name)) {
        sheet.error = where + "'" + text + "' is not a table header such as [q2]";
        return sheet;
      }
      table = name;
      continue;
    }
    const size_t eq = text.find('=');
    if (eq == std::string::npos) {
      sheet.error = where + "'" + text + "' has no = sign; write key = value, e.g. blocks = 4";
      return sheet;
    }
    const std::string key = detail::trim(text.substr(0, eq));
    if (!detail::is_bare_key(key)) {
      sheet.error = where + "'" + key + "' is not a key: use letters, digits and _ only";
      return sheet;
    }
    Answer answer;
    answer.line = number;
    if (!detail::parse_value(text.substr(eq + 1), answer)) {
      sheet.error = where + "the value of " + key + " is neither a number (such as 4 or 6144) " +
                    "nor text in double quotes (such as \"no\")";
      return sheet;
    }
    const std::string full = table.empty() ? key : table + "." + key;
    if (!sheet.answers.emplace(full, answer).second) {
      sheet.error = where + full + " is answered twice; keep one";
      return sheet;
    }
  }
  return sheet;
}

// Empty when `key` has an answer of the kind its question wants; otherwise why not.
inline std::string answer_problem(const AnswerSheet& sheet, const Question& q) {
  const std::string key = q.key;
  const size_t dot = key.find('.');
  const std::string table = key.substr(0, dot), name = key.substr(dot + 1);
  const auto it = sheet.answers.find(key);
  if (it == sheet.answers.end()) {
    return key + " is missing: under [" + table + "] write " + name + " = <" + q.asks + ">";
  }
  const Answer& a = it->second;
  const std::string at = " (line " + std::to_string(a.line) + ")";
  if (a.kind == Kind::kBlank) {
    return key + at + " has no answer yet: write " + q.asks + " after the = sign";
  }
  if (a.kind != q.kind) {
    return key + at + " wants " + q.asks +
           (q.kind == Kind::kNumber ? ", a plain number without quotes" : ", in double quotes");
  }
  return "";
}

}  // namespace lab06_answers
