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
    return "rows " + index_range(first_i, map.rows - 1) +
           " of P were never written: no thread computes " +
           "them (the grid has too few blocks in y, or the row guard stops early)";
  }
  if (first_i == 0 && cols_from(first_k)) {
    return "columns " + index_range(first_k, map.cols - 1) +
           " of P were never written: no thread " +
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
    case Term::Kind::twice: return "the right term twice";
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

// Indices as a student reads them: runs of consecutive ones as "a to b".
std::string index_list(const std::vector<int>& indices) {
  std::string text;
  for (std::size_t j = 0; j < indices.size();) {
    std::size_t end = j;
    while (end + 1 < indices.size() && indices[end + 1] == indices[end] + 1) ++end;
    text += (j ? ", " : "") + index_range(indices[j], indices[end]);
    j = end + 1;
  }
  return text;
}

// The loop over k inside a phase that skips the same positions of every phase: the missing
// inner indices are exactly those whose position in their phase (c % tile) is in one set, with
// more than one phase. Empty when the map shows something else.
std::string missing_in_every_phase(const TermMap& map, const std::vector<int>& missing, int tile) {
  if (tile <= 0 || map.inner <= tile) return "";
  std::vector<char> skipped(tile, 0);
  for (int c : missing) skipped[c % tile] = 1;
  std::vector<int> positions;
  for (int p = 0; p < tile; ++p) {
    if (skipped[p]) positions.push_back(p);
  }
  std::size_t expected = 0;
  for (int c = 0; c < map.inner; ++c) expected += skipped[c % tile];
  if (expected != missing.size() || positions.size() == static_cast<std::size_t>(tile)) return "";
  const std::string every =
      "every element of P lacks, in every phase, the terms at k = " + index_list(positions) +
      " of the tile (inner index " + index_list(missing) + ")";
  if (positions.size() == 1 && positions[0] == 0) {
    return every + ": the loop over k inside a phase starts at 1; start it at 0";
  }
  // A loop that stops at half the tile or later (k < TILE_WIDTH / 2, k < TILE_WIDTH - 1). One that
  // keeps only a phase's first term or two is no mistake students make, and is what a kernel
  // whose threads returned before loading their slots left on an H200 (lab 04's early return).
  if (positions.back() == tile - 1 && positions.front() >= tile / 2 &&
      positions.size() == static_cast<std::size_t>(tile - positions.front())) {
    return every +
           ": the loop over k inside a phase stops at k = " + std::to_string(positions.front()) +
           "; run it while k < TILE_WIDTH";
  }
  return "";
}

// A last, partial phase whose tile slots past the edge of the matrices kept the previous
// phase's values: every element took the right terms, and those of the previous phase's
// matching slots twice. Empty when the map shows anything else.
std::string stale_tile_terms(const TermMap& map, int tile) {
  const int last_phase = tile > 0 ? (map.inner - 1) / tile * tile : 0;
  const int edge = map.inner - last_phase;  // the slots of the last phase inside the matrices
  if (tile <= 0 || last_phase == 0 || edge == tile) return "";
  const int from = last_phase - tile + edge, to = last_phase - 1;
  const bool stale = all_of(map, [&](int i, int k, int c, const Term& t) {
    return c >= from && c <= to ? t.kind == Term::Kind::twice : right(i, k, c, t);
  });
  if (!stale) return "";
  return "every element of P took the terms of inner index " + index_range(from, to) +
         " twice: in the last, partial phase the tile slots past the edge of the matrices kept "
         "the previous phase's values, which the kernel multiplied again; fill 0 into the tile "
         "where the element lies outside the matrix (lab 04's README, section 3)";
}

// M read with rows of the wrong length: every readable term of P[i][k] is M's element at
// i * length + c with N[c][k], for one length other than inner (M's elements past its end read
// nothing the map knows). Empty when the map shows anything else.
std::string m_row_length(const TermMap& map) {
  if (map.rows < 2) return "";
  const Term& probe = map.at(1, 0, 0);
  if (probe.kind != Term::Kind::one) return "";
  const int length = probe.m_row * map.inner + probe.m_col;  // where row 1 starts
  if (length == map.inner || length <= 0) return "";
  int readable = 0;
  const bool fits = all_of(map, [&](int i, int k, int c, const Term& t) {
    const long long flat = static_cast<long long>(i) * length + c;
    if (t.kind != Term::Kind::one) return flat >= static_cast<long long>(map.rows) * map.inner;
    ++readable;
    return t.n_col == k && t.m_row * map.inner + t.m_col == flat;
  });
  if (!fits || readable == 0) return "";
  const std::string which = length == map.cols   ? " (K, the columns of N and P)"
                            : length == map.rows ? " (I, the rows of M and P)"
                                                 : "";
  return "M is indexed as if its rows were " + std::to_string(length) + " floats long" + which +
         ": P[i][k] multiplied M's element i * " + std::to_string(length) +
         " + c with N[c][k]; M has J columns, " + std::to_string(map.inner) +
         ", so M[i][c] is M[i * J + c]";
}

// M's inner index and N's out of step by a constant d: every readable term of P[i][k] is
// M[i][c + d] x N[c][k], the terms whose c + d falls outside M's row reading nothing the map
// knows. The sums cannot tell which load is off (M's index by +d or N's by -d), so the text
// names both.
std::string out_of_step(const TermMap& map) {
  int d = 0;
  bool found = false;
  for (int c = 0; c < map.inner && !found; ++c) {
    const Term& t = map.at(0, 0, c);
    if (t.kind == Term::Kind::one && t.m_row == 0 && t.n_col == 0) d = t.m_col - c, found = true;
  }
  if (!found || d == 0) return "";
  int readable = 0;
  const bool fits = all_of(map, [&](int i, int k, int c, const Term& t) {
    const bool inside = c + d >= 0 && c + d < map.inner;
    if (t.kind != Term::Kind::one) return !inside && t.kind != Term::Kind::several;
    ++readable;
    return inside && t.m_row == i && t.n_col == k && t.m_col == c + d;
  });
  if (!fits || readable == 0) return "";
  const std::string by = std::to_string(d < 0 ? -d : d);
  return "P[i][k] multiplied M[i][c " + std::string(d < 0 ? "- " : "+ ") + by +
         "] with N[c][k]: the inner index of M and that of N are out of step by " + by +
         "; one of the two loads (its phase offset, or tx and ty in it) is off by " + by +
         ", and the values cannot tell which";
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
      } else if (m == Read::several && n == Read::several) {
        const int i = static_cast<int>(e) / cols, k = static_cast<int>(e) % cols;
        const bool twice = which_m[c][e] == 2.0f * static_cast<float>(kCode + i * inner + c) &&
                           which_n[c][e] == 2.0f * static_cast<float>(kCode + k);
        t.kind = twice ? Term::Kind::twice : Term::Kind::several;
      } else {
        // One family read several codes and the other did not: no kernel summing products of
        // M and N does that (one tile written over the other does), so nothing is read from it.
        t.kind = Term::Kind::unreadable;
      }
    }
  }
  return map;
}

