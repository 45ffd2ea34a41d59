// The comparison's verdicts and diagnoses, on hand-made wrong results.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kit/compare.hpp"
#include "kit/poison.hpp"

using Catch::Matchers::ContainsSubstring;

namespace {

struct Case {
  int width;
  std::vector<float> M, N;
  kit::MatmulReference ref;
  std::vector<float> right;  // the correct result in float
};

Case make_case(int width) {
  Case c{width, kit::random_matrix(width, width, 11), kit::random_matrix(width, width, 12), {}, {}};
  c.ref = kit::reference_matmul(c.M, c.N, width, width, width);
  for (double v : c.ref.value) c.right.push_back(static_cast<float>(v));
  return c;
}

// Poisons every element of a width x width result in row or column `edge` and past it, as a
// kernel that launched too few blocks leaves them.
void leave_unwritten_from(std::vector<float>& got, int width, int edge) {
  for (int r = 0; r < width; ++r)
    for (int col = 0; col < width; ++col)
      if (r >= edge || col >= edge) got[r * width + col] = kit::poison_value();
}

}  // namespace

TEST_CASE("comparison accepts the correctly rounded result", "[common]") {
  const Case c = make_case(40);
  const kit::Comparison cmp = kit::compare_matrix(c.right, c.ref);
  CHECK(cmp.ok);
  CHECK(cmp.report.empty());
}

TEST_CASE("comparison says when nothing was written", "[common]") {
  const Case c = make_case(20);
  std::vector<float> got(c.right.size(), kit::poison_value());
  const kit::Comparison cmp = kit::compare_matrix(got, c.ref);
  CHECK_FALSE(cmp.ok);
  CHECK_THAT(cmp.report, ContainsSubstring("hint: no element of the result was written"));
}

TEST_CASE("comparison says when the last rows and columns are missing", "[common]") {
  const Case c = make_case(20);
  std::vector<float> got = c.right;
  leave_unwritten_from(got, 20, 16);
  const kit::Comparison cmp = kit::compare_matrix(got, c.ref);
  CHECK_FALSE(cmp.ok);
  CHECK_THAT(cmp.report, ContainsSubstring("the last 4 row(s) and the last 4 column(s)") &&
                             ContainsSubstring("Round the number of blocks up"));
  CHECK_THAT(cmp.report, ContainsSubstring("P[0][16]: got") && ContainsSubstring("never written"));
}

TEST_CASE("comparison marks which elements were wrong for the grader's heat map", "[common]") {
  // 20 x 20: one cell an element. The last 4 rows and columns never written, one NaN, one wrong.
  const Case c = make_case(20);
  std::vector<float> got = c.right;
  leave_unwritten_from(got, 20, 16);
  got[0] = std::numeric_limits<float>::quiet_NaN();
  got[21] += 5.0f;
  const kit::Comparison cmp = kit::compare_matrix(got, c.ref);
  REQUIRE(cmp.mask.rfind("kit-mask 20x20 20x20 ", 0) == 0);
  const std::string marks = cmp.mask.substr(21);
  REQUIRE(marks.size() == 400);
  CAPTURE(marks);
  CHECK(marks[0] == 'n');
  CHECK(marks[1] == '.');
  CHECK(marks[21] == 'x');
  CHECK(marks[16] == 'u');
  CHECK(marks[19 * 20] == 'u');
  CHECK(std::count(marks.begin(), marks.end(), 'u') == 400 - 16 * 16);
  CHECK(std::count(marks.begin(), marks.end(), '.') == 16 * 16 - 2);

  // 100 x 100: 32 x 32 cells, each the worst of its block; one wrong element marks one cell.
  const Case big = make_case(100);
  std::vector<float> one = big.right;
  one[99 * 100 + 99] += 5.0f;
  const kit::Comparison cmp_big = kit::compare_matrix(one, big.ref);
  REQUIRE(cmp_big.mask.rfind("kit-mask 100x100 32x32 ", 0) == 0);
  const std::string cells = cmp_big.mask.substr(23);
  REQUIRE(cells.size() == 32 * 32);
  CHECK(std::count(cells.begin(), cells.end(), 'x') == 1);
  CHECK(cells.back() == 'x');

  // The failure's message ends with the mask, after every hint, a diagnosis added later
  // included: the grader cuts a long message at its end, and a cut mask costs less than a cut
  // hint. The report itself (what hints are read from) holds no mask.
  kit::Comparison diagnosed = cmp;
  diagnosed.report = kit::with_diagnosis(cmp.report, "on inputs", "a cause", "");
  const std::string message = kit::failure_message(diagnosed);
  CAPTURE(message);
  CHECK(diagnosed.report.find("kit-mask") == std::string::npos);
  CHECK(message.rfind("\nkit-mask 20x20 20x20 ") == message.rfind('\n', message.size() - 2));
  CHECK(message.find("hint: on inputs, a cause.") < message.find("kit-mask"));
}

