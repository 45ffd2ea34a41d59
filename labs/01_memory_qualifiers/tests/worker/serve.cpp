// Lab 01's worker: the calls it serves from the student's code (or, built as the reference
// worker, from the reference's), and the kit's three symbol calls (calls.hpp says why).
// kit/remote.hpp's worker main does the rest.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "../calls.hpp"
#include "memory_qualifiers.h"

namespace {

const void* symbol(int which) {
  return which == lab01_calls::kPolynomial ? lab01::polynomial_symbol() : lab01::counter_symbol();
}

// A failed symbol call is an answer here, not an error of the worker's: cleared, so that it is
// not reported again after the call.
int answer(cudaError_t code) {
  (void)cudaGetLastError();
  return static_cast<int>(code);
}

lab01_calls::SymbolState symbol_state(int which) {
  lab01_calls::SymbolState state;
  const void* s = symbol(which);
  state.address = reinterpret_cast<std::uint64_t>(s);
  std::size_t bytes = 0;
  state.size_error =
      s == nullptr ? answer(cudaErrorInvalidSymbol) : answer(cudaGetSymbolSize(&bytes, s));
  state.size = bytes;
  return state;
}

int read_symbol(int which, unsigned char* out, std::uint64_t bytes) {
  return answer(cudaMemcpyFromSymbol(out, symbol(which), bytes));
}

int write_symbol(int which, const unsigned char* in, std::uint64_t bytes) {
  return answer(cudaMemcpyToSymbol(symbol(which), in, bytes));
}

[[maybe_unused]] const bool served[] = {
    kit::remote::serve<lab01_calls::SymbolStateOf>(&symbol_state),
    kit::remote::serve<lab01_calls::ReadSymbol>(&read_symbol),
    kit::remote::serve<lab01_calls::WriteSymbol>(&write_symbol),
    kit::remote::serve<lab01_calls::SetPolynomial>(&lab01::set_polynomial),
    kit::remote::serve<lab01_calls::LaunchEvaluatePolynomial>(&lab01::launch_evaluate_polynomial),
    kit::remote::serve<lab01_calls::ResetCounter>(&lab01::reset_counter),
    kit::remote::serve<lab01_calls::ReadCounter>(&lab01::read_counter),
    kit::remote::serve<lab01_calls::LaunchCountAbove>(&lab01::launch_count_above),
    kit::remote::serve<lab01_calls::LaunchBlockSums>(&lab01::launch_block_sums),
    kit::remote::serve<lab01_calls::LaunchChunkHistograms>(&lab01::launch_chunk_histograms),
    kit::remote::serve<lab01_calls::LaunchChunkHistogramsLocal>(
        &lab01::launch_chunk_histograms_local),
};

}  // namespace
