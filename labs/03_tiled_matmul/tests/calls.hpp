// Lab 03's API as it crosses from the tests (the judge) to the student's code (the worker):
// each call's arguments in order, and how many elements each host array holds. The judge's
// side is tests/calls_judge.cpp, the worker's tests/worker/serve.cpp (kit/remote.hpp).
#pragma once

#include "kit/remote.hpp"

namespace lab03_calls {

struct LaunchBlockTranspose {
  static constexpr const char* name = "lab03::launch_block_transpose";
  template <class Wire>
  static void args(Wire& w, float*& d_A, int& A_width, int& A_height, int& block_width) {
    w.device(d_A), w.value(A_width), w.value(A_height), w.value(block_width);
  }
};

struct LaunchTiledMatmul {
  static constexpr const char* name = "lab03::launch_tiled_matmul";
  template <class Wire>
  static void args(Wire& w, const float*& d_M, const float*& d_N, float*& d_P, int& width,
                   int& tile_width) {
    w.device(d_M), w.device(d_N), w.device(d_P), w.value(width), w.value(tile_width);
  }
};

struct TiledMatmul {
  static constexpr const char* name = "lab03::tiled_matmul";
  template <class Wire>
  static void args(Wire& w, const float*& h_M, const float*& h_N, float*& h_P, int& width,
                   int& tile_width) {
    w.value(width), w.value(tile_width);
    const std::size_t n = kit::remote::square(width);
    w.host_in(h_M, n), w.host_in(h_N, n), w.host_out(h_P, n);
  }
};

}  // namespace lab03_calls
