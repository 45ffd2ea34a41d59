// kit/term_map.hpp on the host: kernels with the chapter's mistakes, emulated term by term on
// the map's inputs, and the cause the map proves for each.
#include <array>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <functional>
#include <vector>

#include "kit/cublas_matmul.hpp"
#include "kit/poison.hpp"
#include "kit/term_map.hpp"
#include "kit/testing.hpp"

using Catch::Matchers::ContainsSubstring;

namespace {

constexpr int kRows = 10, kInner = 10, kCols = 10, kTile = 4;  // phases 0-3, 4-7, 8-9

// The products an emulated kernel sums for P[i][k]: {a, b, c, kk} is M[a][b] * N[c][kk].
using Terms = std::function<std::vector<std::array<int, 4>>(int i, int k)>;

kit::TermMap emulate(const Terms& terms, const std::function<bool(int, int)>& writes = {}) {
  std::vector<std::vector<float>> which_m, which_n;
  const auto product = [&](const std::vector<float>& M, const std::vector<float>& N) {
    std::vector<float> P(kRows * kCols, kit::poison_value());
    for (int i = 0; i < kRows; ++i) {
      for (int k = 0; k < kCols; ++k) {
        if (writes && !writes(i, k)) continue;
        float sum = 0.0f;
        for (const auto& [a, b, c, kk] : terms(i, k)) sum += M[a * kInner + b] * N[c * kCols + kk];
        P[i * kCols + k] = sum;
      }
    }
    return P;
  };
  for (int c = 0; c < kInner; ++c) {
    which_m.push_back(product(kit::which_m_M(kRows, kInner), kit::which_m_N(kInner, kCols, c)));
    which_n.push_back(product(kit::which_n_M(kRows, kInner), kit::which_n_N(kInner, kCols, c)));
  }
  return kit::decode_terms(which_m, which_n, kRows, kInner, kCols);
}

// The right terms of P[i][k] for inner indices c where keep(c).
Terms right_terms(const std::function<bool(int)>& keep = [](int) { return true; }) {
  return [keep](int i, int k) {
    std::vector<std::array<int, 4>> t;
    for (int c = 0; c < kInner; ++c) {
      if (keep(c)) t.push_back({i, c, c, k});
    }
    return t;
  };
}

std::string explain(const Terms& terms, const std::function<bool(int, int)>& writes = {}) {
  return kit::explain_terms(emulate(terms, writes), kTile).cause;
}

}  // namespace

TEST_CASE("a correct product maps every term to its place and is explained by nothing",
          "[common][term_map]") {
  const kit::TermMap map = emulate(right_terms());
  const kit::Term& t = map.at(3, 7, 5);
  CHECK(t.kind == kit::Term::Kind::one);
  CHECK((t.m_row == 3 && t.m_col == 5 && t.n_col == 7));
  CHECK(kit::explain_terms(map, kTile).cause.empty());
  CHECK(kit::explain_terms(map, kTile).example.empty());
}

TEST_CASE("two terms taken from one row of N read as several and never as a third element",
          "[common][term_map]") {
  const kit::TermMap map = emulate([](int i, int k) {
    return std::vector<std::array<int, 4>>{{i, 1, 1, k}, {i, 2, 1, k}};
  });
  CHECK(map.at(0, 0, 1).kind == kit::Term::Kind::several);
  CHECK(map.at(0, 0, 2).kind == kit::Term::Kind::none);
}

TEST_CASE("the term map names the mistake of the chapter that it proves", "[common][term_map]") {
  CHECK_THAT(explain(right_terms([](int c) { return c < kInner - 1; })),
             ContainsSubstring("lacks its last term, inner index 9"));
  CHECK_THAT(explain(right_terms([](int c) { return c > 0; })),
             ContainsSubstring("lacks its first term"));
  CHECK_THAT(explain(right_terms([](int c) { return c < 8; })),
             ContainsSubstring("lacks the products of the last phase, inner index 8 to 9"));
  CHECK_THAT(explain(right_terms([](int c) { return c >= 8; })),
             ContainsSubstring("running sum is reset in every phase"));
  CHECK_THAT(explain(right_terms([](int c) { return c >= kTile; })),  // phases 1 and 2 only
             ContainsSubstring("lacks the products of the first phase, inner index 0 to 3: the "
                               "phase loop starts one phase late"));
  CHECK_THAT(explain(right_terms([](int) { return false; })),
             ContainsSubstring("no element of P took any product"));
  CHECK_THAT(explain([](int i, int k) {
               std::vector<std::array<int, 4>> t;
               for (int c = 0; c < kInner; ++c) t.push_back({i, c % kTile, c, k});
               return t;
             }),
             ContainsSubstring("M's column index lacks the phase offset"));
  CHECK_THAT(explain([](int i, int k) {
               std::vector<std::array<int, 4>> t;
               for (int c = 0; c < kInner; ++c) t.push_back({c, i, c, k});
               return t;
             }),
             ContainsSubstring("M is read transposed"));
  CHECK_THAT(explain([](int i, int k) {
               std::vector<std::array<int, 4>> t;
               for (int c = 0; c < kInner; ++c) t.push_back({i, c, k, c});  // N[k][c]
               return t;
             }),
             ContainsSubstring("N is read transposed"));
  CHECK_THAT(explain([](int i, int k) {
               std::vector<std::array<int, 4>> t;
               for (int c = 0; c < kInner; ++c) t.push_back({k, c, c, i});  // P[k][i]
               return t;
             }),
             ContainsSubstring("P is written transposed"));
}