std::string index_range(int from, int to) {
  return from == to ? std::to_string(from) : std::to_string(from) + " to " + std::to_string(to);
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
      // Shown, not named: a loop that runs no iteration does this, and so does a product of two
      // tiles laid over each other, whose values are 0 here too.
      return {unwritten,
              "no element of P took any product: every element is 0 (a loop over the inner "
              "dimension or over the phases that runs no iteration leaves this, and so does "
              "any kernel whose products all come out 0)"};
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
                  index_range(lo, hi) + ": the phase loop stops one phase short" + round_up);
    }
    if (contiguous && tile > 0 && lo == 0 && hi + 1 == last_phase && last_phase > 0) {
      const std::string also =
          last_phase == tile ? ", or the phase loop starts one phase late" : "";
      return with("every element of P keeps only the products of its last phase (inner index " +
                  index_range(last_phase, map.inner - 1) + "): the running sum is reset in every " +
                  "phase; set it to 0 once, before the phase loop" + also);
    }
    if (contiguous && tile > 0 && lo == 0 && hi == tile - 1 && map.inner > 2 * tile) {
      // With two phases this is also the sum reset in every phase, which the rule above says.
      return with("every element of P lacks the products of the first phase, inner index 0 to " +
                  std::to_string(tile - 1) + ": the phase loop starts one phase late; start ph " +
                  "at 0");
    }
    // A loop that steps by 2 to 4 (k += 2 for k++): wider steps, such as whole tiles, are what
    // stale shared memory read as zeros may look like, and no mistake of the chapter.
    for (int step = 2; step <= 4 && step < map.inner && (tile <= 0 || step < tile); ++step) {
      std::size_t off_step = 0;  // the inner indices that are no multiple of step
      for (int c = 0; c < map.inner; ++c) off_step += c % step != 0;
      bool all_off_step = off_step == missing.size();
      for (int c : missing) all_off_step = all_off_step && c % step != 0;
      if (all_off_step) {
        return with("every element of P took only the terms whose inner index is a multiple of " +
                    std::to_string(step) + " (0, " + std::to_string(step) + ", " +
                    std::to_string(2 * step) + ", ...): the loop over k steps by " +
                    std::to_string(step) + "; step it by 1");
      }
    }
    if (const std::string in_phase = missing_in_every_phase(map, missing, tile);
        !in_phase.empty()) {
      return with(in_phase);
    }
    if (contiguous && tile > 0 && lo % tile == 0 && lo > 0 && hi == map.inner - 1) {
      // Phases counted along another side of P: as many as its tiles along the columns or rows.
      const auto tiles = [&](int side) { return (side + tile - 1) / tile; };
      const int ran = lo / tile;
      const char* side = ran == tiles(map.cols)   ? "columns, K"
                         : ran == tiles(map.rows) ? "rows, I"
                                                  : nullptr;
      if (side != nullptr && ran != tiles(map.inner)) {
        return with("every element of P lacks the terms of inner index " + index_range(lo, hi) +
                    ": the phase loop ran " + std::to_string(ran) +
                    (ran == 1 ? " time" : " times") + ", as many as P has tiles along its " + side +
                    "; phases run along J, the inner dimension: ceil(" + std::to_string(map.inner) +
                    " / TILE_WIDTH) = " + std::to_string(tiles(map.inner)));
      }
    }
    // Shown, not named: which terms are missing, and no rule of the chapter that explains it.
    return {unwritten, "every element of P lacks the terms of inner index " +
                           (contiguous ? index_range(lo, hi) : index_list(missing)) +
                           " and takes the others right"};
  }
  if (const std::string stale = stale_tile_terms(map, tile); !stale.empty()) return with(stale);
  if (const std::string length = m_row_length(map); !length.empty()) return with(length);
  if (const std::string step = out_of_step(map); !step.empty()) return with(step);
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

