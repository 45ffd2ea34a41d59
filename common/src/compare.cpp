#include "kit/compare.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>

#include "kit/poison.hpp"

namespace kit {
namespace {

enum class Cell { ok, unwritten, not_finite, wrong };

constexpr int kShownMismatches = 5;
// The mask of wrong elements the grader draws (kit-mask): at most this many cells a side, each
// cell a block of elements when P is larger.
constexpr int kMaskCells = 32;
// The widest block of the labs: square blocks and tiles of up to 32 x 32 threads.
constexpr int kMaxBlockWidth = 32;

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

// The written elements are a prefix in memory order: every element from *end on was never
// written and every one before it was. A short copy back leaves this pattern.
bool written_is_prefix(const Tally& t, std::size_t* end) {
  std::size_t s = t.cells.size();
  while (s > 0 && t.cells[s - 1] == Cell::unwritten) --s;
  if (s == 0 || s == t.cells.size()) return false;
  for (std::size_t i = 0; i < s; ++i) {
    if (t.cells[i] == Cell::unwritten) return false;
  }
  *end = s;
  return true;
}

// Every written element right before `end`, except perhaps the last, which a copy that stops
// inside a float leaves half overwritten.
bool prefix_right(const Tally& t, std::size_t end) {
  for (std::size_t i = 0; i + 1 < end; ++i) {
    if (t.cells[i] != Cell::ok) return false;
  }
  return true;
}

// Every written, finite element is a whole number while some expected value in a wrong cell is
// not: the sum was converted to an integer along the way.
bool wrong_values_all_whole(const std::vector<float>& got, const MatmulReference& ref,
                            const Tally& t, long long* zeros) {
  bool some_fraction_expected = false;
  *zeros = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (t.cells[i] == Cell::unwritten || t.cells[i] == Cell::not_finite) continue;
    if (std::floor(got[i]) != got[i]) return false;
    if (got[i] == 0.0f) ++*zeros;
    if (t.cells[i] == Cell::wrong && std::floor(ref.value[i]) != ref.value[i]) {
      some_fraction_expected = true;
    }
  }
  return some_fraction_expected;
}

// What was observed, for a wrong result no rule explains: how many elements, in how many rows
// and columns, and how far off.
std::string describe_wrong(const std::vector<float>& got, const MatmulReference& ref,
                           const Tally& t) {
  const int rows = ref.rows, cols = ref.cols;
  std::vector<bool> bad_row(rows, false), bad_col(cols, false);
  double worst = -1.0, sum = 0.0;
  std::size_t worst_at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (t.cells[i] != Cell::wrong) continue;
    bad_row[i / cols] = true;
    bad_col[i % cols] = true;
    const double err = std::fabs(got[i] - ref.value[i]);
    sum += err;
    if (err > worst) {
      worst = err;
      worst_at = i;
    }
  }
  const auto count = [](const std::vector<bool>& v) {
    return std::count(v.begin(), v.end(), true);
  };
  std::ostringstream h;
  h << kCannotTellWhy << ": " << t.wrong << " element(s) are wrong, in " << count(bad_row) << " of "
    << rows << " rows and " << count(bad_col) << " of " << cols << " columns, off by "
    << sum / static_cast<double>(t.wrong) << " on average and at most " << worst << " (P["
    << worst_at / cols << "][" << worst_at % cols << "]: got " << got[worst_at] << ", expected "
    << ref.value[worst_at]
    << "). Check how row, col and k index M, N and P against the write-up, on a small width you "
       "can work by hand.";
  return h.str();
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
  std::size_t prefix_end = 0;
  const bool prefix = t.unwritten > 0 && written_is_prefix(t, &prefix_end);
  const std::size_t quarter = (got.size() + 3) / 4;  // the floats in got.size() bytes, rounded up
  if (prefix && prefix_end == quarter && prefix_right(t, prefix_end)) {
    std::ostringstream h;
    if (prefix_end % static_cast<std::size_t>(cols) != 0) {
      // Cut inside a row: no grid of whole rows stops there, a byte count does.
      h << "exactly the first quarter of P arrived (" << prefix_end << " of " << total
        << " elements, in memory order, up to the middle of row " << prefix_end / cols
        << "), every one of them right, and nothing after it: the copy back moved as many bytes "
           "as P has elements. A byte count is elements x sizeof(float): copy width * width * "
           "sizeof(float) bytes.";
    } else {
      // Whole rows: a copy of too few bytes and a grid that covers only these rows look alike.
      h << kCannotTellWhy << ": exactly the first quarter of P arrived (rows 0 to "
        << prefix_end / cols - 1 << " of " << rows
        << "), every element right, nothing after it. A copy back of as many bytes as P has "
           "elements (a byte count is elements x sizeof(float)) leaves this, and so does a grid "
           "whose blocks cover only these rows.";
    }
    hints.push_back(h.str());
    return hints;
  }
  if (t.unwritten > 0) {
    int r_end = rows, c_end = cols;
    if (prefix && prefix_end % static_cast<std::size_t>(cols) != 0 && prefix_right(t, prefix_end)) {
      std::ostringstream h;
      h << "only the first " << prefix_end << " of " << total
        << " elements of P (in memory order, up to the middle of row " << prefix_end / cols
        << ") hold results, every one of them right; the rest were never written. The kit cannot "
           "tell whether the kernel or the copy back stopped there: check the byte count of each "
           "cudaMemcpy (elements x sizeof(float)) and which elements the grid covers.";
      hints.push_back(h.str());
    } else if (unwritten_is_bottom_right_band(t, rows, cols, &r_end, &c_end)) {
      std::ostringstream band;
      band << "the last ";
      if (r_end < rows) band << rows - r_end << " row(s)";
      if (r_end < rows && c_end < cols) band << " and the last ";
      if (c_end < cols) band << cols - c_end << " column(s)";
      // A grid rounded down misses less than one block, and the kit's blocks are square, at
      // most 32 x 32 threads (1024 a block): a larger gap has another cause. Where the block is
      // the tile, it leaves exactly rows % tile rows and cols % tile columns: a smaller gap of
      // another size has another cause too (a store guard that stops early, say).
      const bool small = rows - r_end < kMaxBlockWidth && cols - c_end < kMaxBlockWidth;
      const bool grid_shaped = tile <= 0 || ((r_end == rows || rows - r_end == rows % tile) &&
                                             (c_end == cols || cols - c_end == cols % tile));
      // In a P that is not square, a grid whose x and y trade places covers ceil(cols / tile)
      // tiles of rows and ceil(rows / tile) of columns: at some shapes the very band a grid
      // rounded down leaves, and then the values cannot tell the two apart.
      const auto covered = [tile](int side, int other) {
        return std::min(side, (other + tile - 1) / tile * tile);
      };
      const bool swapped_fits =
          tile > 0 && rows != cols && r_end == covered(rows, cols) && c_end == covered(cols, rows);
      std::ostringstream h;
      if (small && !grid_shaped) {
        h << kCannotTellWhy << ": " << band.str()
          << " were never written, not the band a grid rounded down leaves with TILE_WIDTH " << tile
          << " (the last " << rows % tile << " row(s) and " << cols % tile
          << " column(s)): the store's guard and the grid's size are where to look"
          << (swapped_fits ? ", and a grid whose x and y are swapped leaves this band" : "") << ".";
      } else {
        h << band.str() << " were never written: the grid does not cover the whole matrix. ";
        if (small && swapped_fits) {
          h << "Round the number of blocks up: (width + block - 1) / block; or, P not being "
               "square, check that the grid's x counts blocks along the columns of P and its y "
               "along its rows: swapped, they leave this band too at this shape.";
        } else if (small) {
          h << "Round the number of blocks up: (width + block - 1) / block.";
        } else {
          h << "The blocks cover only the first " << r_end << " row(s) and " << c_end
            << " column(s), more than a grid rounded down can miss (less than one block, at most "
            << kMaxBlockWidth - 1
            << "): check that the grid's x counts blocks along the columns of P and its y along "
               "its rows, and that the block is as large as the grid's arithmetic assumes.";
        }
      }
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
    std::ostringstream h;
    h << t.not_finite
      << " result(s) are NaN or infinite although every input is finite; the kit cannot tell "
         "which value did it. A read of memory that was never initialised or lies outside an "
         "input, or a copy that stopped inside an element, leaves this.";
    hints.push_back(h.str());
  }
  if (t.wrong > 0) {
    if (only_first_tile_ok(t, rows, cols, tile)) {
      // An observation: tile offsets missing from row and col, and a phase offset missing from
      // the loads, both leave it (a term map tells them apart).
      hints.push_back(std::string(kCannotTellWhy) +
                      ": only the first tile of P is right (rows and columns 0 to " +
                      std::to_string(tile - 1) +
                      "), nearly every element outside it wrong: the tile offsets in row and col "
                      "(blockIdx * TILE_WIDTH) and the phase offset in the loads "
                      "(ph * TILE_WIDTH) are where to look.");
    } else if (only_partial_tile_wrong(t, rows, cols, tile)) {
      // An observation, not a cause: unguarded loads, a load guard that lets a neighbour's
      // value in, or a store guard that writes into the next row all leave this shape.
      std::ostringstream h;
      h << kCannotTellWhy << ": " << t.wrong << " element(s) are wrong, all in the last, "
        << "partial tiles (rows from " << rows / tile * tile << " or columns from "
        << cols / tile * tile << "), every element of the whole tiles right: look at what the "
        << "kernel loads and stores at the edges of the matrices (the write-up's boundary "
           "checks).";
      hints.push_back(h.str());
    } else if (long long zeros = 0; wrong_values_all_whole(got, ref, t, &zeros)) {
      // All zeros proves nothing about integers (a loop that never ran stores 0 too); whole
      // numbers that are not all 0 do.
      const long long written = total - t.unwritten - t.not_finite;
      std::ostringstream h;
      if (zeros == written) {
        h << kAllWrittenZero
          << ", while the products of these inputs are "
             "not; the kit cannot tell why. A k loop that never runs does this, and so does a sum "
             "kept in an int, which truncates each partial sum of these inputs (all smaller than "
             "1) to 0.";
      } else {
        h << "every value of P is a whole number (" << zeros
          << " of them 0), while the products of these inputs are not: the sum was converted to "
             "an integer along the way, as when Pvalue is declared int. Accumulate in a float.";
      }
      hints.push_back(h.str());
    } else {
      hints.push_back(describe_wrong(got, ref, t));
    }
  }
  return hints;
}

// Comparison::mask: P in at most kMaskCells x kMaskCells cells, each the worst of its block.
std::string mask_line(const std::vector<Cell>& cells, int rows, int cols) {
  const int mask_rows = rows < kMaskCells ? rows : kMaskCells;
  const int mask_cols = cols < kMaskCells ? cols : kMaskCells;
  std::string marks(static_cast<std::size_t>(mask_rows) * mask_cols, '.');
  const auto rank = [](char mark) { return std::string(".xnu").find(mark); };
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const Cell cell = cells[static_cast<std::size_t>(r) * cols + c];
      const char mark = cell == Cell::ok           ? '.'
                        : cell == Cell::unwritten  ? 'u'
                        : cell == Cell::not_finite ? 'n'
                                                   : 'x';
      char& shown =
          marks[static_cast<std::size_t>(r * static_cast<long long>(mask_rows) / rows) * mask_cols +
                static_cast<std::size_t>(c * static_cast<long long>(mask_cols) / cols)];
      if (rank(mark) > rank(shown)) shown = mark;
    }
  }
  std::ostringstream line;
  line << "kit-mask " << rows << "x" << cols << " " << mask_rows << "x" << mask_cols << " "
       << marks;
  return line.str();
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
  result.mask = mask_line(t.cells, ref.rows, ref.cols);
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
  // The operands themselves mixed up: in the kernel's arguments, its indexing or the copies in.
  mistakes.push_back(
      {"the result is N times M: M and N trade places somewhere (the order of the launch's "
       "arguments, or M and N swapped in the kernel's dot product). P = M * N.",
       product_values(N, M, width, width, width)});
  mistakes.push_back(
      {"the result is M times M: the matrix in N's place holds M (was h_M copied into d_N, M "
       "read where N should be, or a tile of M stored over the tile of N?).",
       product_values(M, M, width, width, width)});
  mistakes.push_back(
      {"the result is N times N: the matrix in M's place holds N (was h_N copied into d_M, N "
       "read where M should be, or a tile of N stored over the tile of M?).",
       product_values(N, N, width, width, width)});
  return mistakes;
}

