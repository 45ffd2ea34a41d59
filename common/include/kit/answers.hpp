// kit::answers: reads a lab's answers.toml, where the student answers the write-up's questions,
// and checks that each question has an answer of the form it asks for. Header-only, host-only,
// no TOML library: it reads the small subset of TOML the answer sheets use, and nothing that
// is not TOML, so every sheet it accepts is a valid TOML file (a pytest checks the handouts
// with Python's tomllib). toml++ (Debian's libtomlplusplus-dev) would read all of TOML, but the
// GPU image, which is offline, does not have it, and the sheets need only this:
//
//   # a comment
//   [q2]                 a table: the keys below it are read as q2.<key>
//   key = 0.5            a number (16_384 is 16384)
//   key = "b"            text in double quotes (escapes \" \\ \n \t) or in 'single quotes'
//   key = ""             not answered yet; so is key = ''
//
// A comment may also follow a value. parse() and load() throw FormatError for anything else;
// its what() names the file and the line and says what to write instead. Each lab keeps only
// its list of questions (key, number, kind); see labs/03_tiled_matmul/tests/lab03_questions.hpp.
#pragma once

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kit/built_path.hpp"

namespace kit::answers {

// A missing or malformed answers file; what() names the file and line and says the fix.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One value of the file.
struct Value {
  enum class Type { kBlank, kNumber, kText };
  Type type = Type::kBlank;
  std::string text;     // a string's contents, or a number as written
  double number = 0.0;  // a number's value, also for text that is a number ("0.5")
  int line = 0;
};

struct File {
  std::string path;
  std::map<std::string, Value> values;  // "key", or "table.key" for a key under [table]
};

// What form a question's answer takes.
enum class Kind {
  kNumber,  // a number; 0.5 (a number in quotes, "0.5", is accepted too)
  kChoice,  // one letter of `choices`, in quotes: "b" (also "B" and "(b)")
  kText,    // a word in quotes: "no"
};

// One question of a lab's write-up. The lab keeps the list (see its tests/ folder).
struct Question {
  int number;       // the question's number in the README
  const char* key;  // as the file spells it: "key", or "table.key" under [table]
  Kind kind;
  const char* asks = nullptr;     // what to write, for the messages ("resident blocks per SM")
  const char* choices = nullptr;  // kChoice: the letters allowed, e.g. "abcd"
};

namespace detail {

inline std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Empty, or the rest of a line that is only a comment.
inline bool is_comment(const std::string& rest) { return rest.empty() || rest[0] == '#'; }

inline bool is_key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

inline bool is_bare_key(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!is_key_char(c)) return false;
  }
  return true;
}

// The whole of `text` as a finite number (TOML's 16_384 allowed), or false.
inline bool to_number(const std::string& text, double* out) {
  std::string t;
  for (char c : trim(text)) {
    if (c != '_') t += c;
  }
  if (t.empty()) return false;
  char* end = nullptr;
  const double value = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(value)) return false;
  *out = value;
  return true;
}

inline std::string quoted_list(const char* letters) {
  std::string list;
  for (const char* c = letters; c != nullptr && *c != '\0'; ++c) {
    const bool last = c[1] == '\0';
    list += std::string(list.empty() ? "" : (last ? " or " : ", ")) + "\"" + *c + "\"";
  }
  return list;
}

}  // namespace detail

inline File parse(const std::string& text, const std::string& path) {
  File file;
  file.path = path;
  std::istringstream in(text);
  std::string raw, table;
  int number = 0;
  auto fail = [&](const std::string& why) {
    return FormatError(path + " line " + std::to_string(number) + ": " + why);
  };
  while (std::getline(in, raw)) {
    ++number;
    if (number == 1 && raw.compare(0, 3, "\xEF\xBB\xBF") == 0) raw.erase(0, 3);  // a UTF-8 BOM
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const std::string line = detail::trim(raw);
    if (line.compare(0, 2, "//") == 0) {
      throw fail("// does not start a comment in TOML; start comments with #");
    }
    if (detail::is_comment(line)) continue;

    if (line[0] == '[') {
      const std::size_t close = line.find(']');
      const std::string name =
          close == std::string::npos ? std::string() : detail::trim(line.substr(1, close - 1));
      if (!detail::is_bare_key(name) || !detail::is_comment(detail::trim(line.substr(close + 1)))) {
        throw fail("'" + line + "' is not a table header such as [q2]; a table's name is " +
                   "letters, digits and _, between [ and ]");
      }
      table = name;
      continue;
    }

    std::size_t i = 0;
    while (i < line.size() && detail::is_key_char(line[i])) ++i;
    const std::string key = line.substr(0, i);
    if (key.empty()) {
      throw fail("expected key = value, found '" + line +
                 "'; a key is letters, digits and _ (keep the keys as the handout has them)");
    }
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size() || line[i] != '=') {
      throw fail("expected = after the key " + key + ", found '" + line + "' (write " + key +
                 " = your answer)");
    }
    const std::string rest = detail::trim(line.substr(i + 1));
    const std::string full = table.empty() ? key : table + "." + key;

    Value value;
    value.line = number;
    if (detail::is_comment(rest)) {
      throw fail("the value of " + key + " is missing; write " + key + " = \"\" while it is " +
                 "not answered yet, or " + key + " = your answer");
    } else if (rest[0] == '"' || rest[0] == '\'') {
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
            throw fail(std::string("unknown escape \\") + e + " in the value of " + key +
                       "; write the answer without a backslash");
        } else {
          value.text += c;
        }
      }
      if (!closed) {
        throw fail("the value of " + key + " has no closing " + std::string(1, quote) +
                   "; a value must end on its own line, e.g. " + key + " = \"b\"");
      }
      const std::string after = detail::trim(rest.substr(j + 1));
      if (!detail::is_comment(after)) {
        throw fail("unexpected text after the value of " + key + ": '" + after +
                   "'; write one value per line (a comment starts with #)");
      }
      const bool blank = detail::trim(value.text).empty();
      value.type = blank ? Value::Type::kBlank : Value::Type::kText;
      if (!blank) detail::to_number(value.text, &value.number);
    } else {
      std::size_t end = 0;
      while (end < rest.size() && !std::isspace(static_cast<unsigned char>(rest[end])) &&
             rest[end] != '#') {
        ++end;
      }
      value.text = rest.substr(0, end);
      if (!detail::to_number(value.text, &value.number) ||
          !detail::is_comment(detail::trim(rest.substr(end)))) {
        throw fail("the value of " + key + " must be a number (such as 0.5 or 6144) or text " +
                   "in quotes (such as \"b\"), found '" + rest + "'");
      }
      value.type = Value::Type::kNumber;
    }

    const auto known = file.values.find(full);
    if (known != file.values.end()) {
      throw fail(full + " is given twice (first on line " + std::to_string(known->second.line) +
                 "); keep one");
    }
    file.values.emplace(full, value);
  }
  return file;
}

