// The speed test's yardstick: lab 05's reference launcher (tests/reference_launch.cpp).
#pragma once

#include "kit/matmul_harness.hpp"

namespace lab05_tests {

// The reference launch_dynamic_matmul for a square width, for kit::SpeedComparison; empty in a
// student kit, which has no reference (then the comparison times cuBLAS and says that grading
// compares with the reference).
kit::MatmulLaunch reference_square(int width, int tile_width, int strip_depth);

}  // namespace lab05_tests
