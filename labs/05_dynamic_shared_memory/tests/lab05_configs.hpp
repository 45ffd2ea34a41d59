// The configurations that lab 05's probe launches in its "sizes" mode and that the test of the
// dynamic shared memory per launch (Nsight Compute) expects, in launch order: one list for both.
#pragma once

#include <cstddef>
#include <vector>

namespace lab05_tests {

struct TileDepth {
  int tile, depth;
};

// Every tile width, one tile deep and deeper; each below 48 KB, so that the test judges the size
// passed at launch and not the opt-in above it (that has a test of its own).
inline std::vector<TileDepth> sized_launches() {
  return {{8, 8}, {8, 32}, {16, 16}, {16, 64}, {32, 32}, {32, 96}};
}

// The strips' depth of the probe's loads modes, a multiple of both tile widths counted: the
// probe's launch and the kit's own (kit_device_count) use it alike.
constexpr int kCountedStripDepth = 64;

// What Mds and Nds need together: two strips of tile x depth floats, in bytes.
inline std::size_t needed_bytes(int tile, int depth) {
  return 2 * static_cast<std::size_t>(tile) * static_cast<std::size_t>(depth) * sizeof(float);
}

}  // namespace lab05_tests