std::vector<Alternative> matmul_term_mistakes(const std::vector<float>& M,
                                              const std::vector<float>& N,
                                              const MatmulReference& ref, int inner) {
  std::vector<Alternative> mistakes;
  if (inner < 2) return mistakes;
  mistakes.push_back({"every element misses exactly the last term of its dot product (k = " +
                          std::to_string(inner - 1) +
                          "): the loop over k stops one short. Run it while k < width.",
                      without_terms(M, N, ref, inner, inner - 1, inner)});
  mistakes.push_back(
      {"every element misses exactly the first term of its dot product (k = 0): the loop over k "
       "starts at 1. Start it at 0.",
       without_terms(M, N, ref, inner, 0, 1)});
  return mistakes;
}

std::vector<double> without_terms(const std::vector<float>& M, const std::vector<float>& N,
                                  const MatmulReference& ref, int inner, int first, int end) {
  const int rows = ref.rows, cols = ref.cols;
  require_matmul_shape(M, N, rows, inner, cols);
  if (first < 0 || first > end || end > inner ||
      ref.value.size() != static_cast<std::size_t>(rows) * cols) {
    throw std::invalid_argument("without_terms: terms [" + std::to_string(first) + ", " +
                                std::to_string(end) + ") of a product of inner size " +
                                std::to_string(inner) + ", or a reference of another shape");
  }
  std::vector<double> values = ref.value;
  for (int r = 0; r < rows; ++r) {
    double* row = &values[static_cast<std::size_t>(r) * cols];
    for (int k = first; k < end; ++k) {
      const double m = M[static_cast<std::size_t>(r) * inner + k];
      const float* n_row = &N[static_cast<std::size_t>(k) * cols];
      for (int c = 0; c < cols; ++c) row[c] -= m * n_row[c];
    }
  }
  return values;
}

