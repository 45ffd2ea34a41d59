#include "kit/term_map.hpp"

#include <cmath>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "kit/poison.hpp"

namespace kit {
namespace {

// Above every M code's offset (rows * inner) and N's (cols): one term's value lies in
// [kCode, 2 * kCode), two or more reach 2 * kCode.
constexpr int kCode = 1 << 13;

void require_small(int rows, int inner, int cols) {
  if (!term_map_fits(rows, inner, cols)) {
    throw std::invalid_argument(
        "a term map needs 1 <= rows * inner <= 8192, cols <= 8192 and inner <= 256");
  }
}

enum class Read { none, one, several, unreadable, unwritten };

// One run's value: which code it holds, if one.
Read read_code(float value, int limit, int& code) {
  if (is_poison(value)) return Read::unwritten;
  if (value == 0.0f) return Read::none;
  if (value != std::floor(value) || value < 0.0f) return Read::unreadable;
  if (value >= 2.0f * kCode) return Read::several;
  const int offset = static_cast<int>(value) - kCode;
  if (offset < 0 || offset >= limit) return Read::unreadable;
  code = offset;
  return Read::one;
}

bool all_of(const TermMap& map, const std::function<bool(int, int, int, const Term&)>& rule) {
  for (int i = 0; i < map.rows; ++i) {
    for (int k = 0; k < map.cols; ++k) {
      if (!map.was_written(i, k)) continue;
      for (int c = 0; c < map.inner; ++c) {
        if (!rule(i, k, c, map.at(i, k, c))) return false;
      }
    }
  }
  return true;
}

bool right(int i, int k, int c, const Term& t) {
  return t.kind == Term::Kind::one && t.m_row == i && t.m_col == c && t.n_col == k;
}

std::string range(int from, int to) {  // inclusive
  return from == to ? std::to_string(from) : std::to_string(from) + " to " + std::to_string(to);
}

// The elements never written, said as rows or columns where they are whole ones.
std::string unwritten_text(const TermMap& map) {
  int missing = 0, first_i = -1, first_k = -1;
  for (int i = 0; i < map.rows; ++i) {
    for (int k = 0; k < map.cols; ++k) {
      if (map.was_written(i, k)) continue;
      if (missing++ == 0) first_i = i, first_k = k;
    }
  }
  if (missing == 0) return "";
  if (missing == map.rows * map.cols) {
    return "no element of P was written: the kernel did not run, or wrote somewhere else";
  }
  const auto rows_from = [&](int r0) {
    for (int i = 0; i < map.rows; ++i) {
      for (int k = 0; k < map.cols; ++k) {
        if (map.was_written(i, k) == (i >= r0)) return false;
      }
    }
    return true;
  };
  const auto cols_from = [&](int c0) {
    for (int i = 0; i < map.rows; ++i) {
      for (int k = 0; k < map.cols; ++k) {
        if (map.was_written(i, k) == (k >= c0)) return false;
      }
    }
    return true;
  };
  if (first_k == 0 && rows_from(first_i)) {
    return "rows " + range(first_i, map.rows - 1) +
           " of P were never written: no thread computes " +
           "them (the grid has too few blocks in y, or the row guard stops early)";
  }
  if (first_i == 0 && cols_from(first_k)) {
    return "columns " + range(first_k, map.cols - 1) + " of P were never written: no thread " +
           "computes them (the grid has too few blocks in x, or the column guard stops early)";
  }
  return std::to_string(missing) + " elements of P were never written, the first P[" +
         std::to_string(first_i) + "][" + std::to_string(first_k) + "]";
}

// The inner indices no written element of P took, when every written element lacks the same
// ones and takes every other one right; empty when that is not what the map shows. One pass.
std::vector<int> same_terms_missing(const TermMap& map) {
  std::vector<char> none_everywhere(map.inner, 1), right_everywhere(map.inner, 1);
  all_of(map, [&](int i, int k, int c, const Term& t) {
    none_everywhere[c] = none_everywhere[c] && t.kind == Term::Kind::none;
    right_everywhere[c] = right_everywhere[c] && right(i, k, c, t);
    return true;
  });
  std::vector<int> missing;
  for (int c = 0; c < map.inner; ++c) {
    if (none_everywhere[c]) {
      missing.push_back(c);
    } else if (!right_everywhere[c]) {
      return {};
    }
  }
  return missing;
}

std::string describe(const Term& t, int c) {
  switch (t.kind) {
    case Term::Kind::none: return "nothing";
    case Term::Kind::several: return "N's row " + std::to_string(c) + " more than once";
    case Term::Kind::unreadable:
      return "a value the kit cannot read back (memory outside the inputs?)";
    case Term::Kind::one: break;
  }
  return "M[" + std::to_string(t.m_row) + "][" + std::to_string(t.m_col) + "] x N[" +
         std::to_string(c) + "][" + std::to_string(t.n_col) + "]";
}

// What one wrong element took, term by term where it differs (at most four).
std::string one_element(const TermMap& map) {
  for (int i = 0; i < map.rows; ++i) {
    for (int k = 0; k < map.cols; ++k) {
      if (!map.was_written(i, k)) continue;
      std::ostringstream out;
      int shown = 0, wrong = 0;
      for (int c = 0; c < map.inner; ++c) {
        const Term& t = map.at(i, k, c);
        if (right(i, k, c, t)) continue;
        if (wrong++ < 4) {
          out << (shown++ ? "; " : "") << "for inner index " << c << " it took " << describe(t, c)
              << " instead of M[" << i << "][" << c << "] x N[" << c << "][" << k << "]";
        }
      }
      if (wrong == 0) continue;
      std::string text = "P[" + std::to_string(i) + "][" + std::to_string(k) + "] is wrong in " +
                         std::to_string(wrong) + " of its " + std::to_string(map.inner) +
                         " terms: " + out.str();
      return wrong > 4 ? text + "; ..." : text;
    }
  }
  return "";
}

}  // namespace

std::vector<float> which_m_M(int rows, int inner) {
  std::vector<float> M(static_cast<std::size_t>(rows) * inner);
  for (std::size_t e = 0; e < M.size(); ++e) M[e] = static_cast<float>(kCode + e);
  return M;
}

std::vector<float> which_m_N(int inner, int cols, int c) {
  std::vector<float> N(static_cast<std::size_t>(inner) * cols, 0.0f);
  for (int k = 0; k < cols; ++k) N[static_cast<std::size_t>(c) * cols + k] = 1.0f;
  return N;
}

std::vector<float> which_n_M(int rows, int inner) {
  return std::vector<float>(static_cast<std::size_t>(rows) * inner, 1.0f);
}

std::vector<float> which_n_N(int inner, int cols, int c) {
  std::vector<float> N(static_cast<std::size_t>(inner) * cols, 0.0f);
  for (int k = 0; k < cols; ++k)
    N[static_cast<std::size_t>(c) * cols + k] = static_cast<float>(kCode + k);
  return N;
}

TermMap decode_terms(const std::vector<std::vector<float>>& which_m,
                     const std::vector<std::vector<float>>& which_n, int rows, int inner,
                     int cols) {
  require_small(rows, inner, cols);
  const std::size_t elements = static_cast<std::size_t>(rows) * cols;
  if (which_m.size() != static_cast<std::size_t>(inner) ||
      which_n.size() != static_cast<std::size_t>(inner)) {
    throw std::invalid_argument("a term map needs one run of each family per row of N");
  }
  TermMap map;
  map.rows = rows, map.inner = inner, map.cols = cols;
  map.terms.resize(elements * inner);
  map.written.assign(elements, 1);
  for (int c = 0; c < inner; ++c) {
    if (which_m[c].size() != elements || which_n[c].size() != elements) {
      throw std::invalid_argument("a run's product has the wrong size");
    }
    for (std::size_t e = 0; e < elements; ++e) {
      int m_code = -1, n_code = -1;
      const Read m = read_code(which_m[c][e], rows * inner, m_code);
      const Read n = read_code(which_n[c][e], cols, n_code);
      Term& t = map.terms[e * inner + c];
      if (m == Read::unwritten || n == Read::unwritten) {
        map.written[e] = 0;
      } else if (m == Read::one && n == Read::one) {
        t = Term{Term::Kind::one, m_code / inner, m_code % inner, n_code};
      } else if (m == Read::none && n == Read::none) {
        t.kind = Term::Kind::none;
      } else if (m == Read::several || n == Read::several) {
        t.kind = Term::Kind::several;
      } else {
        t.kind = Term::Kind::unreadable;
      }
    }
  }
  return map;
}

bool term_map_fits(int rows, int inner, int cols) {
  return rows >= 1 && inner >= 1 && cols >= 1 && inner <= 256 && cols <= kCode &&
         static_cast<long long>(rows) * inner <= kCode;
}

TermMap map_terms(const MatmulLaunch& launch, int rows, int inner, int cols) {
  require_small(rows, inner, cols);
  MatmulProblem coded;  // run_matmul's inputs; no reference is needed to decode
  coded.rows = rows, coded.inner = inner, coded.cols = cols;
  const auto run = [&](std::vector<float> M, std::vector<float> N) {
    coded.M = std::move(M);
    coded.N = std::move(N);
    return run_matmul(coded, launch);
  };
  const std::vector<float> m_coded = which_m_M(rows, inner), m_ones = which_n_M(rows, inner);
  std::vector<std::vector<float>> which_m, which_n;
  for (int c = 0; c < inner; ++c) which_m.push_back(run(m_coded, which_m_N(inner, cols, c)));
  for (int c = 0; c < inner; ++c) which_n.push_back(run(m_ones, which_n_N(inner, cols, c)));
  return decode_terms(which_m, which_n, rows, inner, cols);
}

TermDiagnosis explain_terms(const TermMap& map, int tile) {
  const std::string unwritten = unwritten_text(map);
  const bool terms_right = all_of(map, right);
  if (terms_right) return {unwritten, ""};
  const auto with = [&](const std::string& text) -> TermDiagnosis {
    return {unwritten.empty() ? text : unwritten + "; and " + text, ""};
  };
  const int last_phase = tile > 0 ? (map.inner - 1) / tile * tile : -1;
  const std::string round_up =
      tile > 0 && map.inner % tile != 0 ? " (round the number of phases up)" : "";
  const std::vector<int> missing = same_terms_missing(map);
  if (!missing.empty()) {
    const int lo = missing.front(), hi = missing.back();
    const bool contiguous = hi - lo + 1 == static_cast<int>(missing.size());
    if (static_cast<int>(missing.size()) == map.inner) {
      return with(
          "no element of P took any product: the loop over the inner dimension (or over "
          "the phases) ran no iteration");
    }
    if (contiguous && lo == map.inner - 1 && hi == lo && lo == last_phase) {
      return with("every element of P lacks its last term, inner index " + std::to_string(lo) +
                  ", the whole of the last phase: the loop over the inner dimension stops one " +
                  "term short, or the phase loop one phase short" + round_up);
    }
    if (contiguous && lo == map.inner - 1 && hi == lo) {
      return with("every element of P lacks its last term, inner index " + std::to_string(lo) +
                  ": the loop over the inner dimension stops one term short");
    }
    if (contiguous && lo == 0 && hi == 0) {
      return with(
          "every element of P lacks its first term, inner index 0: the loop over the inner "
          "dimension starts one term late");
    }
    if (contiguous && tile > 0 && hi == map.inner - 1 && lo == last_phase && lo > 0) {
      return with("every element of P lacks the products of the last phase, inner index " +
                  range(lo, hi) + ": the phase loop stops one phase short" + round_up);
    }
    if (contiguous && tile > 0 && lo == 0 && hi + 1 == last_phase && last_phase > 0) {
      const std::string also =
          last_phase == tile ? ", or the phase loop starts one phase late" : "";
      return with("every element of P keeps only the products of its last phase (inner index " +
                  range(last_phase, map.inner - 1) + "): the running sum is reset in every " +
                  "phase; set it to 0 once, before the phase loop" + also);
    }
    if (contiguous && tile > 0 && lo == 0 && hi == tile - 1 && map.inner > 2 * tile) {
      // With two phases this is also the sum reset in every phase, which the rule above says.
      return with("every element of P lacks the products of the first phase, inner index 0 to " +
                  std::to_string(tile - 1) + ": the phase loop starts one phase late; start ph " +
                  "at 0");
    }
    return with("every element of P lacks the terms of inner index " +
                (contiguous
                     ? range(lo, hi)
                     : std::to_string(missing.size()) + " indices from " + std::to_string(lo)) +
                " and takes the others right");
  }
  if (tile > 0 && map.inner > tile && all_of(map, [&](int i, int k, int c, const Term& t) {
        return t.kind == Term::Kind::one && t.m_row == i && t.n_col == k && t.m_col == c % tile;
      })) {
    return with("M's column index lacks the phase offset: P[i][k] multiplied M[i][c % " +
                std::to_string(tile) +
                "] with N[c][k]; the tile loads M[row][ph * TILE_WIDTH + tx]");
  }
  if (tile > 0 && map.inner > tile && all_of(map, [&](int, int, int c, const Term& t) {
        return c < tile ? t.kind == Term::Kind::several : t.kind == Term::Kind::none;
      })) {
    return with("N's row index lacks the phase offset: every phase read N's rows 0 to " +
                std::to_string(tile - 1) + "; the tile loads N[ph * TILE_WIDTH + ty][col]");
  }
  if (all_of(map, [&](int i, int k, int c, const Term& t) {
        return t.kind == Term::Kind::one && t.m_row == c && t.m_col == i && t.n_col == k;
      })) {
    return with("M is read transposed: P[i][k] multiplied M[c][i] with N[c][k] instead of M[i][c]");
  }
  if (map.rows == map.cols && all_of(map, [&](int i, int k, int c, const Term& t) {
        return t.kind == Term::Kind::one && t.m_row == k && t.m_col == c && t.n_col == i;
      })) {
    return with(
        "P is written transposed: P[i][k] holds row k of M times column i of N; write "
        "P[row * width + col]");
  }
  if (all_of(map, [&](int, int k, int c, const Term& t) {
        return c == k ? t.kind == Term::Kind::several : t.kind == Term::Kind::none;
      })) {
    return with(
        "N is read transposed: every term of P[i][k] came from N's row k (how M was read cannot "
        "be seen then); N's element of inner index c and column k is N[c * width + k]");
  }
  return {unwritten, one_element(map)};  // the unwritten part proven, the rest shown
}

void apply_term_diagnosis(Comparison& cmp, const TermDiagnosis& d) {
  cmp.report = with_diagnosis(cmp.report, "on inputs that say where each term came from", d.cause,
                              d.example);
}

}  // namespace kit
