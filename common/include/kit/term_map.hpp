// Diagnosis by construction for a matrix product P = M N (labs 02-05): the student's launch runs
// again on inputs whose values say where they came from, so that each element of P tells which
// products it summed, and a wrong kernel's mistake is read off that map instead of guessed from
// the shape of its error.
//
// Two families of runs, one run per row c of N (inner of them each):
// - "which M": M[a][b] = kCode + a * inner + b, N's row c all ones and every other row zero. An
//   element of P that multiplied exactly one element of N's row c holds that M element's code;
//   none holds 0; two or more hold at least 2 * kCode, which no single code reaches.
// - "which N column": M all ones, N[c][k'] = kCode + k', every other row zero: the column of
//   N's row c that the element read.
// All values are integers below 2^24, so every sum is exact in float.
#pragma once

#include <string>
#include <vector>

#include "kit/matmul_harness.hpp"

namespace kit {

// What one element of P took from one row of N.
// twice: the right term, M[i][c] x N[c][k], taken twice (a tile slot that kept the previous
// phase's values); several: two or more codes in both families, no other reading.
struct Term {
  enum class Kind { none, one, twice, several, unreadable };
  Kind kind = Kind::none;
  int m_row = -1, m_col = -1;  // the M element it multiplied with (kind one)
  int n_col = -1;              // the column of N's row it read (kind one)
};

struct TermMap {
  int rows = 0, inner = 0, cols = 0;
  std::vector<Term> terms;    // [(i * cols + k) * inner + c]
  std::vector<char> written;  // [i * cols + k]: every run wrote the element
  const Term& at(int i, int k, int c) const {
    return terms[(static_cast<std::size_t>(i) * cols + k) * inner + c];
  }
  bool was_written(int i, int k) const {
    return written[static_cast<std::size_t>(i) * cols + k] != 0;
  }
};

// The inputs of run c of each family (row-major, M rows x inner, N inner x cols).
std::vector<float> which_m_M(int rows, int inner);
std::vector<float> which_m_N(int inner, int cols, int c);
std::vector<float> which_n_M(int rows, int inner);
std::vector<float> which_n_N(int inner, int cols, int c);

// The map from the products of both families' runs (run c of each: rows x cols floats, poison
// where the kernel did not write).
TermMap decode_terms(const std::vector<std::vector<float>>& which_m,
                     const std::vector<std::vector<float>>& which_n, int rows, int inner, int cols);

// Whether a product of this shape can be mapped with every code exact (1 <= rows * inner <= 8192,
// cols <= 8192, inner <= 256); map_terms and decode_terms refuse the others.
bool term_map_fits(int rows, int inner, int cols);

// Runs `launch` on both families' inputs (2 * inner launches, P poisoned before each) and
// decodes what came back.
TermMap map_terms(const MatmulLaunch& launch, int rows, int inner, int cols);

// What a map says: `cause`, the mistake it proves in the lab's terms, named only when every
// element of P agrees with it; else `example`, what one wrong element took against what it
// should have, so that the student sees the map itself. Both empty for a correct product.
struct TermDiagnosis {
  std::string cause;
  std::string example;
};
TermDiagnosis explain_terms(const TermMap& map, int tile);

// Whether the map, read as the kernel's own recipe (each element the sum of the terms it lists),
// gives back `P`, the kernel's result on the problem's ordinary inputs: an element whose terms
// are all known (none, one, twice) must match; one with a term read as several or unreadable is
// not checked. A cause is named only when it does, so that a kernel whose values the codes cannot
// describe (one tile written over another, say) is not given a map's cause. The two rules built
// on terms read as several (N transposed, N's rows without the phase offset) rest instead on
// both families reading several codes in exactly the pattern they name (decode_terms).
bool map_replays(const TermMap& map, const MatmulProblem& problem, const std::vector<float>& P);

// What one wrong element of the map took, term by term (the example explain_terms gives when it
// names no cause); empty when every written element is right.
std::string wrong_element_text(const TermMap& map);

// "from to to" (inclusive), or the one index when they are equal: how the diagnoses of the term
// and sum maps (kit/sum_map.hpp) say a run of indices.
std::string index_range(int from, int to);

// Puts a diagnosis into a comparison's report (check_matmul does, where the values proved no
// cause): the proven cause becomes the report's first hint, in place of "the kit cannot tell
// why" when it explains every wrong element, and the example one more line of detail.
void apply_term_diagnosis(Comparison& cmp, const TermDiagnosis& diagnosis);

}  // namespace kit
