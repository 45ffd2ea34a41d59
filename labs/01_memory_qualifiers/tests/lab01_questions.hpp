// Lab 01's written questions (README section 8), in the order of answers.toml. The file is read
// and checked by kit/answers.hpp; only the list of questions is the lab's own.
#pragma once

#include <string>
#include <vector>

#include "kit/answers.hpp"

namespace lab01_tests {

using kit::answers::Kind;
using kit::answers::Question;

// The launches of question 14 onwards: foo_kernel<B> over N threads in blocks of B. The table
// name in answers.toml is n<N>_b<B>.
struct Launch {
  int number;  // the question's number
  int n;
  int b;
  const char* table;
};

inline const std::vector<Launch>& launches() {
  static const std::vector<Launch> all = {
      {14, 1024, 128, "n1024_b128"},
      {15, 1000, 128, "n1000_b128"},
      {16, 100, 256, "n100_b256"},
      {17, 70000, 512, "n70000_b512"},
  };
  return all;
}

// The keys of each launch's table, and what each counts.
inline const std::vector<std::pair<const char*, const char*>>& launch_keys() {
  static const std::vector<std::pair<const char*, const char*>> keys = {
      {"copies_of_i", "copies"},
      {"copies_of_x", "copies"},
      {"copies_of_y_s", "copies"},
      {"copies_of_b_s", "copies"},
      {"copies_of_coefficients", "copies"},
      {"copies_of_launches", "copies"},
      {"shared_bytes_per_block", "bytes"},
  };
  return keys;
}

inline const std::vector<Question>& questions() {
  static const std::vector<Question> all = [] {
    std::vector<Question> list = {
        {1, "memory_of_i", Kind::kChoice, "a memory of section 2", "abcde"},
        {2, "memory_of_x_by_the_table", Kind::kChoice, "a memory of section 2", "abcde"},
        {3, "memory_of_x_as_compiled", Kind::kChoice, "a memory of section 2", "abcde"},
        {4, "memory_of_y_s", Kind::kChoice, "a memory of section 2", "abcde"},
        {5, "memory_of_b_s", Kind::kChoice, "a memory of section 2", "abcde"},
        {6, "memory_of_coefficients", Kind::kChoice, "a memory of section 2", "abcde"},
        {7, "memory_of_launches", Kind::kChoice, "a memory of section 2", "abcde"},
        {8, "scope_of_b_s", Kind::kChoice, "a scope", "abc"},
        {9, "lifetime_of_b_s", Kind::kChoice, "a lifetime", "ab"},
        {10, "lifetime_of_launches", Kind::kChoice, "a lifetime", "ab"},
        {11, "constant_broadcast_when", Kind::kChoice, nullptr, "abc"},
        {12, "local_bytes_per_thread", Kind::kNumber, "bytes per thread"},
        {13, "why_local_memory", Kind::kChoice, nullptr, "abc"},
    };
    // Keys under a table are spelt table.key; the strings live as long as the program.
    static std::vector<std::string> names;
    names.reserve(launches().size() * launch_keys().size());
    for (const Launch& launch : launches()) {
      for (const auto& [key, asks] : launch_keys()) {
        names.push_back(std::string(launch.table) + "." + key);
        list.push_back({launch.number, names.back().c_str(), Kind::kNumber, asks});
      }
    }
    return list;
  }();
  return all;
}

inline const Question& question(const std::string& key) {
  return kit::answers::question(questions(), key);
}

}  // namespace lab01_tests