TEST_CASE("comparison recognises a transposed result and N read transposed", "[common]") {
  const Case c = make_case(24);
  const auto mistakes = kit::matmul_index_mistakes(c.M, c.N, 24);
  REQUIRE(mistakes.size() == 6);

  std::vector<float> transposed(c.right.size());
  for (int r = 0; r < 24; ++r)
    for (int col = 0; col < 24; ++col) transposed[col * 24 + r] = c.right[r * 24 + col];
  CHECK_THAT(kit::compare_matrix(transposed, c.ref, {}, 0, mistakes).report,
             ContainsSubstring("hint: the result is transposed"));

  std::vector<float> n_transposed(c.right.size());
  for (int r = 0; r < 24; ++r)
    for (int col = 0; col < 24; ++col) {
      double sum = 0;
      for (int k = 0; k < 24; ++k) sum += double(c.M[r * 24 + k]) * c.N[col * 24 + k];
      n_transposed[r * 24 + col] = static_cast<float>(sum);
    }
  CHECK_THAT(kit::compare_matrix(n_transposed, c.ref, {}, 0, mistakes).report,
             ContainsSubstring("hint: N is read transposed"));
}

TEST_CASE("comparison recognises the operands swapped or one of them twice", "[common]") {
  const Case c = make_case(24);
  const auto mistakes = kit::matmul_index_mistakes(c.M, c.N, 24);
  const auto product = [](const std::vector<float>& A, const std::vector<float>& B) {
    std::vector<float> out(A.size());
    for (int r = 0; r < 24; ++r)
      for (int col = 0; col < 24; ++col) {
        double sum = 0;
        for (int k = 0; k < 24; ++k) sum += double(A[r * 24 + k]) * B[k * 24 + col];
        out[r * 24 + col] = static_cast<float>(sum);
      }
    return out;
  };
  CHECK_THAT(kit::compare_matrix(product(c.N, c.M), c.ref, {}, 0, mistakes).report,
             ContainsSubstring("hint: the result is N times M"));
  CHECK_THAT(kit::compare_matrix(product(c.M, c.M), c.ref, {}, 0, mistakes).report,
             ContainsSubstring("hint: the result is M times M"));
  CHECK_THAT(kit::compare_matrix(product(c.N, c.N), c.ref, {}, 0, mistakes).report,
             ContainsSubstring("hint: the result is N times N"));
}

TEST_CASE("comparison does not blame rounding for a gap wider than a block", "[common]") {
  const Case c = make_case(80);
  std::vector<float> got = c.right;
  for (int r = 40; r < 80; ++r)
    for (int col = 0; col < 80; ++col) got[r * 80 + col] = kit::poison_value();
  const kit::Comparison cmp = kit::compare_matrix(got, c.ref);
  CHECK_THAT(cmp.report, ContainsSubstring("the last 40 row(s) were never written") &&
                             ContainsSubstring("more than a grid rounded down can miss") &&
                             !ContainsSubstring("Round the number of blocks up"));
}

TEST_CASE("comparison tells computed NaN apart from unwritten elements", "[common]") {
  const Case c = make_case(8);
  std::vector<float> got = c.right;
  got[9] = std::numeric_limits<float>::quiet_NaN();
  const kit::Comparison cmp = kit::compare_matrix(got, c.ref);
  CHECK_FALSE(cmp.ok);
  CHECK_THAT(cmp.report, ContainsSubstring("1 NaN or infinite") &&
                             ContainsSubstring("0 never written") &&
                             ContainsSubstring("never initialised"));
}

