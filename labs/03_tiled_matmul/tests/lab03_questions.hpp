// Lab 03's written questions (README section 11), in the order of answers.toml. The file is
// read and checked by kit/answers.hpp; only the list of questions is the lab's own.
#pragma once

#include <string>
#include <vector>

#include "kit/answers.hpp"

namespace lab03_tests {

using kit::answers::Kind;
using kit::answers::Question;

inline const std::vector<Question>& questions() {
  static const std::vector<Question> all = {
      {1, "naive_flop_per_byte", Kind::kNumber, "FLOP per byte"},
      {2, "tiled_flop_per_byte_tile16", Kind::kNumber, "FLOP per byte"},
      {3, "tiled_flop_per_byte_tile32", Kind::kNumber, "FLOP per byte"},
      {4, "shared_bytes_per_block_tile16", Kind::kNumber, "bytes"},
      {5, "shared_bytes_per_block_tile32", Kind::kNumber, "bytes"},
      {6, "phases_width1024_tile32", Kind::kNumber, "phases"},
      {7, "global_loads_per_thread_width2048_tile16", Kind::kNumber, "floats"},
      {8, "first_racing_block_width", Kind::kNumber, "4, 8, 16 or 32"},
      {9, "first_barrier_hazard", Kind::kChoice, nullptr, "ab"},
      {10, "second_barrier_hazard", Kind::kChoice, nullptr, "ab"},
      {11, "speedup_reason", Kind::kChoice, nullptr, "abcd"},
      {12, "load_ratio_naive_to_tile32", Kind::kNumber, "a ratio"},
      {13, "dram_ratio_naive_to_tile16", Kind::kNumber, "a ratio"},
  };
  return all;
}

inline const Question& question(const std::string& key) {
  return kit::answers::question(questions(), key);
}

}  // namespace lab03_tests
