// What makes a timed matrix product honest (docs/design/tests.md, "Timing"): every timed call
// gets fresh inputs and a poisoned output, and its result is spot-checked afterwards, so that a
// kernel cannot skip the work it did once before (the same pointers again) or leave P as it was.
// All of it runs on the device between the timed calls, outside the time measured.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kit {

// Fills `count` floats at d_data (device memory) with values in [-1, 1) drawn from `seed`:
// the same distribution as random_matrix, different for every seed.
void fill_fresh_inputs(float* d_data, std::size_t count, std::uint64_t seed);

// The outcome of a spot check of P = M * N (row-major, rows x inner times inner x cols).
struct SpotCheck {
  long long unwritten = -1;  // the first element of P still poisoned, or -1
  long long wrong = -1;      // a sampled element off by more than the tolerance, or -1
  float got = 0;             // P[wrong]
  double want = 0;           // its exact value
  int samples = 0;           // how many elements were recomputed
  bool ok() const { return unwritten < 0 && wrong < 0; }
};

// Scans all of P for the poison of kit/poison.hpp, and recomputes `samples` elements at places
// drawn from `seed` in double precision, with the tolerance of kit::Tolerance (atol plus rtol
// times the sum of |terms|). O(rows * cols + samples * inner) on the device.
SpotCheck spot_check_matmul(const float* d_M, const float* d_N, const float* d_P, int rows,
                            int inner, int cols, std::uint64_t seed, int samples = 64);

// One line for a student: which element of which timed call was wrong, and what that means; a
// negative `call` is the untimed call made before the timing (kit::time_ratio).
std::string describe_spot_check(const SpotCheck& check, int cols, int call, const std::string& who);

}  // namespace kit