TEST_CASE("comparison recognises a result where only the first tile is right", "[common]") {
  const Case c = make_case(32);
  std::vector<float> got = c.right;
  for (int r = 0; r < 32; ++r)
    for (int col = 0; col < 32; ++col)
      if (r >= 16 || col >= 16) got[r * 32 + col] += 1.0f;
  // Said as what was seen: two mistakes leave this shape.
  CHECK_THAT(kit::compare_matrix(got, c.ref, {}, 16).report,
             ContainsSubstring(std::string("hint: ") + kit::kCannotTellWhy +
                               ": only the first tile of P is right (rows and columns 0 to 15)"));
}

TEST_CASE("comparison recognises a result where only the partial last tile is wrong", "[common]") {
  const Case c = make_case(20);
  std::vector<float> got = c.right;
  got[19 * 20 + 3] += 0.5f;
  got[2 * 20 + 17] -= 0.5f;
  const kit::Comparison cmp = kit::compare_matrix(got, c.ref, {}, 16);
  // Said as what was seen: several mistakes leave this shape, so it names none.
  CHECK_THAT(cmp.report, ContainsSubstring("2 wrong") &&
                             ContainsSubstring(std::string("hint: ") + kit::kCannotTellWhy +
                                               ": 2 element(s) are wrong, all in the last, "
                                               "partial tiles (rows from 16 or columns from 16)"));
}

TEST_CASE("comparison tolerates float rounding but not a missing term", "[common]") {
  const Case c = make_case(256);
  // Accumulating in float in k order, as a kernel does, stays inside the tolerance.
  std::vector<float> in_float(c.right.size());
  for (int r = 0; r < 256; ++r)
    for (int col = 0; col < 256; ++col) {
      float sum = 0;
      for (int k = 0; k < 256; ++k) sum += c.M[r * 256 + k] * c.N[k * 256 + col];
      in_float[r * 256 + col] = sum;
    }
  CHECK(kit::compare_matrix(in_float, c.ref).ok);

  std::vector<float> missing_last_term = in_float;
  for (int r = 0; r < 256; ++r)
    for (int col = 0; col < 256; ++col)
      missing_last_term[r * 256 + col] -= c.M[r * 256 + 255] * c.N[255 * 256 + col];
  const kit::Comparison cmp = kit::compare_matrix(missing_last_term, c.ref);
  CHECK_FALSE(cmp.ok);
  // Without the loop-bound alternatives the pattern proves nothing: it says what it saw.
  CHECK_THAT(cmp.report, ContainsSubstring("cannot tell why") &&
                             ContainsSubstring("in 256 of 256 rows and 256 of 256 columns"));
  const kit::Comparison named = kit::compare_matrix(
      missing_last_term, c.ref, {}, 0, kit::matmul_term_mistakes(c.M, c.N, c.ref, 256));
  CHECK_THAT(named.report,
             ContainsSubstring("misses exactly the last term") && ContainsSubstring("k < width"));
}

TEST_CASE("comparison names a dot product that skips its first term", "[common]") {
  const Case c = make_case(40);
  std::vector<float> got = c.right;
  for (int r = 0; r < 40; ++r)
    for (int col = 0; col < 40; ++col) got[r * 40 + col] -= c.M[r * 40] * c.N[col];
  const kit::Comparison cmp =
      kit::compare_matrix(got, c.ref, {}, 0, kit::matmul_term_mistakes(c.M, c.N, c.ref, 40));
  CHECK_THAT(cmp.report, ContainsSubstring("misses exactly the first term"));
}

