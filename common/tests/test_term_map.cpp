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
  // Shown, not named: a tile written over the other leaves only zeros as well.
  CHECK(explain(right_terms([](int) { return false; })).empty());
  CHECK_THAT(kit::explain_terms(emulate(right_terms([](int) { return false; })), kTile).example,
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

TEST_CASE("a loop over k that skips the same slots of every phase is named", "[common][term_map]") {
  CHECK_THAT(explain(right_terms([](int c) { return c % kTile != 0; })),
             ContainsSubstring("terms at k = 0 of the tile (inner index 0, 4, 8)") &&
                 ContainsSubstring("the loop over k inside a phase starts at 1"));
  CHECK_THAT(explain(right_terms([](int c) { return c % kTile < 2; })),
             ContainsSubstring("terms at k = 2 to 3 of the tile (inner index 2 to 3, 6 to 7)") &&
                 ContainsSubstring("stops at k = 2; run it while k < TILE_WIDTH"));
  // Only each phase's first term taken: what threads that returned early leave, not a loop bound.
  CHECK(explain(right_terms([](int c) { return c % kTile == 0; })).empty());
}

TEST_CASE("terms missing by no rule of the chapter are shown and not named", "[common][term_map]") {
  const kit::TermDiagnosis d =
      kit::explain_terms(emulate(right_terms([](int c) { return c != 1 && c != 6; })), kTile);
  CHECK(d.cause.empty());
  CHECK_THAT(d.example, ContainsSubstring("lacks the terms of inner index 1, 6 and takes the "
                                          "others right"));
}

TEST_CASE("tile slots that keep the previous phase's values are proven by terms taken twice",
          "[common][term_map]") {
  // Phases 0-3, 4-7, 8-9: the last phase's slots 2 and 3 lie past the edge and still hold the
  // values of inner indices 6 and 7.
  const kit::TermMap map = emulate([](int i, int k) {
    auto t = right_terms()(i, k);
    t.push_back({i, 6, 6, k});
    t.push_back({i, 7, 7, k});
    return t;
  });
  CHECK(map.at(2, 3, 6).kind == kit::Term::Kind::twice);
  CHECK_THAT(kit::explain_terms(map, kTile).cause, ContainsSubstring("inner index 6 to 7 twice") &&
                                                       ContainsSubstring("fill 0 into the tile"));
  // Slots other than those past the edge taken twice: no such rule, nothing named.
  CHECK(explain([](int i, int k) {
          auto t = right_terms()(i, k);
          t.push_back({i, 1, 1, k});
          return t;
        }).empty());
}

TEST_CASE("a term one family reads as several codes and the other does not is unreadable",
          "[common][term_map]") {
  // What a kernel whose Nds lies over Mds gives: N's codes multiplied by N's codes.
  const std::size_t n = static_cast<std::size_t>(kRows) * kCols;
  std::vector<std::vector<float>> which_m(kInner, std::vector<float>(n, 0.0f));
  std::vector<std::vector<float>> which_n(kInner, std::vector<float>(n, 0.0f));
  for (int c = 0; c < kInner; ++c) {
    which_m[c][c] = 1.0f;              // a small integer, no code
    which_n[c][c] = 3.0f * (1 << 26);  // several codes' worth
  }
  const kit::TermMap map = kit::decode_terms(which_m, which_n, kRows, kInner, kCols);
  CHECK(map.at(0, 0, 0).kind == kit::Term::Kind::unreadable);
  CHECK(kit::explain_terms(map, kTile).cause.empty());
}

TEST_CASE("a map's cause stands only when it gives back the kernel's result on ordinary inputs",
          "[common][term_map]") {
  const kit::MatmulProblem p = kit::make_matmul_problem(kRows, kInner, kCols, 7);
  const kit::TermMap map = emulate(right_terms([](int c) { return c < 8; }));  // last phase gone
  std::vector<float> P(static_cast<std::size_t>(kRows) * kCols);
  for (int i = 0; i < kRows; ++i) {
    for (int k = 0; k < kCols; ++k) {
      double sum = 0.0;
      for (int c = 0; c < 8; ++c) sum += double(p.M[i * kInner + c]) * p.N[c * kCols + k];
      P[i * kCols + k] = static_cast<float>(sum);
    }
  }
  CHECK(kit::map_replays(map, p, P));
  P[17] += 0.5f;  // one element the map does not explain
  CHECK_FALSE(kit::map_replays(map, p, P));
}

TEST_CASE("M read with rows of P's width instead of its own is named", "[common][term_map]") {
  // M is 6 x 4, N 4 x 9: a kernel reading M[i * 9 + c] reads past M's 24 elements from row 3 on.
  constexpr int rows = 6, inner = 4, cols = 9;
  const auto product = [&](const std::vector<float>& M, const std::vector<float>& N) {
    std::vector<float> P(static_cast<std::size_t>(rows) * cols);
    for (int i = 0; i < rows; ++i) {
      for (int k = 0; k < cols; ++k) {
        float sum = 0.0f;
        for (int c = 0; c < inner; ++c) {
          const int flat = i * cols + c;
          sum += (flat < rows * inner ? M[flat] : 0.5f) * N[c * cols + k];  // 0.5: not a code
        }
        P[i * cols + k] = sum;
      }
    }
    return P;
  };
  std::vector<std::vector<float>> which_m, which_n;
  for (int c = 0; c < inner; ++c) {
    which_m.push_back(product(kit::which_m_M(rows, inner), kit::which_m_N(inner, cols, c)));
    which_n.push_back(product(kit::which_n_M(rows, inner), kit::which_n_N(inner, cols, c)));
  }
  const kit::TermMap map = kit::decode_terms(which_m, which_n, rows, inner, cols);
  CHECK_THAT(kit::explain_terms(map, 16).cause,
             ContainsSubstring("rows were 9 floats long (K, the columns of N and P)") &&
                 ContainsSubstring("M has J columns"));
}

TEST_CASE("a loop over k that steps by more than 1 is named", "[common][term_map]") {
  CHECK_THAT(explain(right_terms([](int c) { return c % 2 == 0; })),
             ContainsSubstring("the loop over k steps by 2; step it by 1"));
  CHECK_THAT(explain(right_terms([](int c) { return c % 3 == 0; })),
             ContainsSubstring("multiple of 3 (0, 3, 6, ...)"));
  // A step of a whole tile is what zeros read from stale shared memory may look like: not named.
  CHECK(explain(right_terms([](int c) { return c % kTile == 0; })).find("steps by") ==
        std::string::npos);
}

TEST_CASE("M and N read out of step by one are named without blaming either load",
          "[common][term_map]") {
  // M's index one to the right: the last term reads past M's row, here as nothing.
  const std::string cause = explain([](int i, int k) {
    std::vector<std::array<int, 4>> t;
    for (int c = 0; c + 1 < kInner; ++c) t.push_back({i, c + 1, c, k});
    return t;
  });
  CHECK_THAT(cause, ContainsSubstring("multiplied M[i][c + 1] with N[c][k]") &&
                        ContainsSubstring("out of step by 1") &&
                        ContainsSubstring("cannot tell which"));
}
