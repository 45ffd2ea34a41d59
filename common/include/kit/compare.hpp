// Comparing a result matrix with the host reference, and explaining a mismatch: where the
// result is wrong, and what that pattern usually means.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kit/matrix.hpp"

namespace kit {

struct Tolerance {
  double atol = 1e-6;
  double rtol = 2e-5;  // relative to the sum of |terms|, see MatmulReference::magnitude
};

// Another way the result could have been computed by mistake, tried when the result is
// wrong: if got matches `expected` instead, `hint` is the diagnosis.
struct Alternative {
  std::string hint;
  std::vector<double> expected;
};

struct Comparison {
  bool ok = true;
  std::string report;  // empty when ok; lines of detail, then lines starting with "hint:"
  // Which elements were wrong, for the grader's heat map (grader/pipeline/report_pages.py): a line
  // "kit-mask RxC rxc marks", P in at most 32 x 32 cells, each the worst of its block (u never
  // written, n NaN or infinite, x wrong, . right). Empty when ok. No report shows it: the grader
  // takes it out of the test's messages (grader/pipeline/score.py).
  std::string mask;
};

// What a failed check reports (KIT_CHECK_MATRIX): the report, then the mask on a line of its own,
// last, since the grader keeps the first 4000 characters of a message and a cut mask is only
// dropped where a cut hint would be lost.
std::string failure_message(const Comparison& cmp);

// What marks a hint that says only what was observed, no cause (case aside): the grader never
// leads a lab's feedback with one (grader/pipeline/score.py, OBSERVATION_MARK), and check_matmul
// maps the terms (kit/term_map.hpp) where every hint of a failure is one.
inline constexpr const char* kObservationMark = "the kit cannot tell";
// How that hint begins when no known mistake reproduces the values.
inline constexpr const char* kCannotTellWhy = "the kit cannot tell why from the values";
// How the observation begins when every element written is 0 though the products are not (a
// k loop that never runs, or a sum kept in an int: a term map tells them apart).
inline constexpr const char* kAllWrittenZero = "every element of P that was written is 0";

// Whether a report has a hint that names a cause: a "hint:" line without the observation mark.
bool report_names_a_cause(const std::string& report);

// A failure report with a diagnosis by construction (kit/term_map.hpp, kit/sum_map.hpp) put in:
// `cause` becomes the first hint, "<inputs>, <cause>.", in place of the "cannot tell why" hint
// when it explains everything (no `example`); `example`, one wrong result's account, becomes one
// more line of detail before the hints. `inputs` says what the inputs were built to show.
std::string with_diagnosis(const std::string& report, const std::string& inputs,
                           const std::string& cause, const std::string& example);

// `tile` > 0 enables tile-shaped diagnoses (only the first tile right, last partial tile).
Comparison compare_matrix(const std::vector<float>& got, const MatmulReference& ref,
                          Tolerance tol = {}, int tile = 0,
                          const std::vector<Alternative>& alternatives = {});

// The usual index mistakes of a matrix multiply, as alternatives for compare_matrix: the
// result transposed, N read transposed, M read transposed, and the operands mixed up (N * M,
// M * M, N * N). Empty above max_width (the alternatives cost five more products).
std::vector<Alternative> matmul_index_mistakes(const std::vector<float>& M,
                                               const std::vector<float>& N, int width,
                                               int max_width = 512);

// The loop-bound mistakes of a dot product, as alternatives for compare_matrix: every element
// of P missing exactly its last term, or exactly its first. Cheap (no extra product): ref minus
// one term. M is ref.rows x inner, N is inner x ref.cols.
std::vector<Alternative> matmul_term_mistakes(const std::vector<float>& M,
                                              const std::vector<float>& N,
                                              const MatmulReference& ref, int inner);

// The product without the terms k in [first, end) of each element's dot product: ref minus those
// terms, in O(rows * cols * (end - first)) instead of a product's O(rows * inner * cols). It
// differs from the sum of the other terms by the rounding of a few double subtractions, about
// 1e-16 of the sum of |terms|, where a comparison's tolerance is 2e-5 of it. M is ref.rows x
// inner, N is inner x ref.cols.
std::vector<double> without_terms(const std::vector<float>& M, const std::vector<float>& N,
                                  const MatmulReference& ref, int inner, int first, int end);

}  // namespace kit
