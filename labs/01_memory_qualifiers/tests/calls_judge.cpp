// Lab 01's API on the judge's side: each function sends its call to a worker (kit/remote.hpp).
// Compiled twice: as lab01, served by the student's worker, and, with lab01 renamed
// lab01_reference (cmake/KitLab.cmake), served by the reference's.
#include "calls.hpp"
#include "memory_qualifiers.h"

namespace {
const kit::remote::Role role =
    kit::remote::judge_role(kit::remote::Role::KIT_CALLS_ROLE, KIT_CALLS_WORKER);

// The worker's address, as a token for the tests' null check: it means nothing here.
const void* symbol_token(int symbol) {
  const auto state =
      kit::remote::call<lab01_calls::SymbolStateOf, lab01_calls::SymbolState>(role, symbol);
  return reinterpret_cast<const void*>(state.address);
}
}  // namespace

namespace lab01 {

void set_polynomial(const float* h_coefficients, int count) {
  kit::remote::call<lab01_calls::SetPolynomial>(role, h_coefficients, count);
}

const void* polynomial_symbol() { return symbol_token(lab01_calls::kPolynomial); }

void launch_evaluate_polynomial(const float* d_x, float* d_y, int n, int count) {
  kit::remote::call<lab01_calls::LaunchEvaluatePolynomial>(role, d_x, d_y, n, count);
}

const void* counter_symbol() { return symbol_token(lab01_calls::kCounter); }

void reset_counter() { kit::remote::call<lab01_calls::ResetCounter>(role); }

unsigned int read_counter() {
  return kit::remote::call<lab01_calls::ReadCounter, unsigned int>(role);
}

void launch_count_above(const float* d_x, int n, float threshold, int block_size) {
  kit::remote::call<lab01_calls::LaunchCountAbove>(role, d_x, n, threshold, block_size);
}

void launch_block_sums(const float* d_x, float* d_block_sums, int n) {
  kit::remote::call<lab01_calls::LaunchBlockSums>(role, d_x, d_block_sums, n);
}

void launch_chunk_histograms(const float* d_x, int n, unsigned int* d_counts) {
  kit::remote::call<lab01_calls::LaunchChunkHistograms>(role, d_x, n, d_counts);
}

void launch_chunk_histograms_local(const float* d_x, int n, unsigned int* d_counts) {
  kit::remote::call<lab01_calls::LaunchChunkHistogramsLocal>(role, d_x, n, d_counts);
}

}  // namespace lab01