std::string wrong_element_text(const TermMap& map) { return one_element(map); }

bool map_replays(const TermMap& map, const MatmulProblem& problem, const std::vector<float>& P) {
  if (problem.rows != map.rows || problem.inner != map.inner || problem.cols != map.cols ||
      P.size() != static_cast<std::size_t>(map.rows) * map.cols) {
    return false;
  }
  const auto M = [&](int a, int b) { return static_cast<double>(problem.M[a * map.inner + b]); };
  const auto N = [&](int a, int b) { return static_cast<double>(problem.N[a * map.cols + b]); };
  for (int i = 0; i < map.rows; ++i) {
    for (int k = 0; k < map.cols; ++k) {
      const float got = P[static_cast<std::size_t>(i) * map.cols + k];
      if (!map.was_written(i, k) || is_poison(got)) continue;
      double sum = 0.0, size = 0.0;
      bool known = true;
      for (int c = 0; c < map.inner && known; ++c) {
        const Term& t = map.at(i, k, c);
        double term = 0.0;
        if (t.kind == Term::Kind::one) {
          term = M(t.m_row, t.m_col) * N(c, t.n_col);
        } else if (t.kind == Term::Kind::twice) {
          term = 2.0 * M(i, c) * N(c, k);
        } else if (t.kind != Term::Kind::none) {
          known = false;  // several or unreadable: the map does not say which products
        }
        sum += term;
        size += std::fabs(term);
      }
      // The kernel sums in float in its own order; the map's sum is exact.
      if (known && !(std::fabs(got - sum) <= 1e-4 * size + 1e-6)) return false;
    }
  }
  return true;
}

void apply_term_diagnosis(Comparison& cmp, const TermDiagnosis& d) {
  cmp.report = with_diagnosis(cmp.report, "on inputs that say where each term came from", d.cause,
                              d.example);
}

}  // namespace kit
