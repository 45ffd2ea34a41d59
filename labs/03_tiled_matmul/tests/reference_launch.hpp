// The speed test's yardstick: lab 03's reference launcher (tests/reference_launch.cpp).
#pragma once

#include "kit/matmul_harness.hpp"

namespace lab03_tests {

// The reference launch_tiled_matmul, for kit::SpeedComparison; empty in a student kit, which has no
// reference (then the comparison times cuBLAS and says that grading compares with the
// reference).
kit::MatmulLaunch reference_tiled(int width, int tile_width);

}  // namespace lab03_tests
