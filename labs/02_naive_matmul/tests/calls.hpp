// Lab 02's API as it crosses from the tests (the judge) to the student's code (the worker):
// each call's arguments in order, and how many elements each host array holds. The judge's
// side is tests/calls_judge.cpp, the worker's tests/worker/serve.cpp (kit/remote.hpp).
#pragma once

#include "kit/remote.hpp"

namespace lab02_calls {

struct LaunchNaiveMatmul {
  static constexpr const char* name = "lab02::launch_naive_matmul";
  template <class Wire>
  static void args(Wire& w, const float*& d_M, const float*& d_N, float*& d_P, int& width,
                   int& block_size) {
    w.device(d_M), w.device(d_N), w.device(d_P), w.value(width), w.value(block_size);
  }
};

struct NaiveMatmul {
  static constexpr const char* name = "lab02::naive_matmul";
  template <class Wire>
  static void args(Wire& w, const float*& h_M, const float*& h_N, float*& h_P, int& width,
                   int& block_size) {
    w.value(width), w.value(block_size);
    const std::size_t n = kit::remote::square(width);
    w.host_in(h_M, n), w.host_in(h_N, n), w.host_out(h_P, n);
  }
};

}  // namespace lab02_calls
