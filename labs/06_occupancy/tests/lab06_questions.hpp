// Lab 06's written questions (README section 7): each key of answers.toml, the question it
// belongs to, the kind of answer it wants and what it asks (no answers here). The file is read
// and checked by kit/answers.hpp; only this list is the lab's own.
#pragma once

#include <string>
#include <vector>

#include "kit/answers.hpp"

namespace lab06_tests {

using kit::answers::Kind;
using kit::answers::Question;

inline const std::vector<Question>& questions() {
  static const std::vector<Question> all = {
      {1, "q1.benefits_from_shared_memory", Kind::kText, "\"yes\" or \"no\""},
      {1, "q1.reads_per_input_element", Kind::kNumber, "global reads of each input element"},
      {2, "q2.cc13_blocks_per_sm", Kind::kNumber, "resident 16x16 blocks per SM at 1.3"},
      {2, "q2.cc20_blocks_per_sm", Kind::kNumber, "resident 16x16 blocks per SM at 2.0"},
      {2, "q2.cc30_blocks_per_sm", Kind::kNumber, "resident 16x16 blocks per SM at 3.0"},
      {2, "q2.cc13_occupancy_percent", Kind::kNumber, "occupancy in percent at 1.3"},
      {2, "q2.cc20_occupancy_percent", Kind::kNumber, "occupancy in percent at 2.0"},
      {2, "q2.cc30_occupancy_percent", Kind::kNumber, "occupancy in percent at 3.0"},
      {3, "q3.cc13_max_shared_bytes", Kind::kNumber, "bytes of shared memory per block at 1.3"},
      {3, "q3.cc20_max_shared_bytes", Kind::kNumber, "bytes of shared memory per block at 2.0"},
      {3, "q3.cc30_max_shared_bytes", Kind::kNumber, "bytes of shared memory per block at 3.0"},
      {4, "q4.blocks_per_sm", Kind::kNumber, "resident 1024-thread blocks per SM at 3.0"},
      {4, "q4.occupancy_percent", Kind::kNumber, "occupancy in percent"},
      {4, "q4.max_shared_bytes", Kind::kNumber, "bytes of shared memory per block"},
      {5, "q5.cc13_max_registers", Kind::kNumber, "registers per thread at 1.3"},
      {5, "q5.cc20_max_registers", Kind::kNumber, "registers per thread at 2.0"},
      {5, "q5.cc30_max_registers", Kind::kNumber, "registers per thread at 3.0, 256 threads"},
      {5, "q5.cc30_1024_max_registers", Kind::kNumber, "registers per thread at 3.0, 1024 threads"},
      {6, "q6.tile16_blocks_per_sm", Kind::kNumber, "tiled blocks per SM at TILE 16 on H100"},
      {6, "q6.tile32_blocks_per_sm", Kind::kNumber, "tiled blocks per SM at TILE 32 on H100"},
      {6, "q6.tile32_limited_by", Kind::kText,
       "\"warps\", \"registers\", \"shared_memory\" or \"blocks\""},
  };
  return all;
}

inline const Question& question(const std::string& key) {
  return kit::answers::question(questions(), key);
}

}  // namespace lab06_tests
