// Lab 01's API as it crosses from the tests (the judge) to the student's code (the worker):
// each call's arguments in order and how many elements each host array holds. The judge's side
// is tests/calls_judge.cpp, the worker's tests/worker/serve.cpp (kit/remote.hpp).
//
// The symbols polynomial_symbol() and counter_symbol() return are addresses in the worker, so
// the tests reach them through three calls of the kit's own, served next to the lab's: what
// cudaGetSymbolSize says of one, and a copy from or to it. The rest of what the tests judge
// (the kernels' results, their machine code) the judge checks itself.
#pragma once

#include <cstdint>

#include "kit/remote.hpp"

namespace lab01_calls {

enum Symbol : int { kPolynomial = 0, kCounter = 1 };

// A symbol function's answer, as the worker sees it.
struct SymbolState {
  std::uint64_t address = 0;  // what the function returned (0: no symbol)
  int size_error = 0;         // cudaGetSymbolSize's cudaError_t for it
  std::uint64_t size = 0;     // its size in bytes, when size_error is 0
};

struct SymbolStateOf {
  static constexpr const char* name = "lab01 kit: the state of a symbol";
  template <class Wire>
  static void args(Wire& w, int& symbol) {
    w.value(symbol);
  }
};

// cudaMemcpyFromSymbol of `bytes` bytes; returns its cudaError_t.
struct ReadSymbol {
  static constexpr const char* name = "lab01 kit: read a symbol";
  template <class Wire>
  static void args(Wire& w, int& symbol, unsigned char*& out, std::uint64_t& bytes) {
    w.value(symbol), w.value(bytes), w.host_out(out, bytes);
  }
};

// cudaMemcpyToSymbol of `bytes` bytes; returns its cudaError_t.
struct WriteSymbol {
  static constexpr const char* name = "lab01 kit: write a symbol";
  template <class Wire>
  static void args(Wire& w, int& symbol, const unsigned char*& in, std::uint64_t& bytes) {
    w.value(symbol), w.value(bytes), w.host_in(in, bytes);
  }
};

struct SetPolynomial {
  static constexpr const char* name = "lab01::set_polynomial";
  template <class Wire>
  static void args(Wire& w, const float*& h_coefficients, int& count) {
    w.value(count), w.host_in(h_coefficients, count > 0 ? static_cast<std::size_t>(count) : 0);
  }
};

struct LaunchEvaluatePolynomial {
  static constexpr const char* name = "lab01::launch_evaluate_polynomial";
  template <class Wire>
  static void args(Wire& w, const float*& d_x, float*& d_y, int& n, int& count) {
    w.device(d_x), w.device(d_y), w.value(n), w.value(count);
  }
};

struct ResetCounter {
  static constexpr const char* name = "lab01::reset_counter";
  template <class Wire>
  static void args(Wire&) {}
};

struct ReadCounter {
  static constexpr const char* name = "lab01::read_counter";
  template <class Wire>
  static void args(Wire&) {}
};

struct LaunchCountAbove {
  static constexpr const char* name = "lab01::launch_count_above";
  template <class Wire>
  static void args(Wire& w, const float*& d_x, int& n, float& threshold, int& block_size) {
    w.device(d_x), w.value(n), w.value(threshold), w.value(block_size);
  }
};

struct LaunchBlockSums {
  static constexpr const char* name = "lab01::launch_block_sums";
  template <class Wire>
  static void args(Wire& w, const float*& d_x, float*& d_block_sums, int& n) {
    w.device(d_x), w.device(d_block_sums), w.value(n);
  }
};

struct LaunchChunkHistograms {
  static constexpr const char* name = "lab01::launch_chunk_histograms";
  template <class Wire>
  static void args(Wire& w, const float*& d_x, int& n, unsigned int*& d_counts) {
    w.device(d_x), w.value(n), w.device(d_counts);
  }
};

struct LaunchChunkHistogramsLocal {
  static constexpr const char* name = "lab01::launch_chunk_histograms_local";
  template <class Wire>
  static void args(Wire& w, const float*& d_x, int& n, unsigned int*& d_counts) {
    LaunchChunkHistograms::args(w, d_x, n, d_counts);
  }
};

}  // namespace lab01_calls