inline File load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw FormatError(path +
                      " cannot be read: the answers file is missing. Restore it from the "
                      "handout and fill in your answers.");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

// The question of `questions` with this key; a misspelt key in a test is the test's bug.
inline const Question& question(const std::vector<Question>& questions, const std::string& key) {
  for (const Question& q : questions) {
    if (key == q.key) return q;
  }
  throw std::logic_error("kit::answers: no question has the key " + key);
}

// How the messages name a question: question 9 (first_barrier_hazard).
inline std::string name_of(const Question& q) {
  return "question " + std::to_string(q.number) + " (" + q.key + ")";
}

// What a question's answer must look like, for the messages.
inline std::string form_of(const Question& q) {
  const std::string asks = q.asks != nullptr ? std::string(q.asks) : std::string();
  switch (q.kind) {
    case Kind::kNumber:
      return "a plain number" + (asks.empty() ? std::string() : " (" + asks + ")");
    case Kind::kChoice:
      return detail::quoted_list(q.choices) + " (a letter in quotes" +
             (asks.empty() ? std::string() : ": " + asks) + ")";
    case Kind::kText: return (asks.empty() ? std::string("a word") : asks) + " (in double quotes)";
  }
  return asks;
}

namespace detail {

// A choice's letter as the student wrote it ("B", "(b)", " b " all give "b").
inline std::string letter_of(const std::string& text) {
  std::string letter;
  for (char c : text) {
    if (c != '(' && c != ')' && !std::isspace(static_cast<unsigned char>(c))) {
      letter += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return letter;
}

}  // namespace detail

// Empty when the question is answered in the form it asks for, else what is wrong and how to
// fix it. An unanswered question's message always says "not answered yet".
inline std::string form_problem(const File& file, const Question& q) {
  const std::string name = name_of(q);
  const std::string key = q.key;
  const auto it = file.values.find(key);
  if (it == file.values.end()) {
    const std::size_t dot = key.find('.');
    const std::string where =
        dot == std::string::npos ? std::string() : " under [" + key.substr(0, dot) + "]";
    return name + " is missing: add the line " + key.substr(dot + 1) + " = \"\" back" + where +
           " and answer it with " + form_of(q);
  }
  const Value& v = it->second;
  const std::string at = " (line " + std::to_string(v.line) + ")";
  if (v.type == Value::Type::kBlank) {
    return name + " is not answered yet" + at + ": write " + form_of(q) + " after the = sign";
  }
  switch (q.kind) {
    case Kind::kNumber: {
      double unused = 0;
      if (!detail::to_number(v.text, &unused)) {
        return name + " asks for " + form_of(q) + ", found '" + v.text + "'" + at;
      }
      return "";
    }
    case Kind::kChoice: {
      const std::string letter = detail::letter_of(v.text);
      if (v.type != Value::Type::kText || letter.size() != 1 || q.choices == nullptr ||
          std::string(q.choices).find(letter[0]) == std::string::npos) {
        return name + " asks for " + form_of(q) + ", found '" + v.text + "'" + at;
      }
      return "";
    }
    case Kind::kText:
      if (v.type != Value::Type::kText) {
        return name + " asks for " + form_of(q) + ", found " + v.text + at;
      }
      return "";
  }
  return "";
}

// The answers of a question that form_problem accepted.
inline double number_of(const File& file, const Question& q) {
  return file.values.at(q.key).number;
}

inline char choice_of(const File& file, const Question& q) {
  const std::string letter = detail::letter_of(file.values.at(q.key).text);
  return letter.empty() ? '\0' : letter[0];
}

// A kText answer, trimmed and in lower case.
inline std::string text_of(const File& file, const Question& q) {
  return detail::lower(detail::trim(file.values.at(q.key).text));
}

}  // namespace kit::answers
