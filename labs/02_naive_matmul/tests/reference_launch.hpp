// The speed test's yardstick: lab 02's reference launcher (tests/reference_launch.cpp).
#pragma once

#include "kit/matmul_harness.hpp"

namespace lab02_tests {

// The reference launch_naive_matmul, for kit::SpeedComparison; empty in a student kit, which has no
// reference (then the comparison times cuBLAS and says that grading compares with the
// reference).
kit::MatmulLaunch reference_naive(int width, int block_size);

// The reference naive_matmul (the whole host side), for the leak test's yardstick; false in a
// student kit, which has no reference.
bool reference_host_matmul(const float* h_M, const float* h_N, float* h_P, int width,
                           int block_size);

}  // namespace lab02_tests
