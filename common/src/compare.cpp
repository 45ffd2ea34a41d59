#include "kit/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <sstream>

#include "kit/poison.hpp"

namespace kit {
namespace {

enum class Cell { ok, unwritten, not_finite, wrong };

constexpr int kShownMismatches = 5;

struct Tally {
  std::vector<Cell> cells;
  long long unwritten = 0;
  long long not_finite = 0;
  long long wrong = 0;
  long long bad() const { return unwritten + not_finite + wrong; }
};

Tally classify(const std::vector<float>& got, const MatmulReference& ref, Tolerance tol) {
  Tally t;
  t.cells.resize(got.size(), Cell::ok);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float g = got[i];
    if (is_poison(g)) {
      t.cells[i] = Cell::unwritten;
      ++t.unwritten;
    } else if (!std::isfinite(g)) {
      t.cells[i] = Cell::not_finite;
      ++t.not_finite;
    } else if (std::fabs(g - ref.value[i]) > tol.atol + tol.rtol * ref.magnitude[i]) {
      t.cells[i] = Cell::wrong;
      ++t.wrong;
    }
  }
  return t;
}

const char* describe(Cell cell) {
  switch (cell) {
    case Cell::unwritten: return " (never written)";
    case Cell::not_finite: return " (not finite)";
    default: return "";
  }
}

// Every written element inside rows [0, r_end) x cols [0, c_end) and nothing written
// outside: the grid stopped short of the last rows or columns.
bool unwritten_is_bottom_right_band(const Tally& t, int rows, int cols, int* r_end, int* c_end) {
  int max_r = -1, max_c = -1;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      if (t.cells[static_cast<std::size_t>(r) * cols + c] != Cell::unwritten) {
        max_r = std::max(max_r, r);
        max_c = std::max(max_c, c);
      }
    }
  }
  if (max_r < 0) return false;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const bool inside = r <= max_r && c <= max_c;
      const bool unwritten = t.cells[static_cast<std::size_t>(r) * cols + c] == Cell::unwritten;
      if (inside == unwritten) return false;
    }
  }
  *r_end = max_r + 1;
  *c_end = max_c + 1;
  return true;
}

bool only_first_tile_ok(const Tally& t, int rows, int cols, int tile) {
  if (tile <= 0 || (rows <= tile && cols <= tile)) return false;
  long long outside = 0, outside_bad = 0;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const bool ok = t.cells[static_cast<std::size_t>(r) * cols + c] == Cell::ok;
      if (r < tile && c < tile) {
        if (!ok) return false;
      } else {
        ++outside;
        if (!ok) ++outside_bad;
      }
    }
  }
  return outside_bad * 10 >= outside * 9;
}

// Wrong elements only in the rows or columns of the last, partial tile.
bool only_partial_tile_wrong(const Tally& t, int rows, int cols, int tile) {
  if (tile <= 0 || (rows % tile == 0 && cols % tile == 0)) return false;
  const int full_rows = rows / tile * tile;
  const int full_cols = cols / tile * tile;
  for (int r = 0; r < full_rows; ++r) {
    for (int c = 0; c < full_cols; ++c) {
      if (t.cells[static_cast<std::size_t>(r) * cols + c] != Cell::ok) return false;
    }
  }
  return true;
}

bool matches(const std::vector<float>& got, const std::vector<double>& expected) {
  if (expected.size() != got.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return false;
    if (std::fabs(got[i] - expected[i]) > 1e-3 * (1.0 + std::fabs(expected[i]))) return false;
  }
  return true;
}

