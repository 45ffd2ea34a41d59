// Lab 04's API as it crosses from the tests (the judge) to the student's code (the worker):
// each call's arguments in order, and how many elements each host array holds. The judge's
// side is tests/calls_judge.cpp, the worker's tests/worker/serve.cpp (kit/remote.hpp).
#pragma once

#include "kit/remote.hpp"

namespace lab04_calls {

struct LaunchTiledMatmul {
  static constexpr const char* name = "lab04::launch_tiled_matmul";
  template <class Wire>
  static void args(Wire& w, const float*& d_M, const float*& d_N, float*& d_P, int& width,
                   int& tile_width) {
    w.device(d_M), w.device(d_N), w.device(d_P), w.value(width), w.value(tile_width);
  }
};

struct LaunchRectMatmul {
  static constexpr const char* name = "lab04::launch_rect_matmul";
  template <class Wire>
  static void args(Wire& w, const float*& d_M, const float*& d_N, float*& d_P, int& I, int& J,
                   int& K, int& tile_width) {
    w.device(d_M), w.device(d_N), w.device(d_P);
    w.value(I), w.value(J), w.value(K), w.value(tile_width);
  }
};

struct RectMatmul {
  static constexpr const char* name = "lab04::rect_matmul";
  template <class Wire>
  static void args(Wire& w, const float*& h_M, const float*& h_N, float*& h_P, int& I, int& J,
                   int& K, int& tile_width) {
    w.value(I), w.value(J), w.value(K), w.value(tile_width);
    using kit::remote::product;
    w.host_in(h_M, product(I, J)), w.host_in(h_N, product(J, K)), w.host_out(h_P, product(I, K));
  }
};

}  // namespace lab04_calls