TEST_CASE("a last term that is a whole phase names both loops that could have stopped short",
          "[common][term_map]") {
  const kit::TermMap map = emulate(right_terms([](int c) { return c < 9; }));  // term 9 of 10 gone
  CHECK_THAT(kit::explain_terms(map, 3).cause,  // tiles of 3: the last phase is the one term 9
             ContainsSubstring("the whole of the last phase") &&
                 ContainsSubstring("round the number of phases up"));
  CHECK_THAT(kit::explain_terms(map, 5).cause,  // tiles of 5: 10 is a multiple, nothing to round
             !ContainsSubstring("round"));
}

TEST_CASE("elements never written are said as the rows or columns they make up",
          "[common][term_map]") {
  CHECK(explain(right_terms(), [](int i, int) { return i < 8; }) ==
        "rows 8 to 9 of P were never written: no thread computes them (the grid has too few "
        "blocks in y, or the row guard stops early)");
  CHECK_THAT(explain(right_terms(), [](int, int k) { return k < 4; }),
             ContainsSubstring("columns 4 to 9 of P were never written"));
  CHECK_THAT(
      explain(right_terms([](int c) { return c < kInner - 1; }), [](int i, int) { return i < 8; }),
      ContainsSubstring("rows 8 to 9") && ContainsSubstring("lacks its last term"));
}

TEST_CASE("a kernel that writes nothing is not said to have too few blocks", "[common][term_map]") {
  CHECK(explain(right_terms(), [](int, int) { return false; }) ==
        "no element of P was written: the kernel did not run, or wrote somewhere else");
}

TEST_CASE(
    "rows never written beside wrong terms no rule explains keep both the cause and an example",
    "[common][term_map]") {
  const kit::TermDiagnosis d = kit::explain_terms(emulate(
                                                      [](int i, int k) {
                                                        auto t = right_terms()(i, k);
                                                        if (i == 3 && k == 4) t[2] = {3, 0, 2, 4};
                                                        return t;
                                                      },
                                                      [](int i, int) { return i < 8; }),
                                                  kTile);
  CHECK_THAT(d.cause, ContainsSubstring("rows 8 to 9 of P were never written"));
  CHECK_THAT(d.example, ContainsSubstring("P[3][4] is wrong in 1 of its 10 terms"));
  kit::Comparison cmp{false, "wrong\nhint: the kit cannot tell why\n"};
  kit::apply_term_diagnosis(cmp, d);
  CHECK_THAT(cmp.report, ContainsSubstring("hint: the kit cannot tell why"));  // not all explained
  CHECK_THAT(cmp.report,
             ContainsSubstring("on inputs that say where each term came from, P[3][4]"));
}

TEST_CASE("a mistake the map proves no rule for is shown as one element's terms",
          "[common][term_map]") {
  const kit::TermDiagnosis d = kit::explain_terms(emulate([](int i, int k) {
                                                    auto t = right_terms()(i, k);
                                                    if (i == 3 && k == 4) t[2] = {3, 0, 2, 4};
                                                    return t;
                                                  }),
                                                  kTile);
  CHECK(d.cause.empty());  // one element: no rule of the chapter is proven
  CHECK_THAT(d.example, ContainsSubstring("P[3][4] is wrong in 1 of its 10 terms"));
  CHECK_THAT(
      d.example,
      ContainsSubstring("inner index 2 it took M[3][0] x N[2][4] instead of M[3][2] x N[2][4]"));
}

TEST_CASE("a proven cause becomes the first hint in place of the kit's cannot-tell-why",
          "[common][term_map]") {
  kit::Comparison cmp{false,
                      "3 elements wrong\nhint: the kit cannot tell why from the values: 3 "
                      "element(s)\nhint: README section 3\n"};
  kit::apply_term_diagnosis(cmp, {"every element of P lacks its last term, inner index 9", ""});
  CHECK(cmp.report ==
        "3 elements wrong\nhint: on inputs that say where each term came from, every element of P "
        "lacks its last term, inner index 9.\nhint: README section 3\n");
  kit::Comparison seen{false, "3 elements wrong\nhint: the kit cannot tell why\n"};
  kit::apply_term_diagnosis(seen, {"", "P[3][4] is wrong in 1 of its 10 terms"});
  CHECK(seen.report ==
        "3 elements wrong\non inputs that say where each term came from, P[3][4] is wrong in 1 of "
        "its 10 terms.\nhint: the kit cannot tell why\n");
}

TEST_CASE("a term map refuses shapes whose codes would not stay exact", "[common][term_map]") {
  CHECK_THROWS_AS(kit::decode_terms({}, {}, 100, 100, 10), std::invalid_argument);
}

TEST_CASE("a correct kernel's term map made on the device shows every term in its place",
          "[common][term_map][gpu]") {
  KIT_REQUIRE_GPU();
  kit::CublasMatmul cublas;  // FP32 without tensor cores: every code sums exactly
  const kit::TermMap map = kit::map_terms(
      [&](const float* d_M, const float* d_N, float* d_P) { cublas(d_M, d_N, d_P, 12); }, 12, 12,
      12);
  CHECK(map.at(11, 0, 7).kind == kit::Term::Kind::one);
  CHECK(kit::explain_terms(map, 4).cause.empty());
  CHECK(kit::explain_terms(map, 4).example.empty());
}