std::vector<std::string> diagnose(const std::vector<float>& got, const MatmulReference& ref,
                                  const Tally& t, int tile,
                                  const std::vector<Alternative>& alternatives) {
  const int rows = ref.rows, cols = ref.cols;
  const long long total = static_cast<long long>(got.size());
  std::vector<std::string> hints;
  if (t.unwritten == total) {
    hints.push_back(
        "no element of the result was written: is the kernel launched with a non-empty grid, "
        "does it store its result, and is the result copied back after the launch?");
    return hints;
  }
  for (const Alternative& alt : alternatives) {
    if (matches(got, alt.expected)) {
      hints.push_back(alt.hint);
      return hints;
    }
  }
  if (t.unwritten > 0) {
    int r_end = rows, c_end = cols;
    if (unwritten_is_bottom_right_band(t, rows, cols, &r_end, &c_end)) {
      std::ostringstream h;
      h << "the last ";
      if (r_end < rows) h << rows - r_end << " row(s)";
      if (r_end < rows && c_end < cols) h << " and the last ";
      if (c_end < cols) h << cols - c_end << " column(s)";
      h << " were never written: the grid does not cover the whole matrix. Round the number "
           "of blocks up: (width + block - 1) / block.";
      hints.push_back(h.str());
    } else if (tile > 0 &&
               t.unwritten ==
                   total - static_cast<long long>(std::min(rows, tile)) * std::min(cols, tile) &&
               t.cells[0] != Cell::unwritten) {
      hints.push_back(
          "only the first tile was written: check that row and col include the "
          "block offset (blockIdx * TILE_WIDTH).");
    } else {
      std::ostringstream h;
      h << t.unwritten << " element(s) were never written (they still hold the poison value): "
        << "some threads return early or skip their store; check the bounds condition.";
      hints.push_back(h.str());
    }
  }
  if (t.not_finite > 0) {
    hints.push_back(
        "some results are NaN or infinite although every input is finite: a value "
        "was read from memory that was never initialised or lies outside an input.");
  }
  if (t.wrong > 0) {
    if (only_first_tile_ok(t, rows, cols, tile)) {
      hints.push_back(
          "only the first tile is right: check the tile offsets in row and col and "
          "the phase offset (ph * TILE_WIDTH) in the loads.");
    } else if (only_partial_tile_wrong(t, rows, cols, tile)) {
      hints.push_back(
          "only the last, partial tile is wrong: loads past the edge of a matrix "
          "must be guarded and fill 0, and every phase must be run.");
    } else {
      hints.push_back(
          "values are wrong: check how row, col and k index M and N "
          "(M[row * width + k], N[k * width + col]).");
    }
  }
  return hints;
}

}  // namespace

Comparison compare_matrix(const std::vector<float>& got, const MatmulReference& ref, Tolerance tol,
                          int tile, const std::vector<Alternative>& alternatives) {
  Comparison result;
  const std::size_t expected_size = static_cast<std::size_t>(ref.rows) * ref.cols;
  if (got.size() != expected_size) {
    result.ok = false;
    result.report = "result has " + std::to_string(got.size()) + " elements, expected " +
                    std::to_string(expected_size);
    return result;
  }
  const Tally t = classify(got, ref, tol);
  if (t.bad() == 0) return result;

  result.ok = false;
  std::ostringstream out;
  out << "result differs from the host reference at " << t.bad() << " of " << got.size()
      << " elements (" << ref.rows << " x " << ref.cols << "): " << t.unwritten
      << " never written, " << t.not_finite << " NaN or infinite, " << t.wrong
      << " wrong (tolerance " << tol.atol << " + " << tol.rtol << " * sum of |terms|)\n";
  int shown = 0;
  for (std::size_t i = 0; i < got.size() && shown < kShownMismatches; ++i) {
    if (t.cells[i] == Cell::ok) continue;
    out << "  P[" << i / ref.cols << "][" << i % ref.cols << "]: got " << got[i]
        << describe(t.cells[i]) << ", expected " << ref.value[i] << "\n";
    ++shown;
  }
  for (const std::string& hint : diagnose(got, ref, t, tile, alternatives)) {
    out << "hint: " << hint << "\n";
  }
  result.report = out.str();
  return result;
}

std::vector<Alternative> matmul_index_mistakes(const std::vector<float>& M,
                                               const std::vector<float>& N, int width,
                                               int max_width) {
  std::vector<Alternative> mistakes;
  if (width > max_width || width < 2) return mistakes;
  const std::size_t w = static_cast<std::size_t>(width);
  auto transposed = [w](const std::vector<float>& A) {
    std::vector<float> out(A.size());
    for (std::size_t r = 0; r < w; ++r)
      for (std::size_t c = 0; c < w; ++c) out[c * w + r] = A[r * w + c];
    return out;
  };
  std::vector<double> p_transposed = product_values(M, N, width, width, width);
  for (std::size_t i = 0; i < w; ++i)
    for (std::size_t j = i + 1; j < w; ++j)
      std::swap(p_transposed[i * w + j], p_transposed[j * w + i]);
  mistakes.push_back(
      {"the result is transposed: row and col are swapped (row comes from the "
       "y index, col from the x index; P[row * width + col]).",
       std::move(p_transposed)});
  mistakes.push_back(
      {"N is read transposed: the product matches M times N-transposed. Index N "
       "as N[k * width + col], not N[col * width + k].",
       product_values(M, transposed(N), width, width, width)});
  mistakes.push_back(
      {"M is read transposed: the product matches M-transposed times N. Index M "
       "as M[row * width + k], not M[k * width + row].",
       product_values(transposed(M), N, width, width, width)});
  return mistakes;
}

}  // namespace kit