TEST_CASE("a product without some terms is the sum of the others to within rounding", "[common]") {
  const int rows = 19, inner = 70, cols = 23;
  const auto M = kit::random_matrix(rows, inner, 31);
  const auto N = kit::random_matrix(inner, cols, 32);
  const kit::MatmulReference ref = kit::reference_matmul(M, N, rows, inner, cols);
  // The kept terms as a product of their own: M's columns and N's rows outside [first, end).
  auto others = [&](int first, int end) {
    const int kept = inner - (end - first);
    std::vector<float> M_kept, N_kept;
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < inner; ++k)
        if (k < first || k >= end) M_kept.push_back(M[r * inner + k]);
    for (int k = 0; k < inner; ++k)
      if (k < first || k >= end)
        N_kept.insert(N_kept.end(), N.begin() + k * cols, N.begin() + (k + 1) * cols);
    return kit::reference_values(M_kept, N_kept, rows, kept, cols);
  };
  for (auto [first, end] :
       {std::pair{64, 70}, std::pair{0, 1}, std::pair{69, 70}, std::pair{10, 42}}) {
    CAPTURE(first, end);
    const std::vector<double> got = kit::without_terms(M, N, ref, inner, first, end);
    const std::vector<double> want = others(first, end);
    REQUIRE(got.size() == want.size());
    double worst = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::fabs(got[i] - want[i]) / ref.magnitude[i]);
    }
    CHECK(worst < 1e-14);  // the comparison's tolerance is 2e-5 of the magnitude
  }
  CHECK(kit::without_terms(M, N, ref, inner, 5, 5) == ref.value);
  CHECK_THROWS_AS(kit::without_terms(M, N, ref, inner, 60, 71), std::invalid_argument);
  CHECK_THROWS_AS(kit::without_terms(M, N, ref, inner, 9, 8), std::invalid_argument);
  CHECK_THROWS_AS(kit::without_terms(M, N, ref, inner + 1, 0, 1), std::invalid_argument);
}

TEST_CASE("comparison says when every value is a whole number", "[common]") {
  const Case c = make_case(24);
  // Whole numbers, not all 0: the true sums rounded toward zero (sums of 24 products reach
  // beyond 1).
  std::vector<float> got(c.right.size());
  for (std::size_t i = 0; i < got.size(); ++i) got[i] = std::trunc(c.right[i]);
  const kit::Comparison cmp = kit::compare_matrix(got, c.ref);
  CHECK_THAT(cmp.report, ContainsSubstring("every value of P is a whole number") &&
                             ContainsSubstring("declared int"));
}

TEST_CASE("comparison does not blame an int for a result that is all zero", "[common]") {
  const Case c = make_case(24);
  const std::vector<float> zeros(c.right.size(), 0.0f);
  const kit::Comparison cmp = kit::compare_matrix(zeros, c.ref);
  CHECK_THAT(cmp.report, ContainsSubstring("every element of P that was written is 0") &&
                             ContainsSubstring("cannot tell why") &&
                             !ContainsSubstring("whole number"));
}

TEST_CASE(
    "comparison names a copy back of elements instead of bytes only where no grid explains it",
    "[common]") {
  for (int width : {33, 64}) {
    CAPTURE(width);
    const Case c = make_case(width);
    // cudaMemcpy(h_P, d_P, width * width, ...): width * width bytes, a quarter of the floats,
    // the last one perhaps half copied.
    std::vector<float> got(c.right.size(), kit::poison_value());
    const std::size_t bytes = static_cast<std::size_t>(width) * width;
    std::memcpy(got.data(), c.right.data(), bytes);
    const kit::Comparison cmp = kit::compare_matrix(got, c.ref);
    CHECK_THAT(cmp.report, ContainsSubstring("exactly the first quarter of P arrived") &&
                               ContainsSubstring("sizeof(float)"));
    CHECK_THAT(cmp.report, !ContainsSubstring("Round the number of blocks up"));
    // Cut inside a row (33 x 33: 272.25 floats), only a byte count explains it; a quarter that is
    // whole rows (64 x 64: rows 0 to 15) a grid over those rows explains as well, so both are said
    // and neither is named.
    if (width == 33) {
      CHECK_THAT(cmp.report, ContainsSubstring("the copy back moved as many bytes as P has "
                                               "elements") &&
                                 !ContainsSubstring(kit::kCannotTellWhy));
    } else {
      CHECK_THAT(cmp.report, ContainsSubstring(kit::kCannotTellWhy) &&
                                 ContainsSubstring("rows 0 to 15 of 64") &&
                                 ContainsSubstring("a grid whose blocks cover only these rows"));
    }
  }
}

