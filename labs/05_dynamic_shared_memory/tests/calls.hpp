// Lab 05's API as it crosses from the tests (the judge) to the student's code (the worker):
// each call's arguments in order, how many elements each host array holds, and how Config
// crosses. The occupancy query choose_config is given is the judge's own function, which the
// worker's code calls back. The judge's side is tests/calls_judge.cpp, the worker's
// tests/worker/serve.cpp (kit/remote.hpp).
#pragma once

#include <cstddef>

#include "dynamic_matmul.h"
#include "kit/remote.hpp"

namespace lab05 {

// Config holds its reason as text, so it crosses field by field; DeviceLimits is a plain value.
template <class Wire>
void fields(Wire& w, Config& c) {
  w.value(c.tile_width), w.value(c.strip_depth), w.value(c.shared_bytes);
  w.value(c.blocks_per_sm), w.value(c.reason);
}

}  // namespace lab05

namespace lab05_calls {

struct SharedBytesFor {
  static constexpr const char* name = "lab05::shared_bytes_for";
  template <class Wire>
  static void args(Wire& w, int& tile_width, int& strip_depth) {
    w.value(tile_width), w.value(strip_depth);
  }
};

struct DeviceLimits {
  static constexpr const char* name = "lab05::device_limits";
  template <class Wire>
  static void args(Wire&) {}
};

struct BlocksPerSm {
  static constexpr const char* name = "lab05::blocks_per_sm";
  template <class Wire>
  static void args(Wire& w, int& tile_width, std::size_t& shared_bytes) {
    w.value(tile_width), w.value(shared_bytes);
  }
};

struct CheckConfig {
  static constexpr const char* name = "lab05::check_config";
  template <class Wire>
  static void args(Wire& w, lab05::DeviceLimits& limits, int& tile_width, int& strip_depth) {
    w.value(limits), w.value(tile_width), w.value(strip_depth);
  }
};

struct ChooseConfigFor {
  static constexpr const char* name = "lab05::choose_config(limits, occupancy)";
  template <class Wire>
  static void args(Wire& w, lab05::DeviceLimits& limits, lab05::OccupancyQuery& occupancy) {
    w.value(limits), w.callback(occupancy);
  }
};

struct ChooseConfig {
  static constexpr const char* name = "lab05::choose_config()";
  template <class Wire>
  static void args(Wire&) {}
};

struct LaunchDynamicMatmul {
  static constexpr const char* name = "lab05::launch_dynamic_matmul";
  template <class Wire>
  static void args(Wire& w, const float*& d_M, const float*& d_N, float*& d_P, int& I, int& J,
                   int& K, int& tile_width, int& strip_depth) {
    w.device(d_M), w.device(d_N), w.device(d_P);
    w.value(I), w.value(J), w.value(K), w.value(tile_width), w.value(strip_depth);
  }
};

struct DynamicMatmul {
  static constexpr const char* name = "lab05::dynamic_matmul";
  template <class Wire>
  static void args(Wire& w, const float*& h_M, const float*& h_N, float*& h_P, int& I, int& J,
                   int& K) {
    w.value(I), w.value(J), w.value(K);
    using kit::remote::product;
    w.host_in(h_M, product(I, J)), w.host_in(h_N, product(J, K)), w.host_out(h_P, product(I, K));
  }
};

}  // namespace lab05_calls