std::string with_diagnosis(const std::string& report, const std::string& inputs,
                           const std::string& cause, const std::string& example) {
  // "Cannot tell why" goes only when the cause explains everything (no example left).
  const bool explained = !cause.empty() && example.empty();
  const std::string observed = std::string("hint: ") + kCannotTellWhy;
  std::vector<std::string> lines;
  std::istringstream in(report);
  for (std::string line; std::getline(in, line);) {
    if (explained && line.rfind(observed, 0) == 0) continue;
    lines.push_back(line);
  }
  auto first_hint = lines.begin();
  while (first_hint != lines.end() && first_hint->rfind("hint:", 0) != 0) ++first_hint;
  if (!example.empty()) {
    first_hint = lines.insert(first_hint, inputs + ", " + example + ".");
    ++first_hint;
  }
  if (!cause.empty()) lines.insert(first_hint, "hint: " + inputs + ", " + cause + ".");
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

std::string failure_message(const Comparison& cmp) {
  return cmp.mask.empty() ? cmp.report : cmp.report + cmp.mask + "\n";
}

bool report_names_a_cause(const std::string& report) {
  std::istringstream in(report);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("hint:", 0) != 0) continue;
    std::string lower = line;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower.find(kObservationMark) == std::string::npos) return true;
  }
  return false;
}

}  // namespace kit