TEST_CASE("comparison describes a result that stops mid-row without naming a cause", "[common]") {
  const Case c = make_case(20);
  std::vector<float> got(c.right.size(), kit::poison_value());
  std::copy(c.right.begin(), c.right.begin() + 150, got.begin());
  const kit::Comparison cmp = kit::compare_matrix(got, c.ref);
  CHECK_THAT(cmp.report,
             ContainsSubstring("only the first 150 of 400") && ContainsSubstring("cannot tell"));
}

TEST_CASE("comparison refuses a result of the wrong size", "[common]") {
  const Case c = make_case(4);
  const std::vector<float> got(15, 0.0f);
  const kit::Comparison cmp = kit::compare_matrix(got, c.ref);
  CHECK_FALSE(cmp.ok);
  CHECK_THAT(cmp.report, ContainsSubstring("15 elements, expected 16"));
}

TEST_CASE("a band of unwritten rows is blamed on the grid only where a grid rounded down leaves it",
          "[common]") {
  const Case c = make_case(40);  // with TILE_WIDTH 16 a grid rounded down leaves rows 32 to 39
  const auto without_last_rows = [&](int missing) {
    std::vector<float> got = c.right;
    std::fill(got.end() - missing * 40, got.end(), kit::poison_value());
    return kit::compare_matrix(got, c.ref, {}, 16).report;
  };
  CHECK_THAT(without_last_rows(8), ContainsSubstring("Round the number of blocks up"));
  // One row short is a store guard's mistake as likely as the grid's: said as seen.
  CHECK_THAT(without_last_rows(1),
             ContainsSubstring(kit::kCannotTellWhy) &&
                 ContainsSubstring("the last 1 row(s) were never written, not the band a grid "
                                   "rounded down leaves with TILE_WIDTH 16") &&
                 !ContainsSubstring("Round the number of blocks up"));
}

TEST_CASE("a report of observations only names no cause and one with a proven hint does",
          "[common]") {
  const Case c = make_case(20);
  std::vector<float> stops_mid_row(c.right.size(), kit::poison_value());
  std::copy(c.right.begin(), c.right.begin() + 150, stops_mid_row.begin());
  const std::vector<float> zeros(c.right.size(), 0.0f);
  std::vector<float> partial_tile = c.right;
  partial_tile[19 * 20 + 3] += 0.5f;
  for (const auto& got : {stops_mid_row, zeros, partial_tile}) {
    const kit::Comparison cmp = kit::compare_matrix(got, c.ref, {}, 16);
    CAPTURE(cmp.report);
    CHECK_FALSE(cmp.ok);
    CHECK_FALSE(kit::report_names_a_cause(cmp.report));
  }
  CHECK(kit::report_names_a_cause("detail\nhint: N is read transposed: ...\n"));
  CHECK_FALSE(kit::report_names_a_cause("detail with no hint\n"));
}

TEST_CASE("a band that a grid with x and y swapped leaves as well names both causes", "[common]") {
  // P of 17 x 5 with TILE_WIDTH 16: a grid rounded down covers rows 0 to 15, and so does a grid
  // whose y counts the tiles along the 5 columns (one).
  const int rows = 17, inner = 9, cols = 5;
  const std::vector<float> M = kit::random_matrix(rows, inner, 21);
  const std::vector<float> N = kit::random_matrix(inner, cols, 22);
  const kit::MatmulReference ref = kit::reference_matmul(M, N, rows, inner, cols);
  std::vector<float> got;
  for (double v : ref.value) got.push_back(static_cast<float>(v));
  std::fill(got.end() - cols, got.end(), kit::poison_value());  // the last row
  const std::string report = kit::compare_matrix(got, ref, {}, 16).report;
  CHECK_THAT(report, ContainsSubstring("Round the number of blocks up") &&
                         ContainsSubstring("swapped, they leave this band too"));
}
