// Lab 01's test support, shared by the public and the hidden tests: inputs, host references, runs
// of the student's kernels on poisoned outputs, and the checks with their diagnoses. A diagnosis
// names a cause only when the values prove it; otherwise it says what it saw and where the
// write-up explains the rule.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kit/compare.hpp"
#include "kit/cuda_check.hpp"
#include "kit/kernel_attributes.hpp"
#include "kit/matrix.hpp"
#include "kit/poison.hpp"
#include "kit/remote.hpp"
#include "kit/sum_map.hpp"
#include "memory_qualifiers.h"

namespace lab01_tests {

// What the compiler gave the student's kernels, read from the worker's executable
// (tests/kernel_attributes_lab01.cpp).
kit::KernelAttributes block_sums_attributes();
kit::KernelAttributes chunk_histograms_attributes();

// n values drawn uniformly from [-1, 1), the same for the same seed on every machine.
inline std::vector<float> random_values(int n, std::uint64_t seed) {
  return kit::random_matrix(1, n, seed);
}

// n values in [0, 1] (1 itself rarely), for the histograms.
inline std::vector<float> unit_values(int n, std::uint64_t seed) {
  std::vector<float> values = random_values(n, seed);
  for (float& v : values) v = 0.5f * (v + 1.0f);
  return values;
}

inline std::string at_most(int shown, int total) {
  return shown < total ? " (first " + std::to_string(shown) + " shown)" : "";
}

// ---- Part 1: the polynomial ----

// y = p(x) computed by the student's kernel, with the coefficients already in the constant
// array; y is poisoned first, so that an element never written shows.
// The arrays cross as host memory staged for the worker (kit::remote::StagedArrays), here and
// below: the judge then makes no CUDA context for these tests (docs/design/engine.md).
inline std::vector<float> run_polynomial(const std::vector<float>& x, int count) {
  const int n = static_cast<int>(x.size());
  std::vector<float> y(x.size(), kit::poison_value());
  const kit::remote::StagedArrays arrays({kit::remote::staged(x), kit::remote::staged(y)});
  lab01::launch_evaluate_polynomial(x.data(), y.data(), n, count);
  return y;
}

// Empty when y[i] = c[0] + c[1] x[i] + ... within float rounding for every i, else the report.
inline std::string polynomial_problem(const std::vector<float>& x, const std::vector<float>& c,
                                      const std::vector<float>& y) {
  const int n = static_cast<int>(x.size());
  std::vector<double> want(x.size());
  std::vector<bool> wrong(x.size(), false);
  int unwritten = 0, bad = 0, first_unwritten = -1, shown = 0;
  std::ostringstream detail;
  for (int i = 0; i < n; ++i) {
    double value = 0.0, magnitude = 0.0;
    for (int k = static_cast<int>(c.size()) - 1; k >= 0; --k) {
      value = value * x[i] + c[k];
      magnitude = magnitude * std::fabs(x[i]) + std::fabs(c[k]);
    }
    want[i] = value;
    if (kit::is_poison(y[i])) {
      if (first_unwritten < 0) first_unwritten = i;
      ++unwritten;
    } else if (!(std::fabs(y[i] - value) <= 1e-6 + 2e-5 * magnitude)) {
      wrong[i] = true;
      if (shown++ < 5) {
        detail << "  y[" << i << "] = " << y[i] << ", expected " << value << " (x = " << x[i]
               << ")\n";
      }
      ++bad;
    }
  }
  if (unwritten == 0 && bad == 0) return "";
  std::ostringstream report;
  report << "polynomial of " << c.size() << " coefficients, n = " << n << ": " << bad
         << " values wrong and " << unwritten << " never written\n";
  if (bad > 0)
    report << "wrong values" << at_most(std::min(shown, 5), bad) << ":\n" << detail.str();
  if (unwritten == n) {
    report << "hint: no element of y was written: README section 3, each thread with i < n "
              "stores y[i], and launch_evaluate_polynomial launches the kernel.";
    return report.str();
  }
  const int covered = n / lab01::kThreadsPerBlock * lab01::kThreadsPerBlock;
  if (bad == 0 && first_unwritten == covered && unwritten == n - covered) {
    report << "hint: y[" << covered << "] to y[" << n - 1 << "] were never written and every "
           << "other value is right: the grid covers only the first " << covered
           << " elements; round the number of blocks up (README section 3).";
    return report.str();
  }
  // Horner's rule written wrongly, each as the values it computes: a match on every element
  // written proves the mistake.
  struct Horner {
    const char* hint;
    int first, last, step;  // the coefficients taken, in the order taken
  };
  const int count = static_cast<int>(c.size());
  const Horner mistakes[] = {
      {"every value is the polynomial with its coefficients in reverse order: Horner's rule "
       "starts from the last coefficient, c[count - 1], and works down to c[0] (README section 3).",
       0, count - 1, 1},
      {"every value is (p(x) - c[0]) / x: the loop stopped before the constant term; run k down "
       "to 0 (README section 3).",
       count - 1, 1, -1},
      {"every value lacks the highest term, c[count - 1] x^(count - 1): start from "
       "c[count - 1], not c[count - 2] (README section 3).",
       count - 2, 0, -1},
  };
  for (const Horner& m : mistakes) {
    if (count < 2 || bad == 0) break;
    bool all = true;
    for (int i = 0; i < n && all; ++i) {
      if (kit::is_poison(y[i])) continue;
      double value = 0.0, magnitude = 0.0;
      for (int k = m.first; m.step > 0 ? k <= m.last : k >= m.last; k += m.step) {
        value = value * x[i] + c[k];
        magnitude = magnitude * std::fabs(x[i]) + std::fabs(c[k]);
      }
      all = std::fabs(y[i] - value) <= 1e-6 + 2e-5 * magnitude;
    }
    if (all) {
      report << "hint: " << m.hint;
      return report.str();
    }
  }
  // Threads that share one variable end up storing each other's values.
  int copied = 0;
  for (int i = 0; i < n; ++i) {
    if (!wrong[i]) continue;
    const int block = i / lab01::kThreadsPerBlock * lab01::kThreadsPerBlock;
    for (int j = block; j < std::min(n, block + lab01::kThreadsPerBlock); ++j) {
      if (j != i && y[j] == y[i] && want[j] != want[i]) {
        ++copied;
        break;
      }
    }
  }
  if (copied >= 2 && copied * 2 >= bad) {
    report << "hint: " << copied << " of the wrong values equal what another thread of the same "
           << "block stored, although their x differ: the threads of a block wrote one variable "
              "they all share. A value each thread needs for itself belongs in an automatic "
              "variable (a register), not in __shared__ memory (README section 2).";
    return report.str();
  }
  report << "hint: " << kit::kCannotTellWhy
         << "; README section 3 shows the kernel step by step (Horner's rule from the last "
            "coefficient down).";
  return report.str();
}

// ---- Part 2: the counter ----

inline unsigned int host_count_above(const std::vector<float>& x, float threshold, int first = 0,
                                     int end = -1) {
  unsigned int count = 0;
  const int stop = end < 0 ? static_cast<int>(x.size()) : end;
  for (int i = first; i < stop; ++i) count += x[i] > threshold ? 1u : 0u;
  return count;
}

// ---- Part 3: the block sums ----

inline int block_count(int n) {
  return (n + lab01::kThreadsPerBlock - 1) / lab01::kThreadsPerBlock;
}

inline std::vector<float> run_block_sums(const std::vector<float>& x) {
  const int n = static_cast<int>(x.size());
  std::vector<float> sums(block_count(n), kit::poison_value());
  const kit::remote::StagedArrays arrays({kit::remote::staged(x), kit::remote::staged(sums)});
  lab01::launch_block_sums(x.data(), sums.data(), n);
  return sums;
}

// A block sums failure that the values could not explain, run again on inputs that say which
// elements each sum took (kit/sum_map.hpp): the cause the map proves, or one block's account.
// Left as it was where n is past what a map covers or the launch fails on the map's inputs.
inline std::string with_sum_map(const std::string& problem, int n) {
  if (problem.find(kit::kCannotTellWhy) == std::string::npos || n > kit::kSumMapMaxElements) {
    return problem;
  }
  try {
    const kit::SumDiagnosis d = kit::explain_block_sums(
        kit::map_sums(run_block_sums, n, block_count(n)), lab01::kThreadsPerBlock);
    return kit::with_diagnosis(problem, "on inputs that say which elements each sum took", d.cause,
                               d.example);
  } catch (const std::exception&) {
    return problem;
  }
}

inline std::string block_sums_problem(const std::vector<float>& x, const std::vector<float>& sums) {
  const int n = static_cast<int>(x.size());
  const int blocks = block_count(n);
  int unwritten = 0, bad = 0, shown = 0, last_wrong = -1, first_unwritten = -1;
  std::ostringstream detail;
  for (int b = 0; b < blocks; ++b) {
    double want = 0.0, magnitude = 0.0;
    for (int i = b * lab01::kThreadsPerBlock; i < std::min(n, (b + 1) * lab01::kThreadsPerBlock);
         ++i) {
      want += x[i];
      magnitude += std::fabs(x[i]);
    }
    if (kit::is_poison(sums[b])) {
      if (first_unwritten < 0) first_unwritten = b;
      ++unwritten;
    } else if (!(std::fabs(sums[b] - want) <= 1e-6 + 1e-5 * magnitude)) {
      last_wrong = b;
      if (shown++ < 5) {
        detail << "  block_sums[" << b << "] = " << sums[b] << ", expected " << want << "\n";
      }
      ++bad;
    }
  }
  if (unwritten == 0 && bad == 0) return "";
  std::ostringstream report;
  report << "n = " << n << ", " << blocks << " blocks: " << bad << " sums wrong and " << unwritten
         << " never written\n";
  if (bad > 0) report << "wrong sums" << at_most(std::min(shown, 5), bad) << ":\n" << detail.str();
  if (unwritten == blocks) {
    report << "hint: no block sum was written: README section 5, thread 0 of each block stores "
              "the block's sum, and launch_block_sums launches one block per sum.";
  } else if (blocks > 1 && bad == 0 && unwritten == 1 && first_unwritten == blocks - 1 &&
             n % lab01::kThreadsPerBlock != 0) {
    report << "hint: only the last sum, of the block that reaches past n, was never written: "
              "the grid has one block too few; round the number of blocks up (README section 5).";
  } else if (blocks > 1 && bad == 1 && unwritten == 0 && last_wrong == blocks - 1 &&
             n % lab01::kThreadsPerBlock != 0) {
    // Only where other, whole blocks came out right: with one block, any mistake is "the last".
    report << "hint: only the last sum is wrong, of the one block that reaches past n: the "
              "elements at n and beyond must count as 0 (README section 5).";
  } else {
    report << "hint: " << kit::kCannotTellWhy
           << ". A sum read before all its terms were stored changes from run to run: the "
              "racecheck test says whether a barrier is missing (README section 5).";
  }
  return report.str();
}

// ---- Part 4: the chunk histograms ----

inline int chunk_count(int n) { return (n + lab01::kChunk - 1) / lab01::kChunk; }

inline int host_bin(float value) {
  const int bin = static_cast<int>(value * lab01::kBins);
  return bin < 0 ? 0 : (bin >= lab01::kBins ? lab01::kBins - 1 : bin);
}

using HistogramLaunch = void (*)(const float*, int, unsigned int*);

inline std::vector<unsigned int> run_histograms(const std::vector<float>& x,
                                                HistogramLaunch launch) {
  const int n = static_cast<int>(x.size());
  // Every bit set: a count no chunk of kChunk values can reach, so an unwritten count shows.
  std::vector<unsigned int> counts(static_cast<std::size_t>(chunk_count(n)) * lab01::kBins,
                                   0xFFFFFFFFu);
  const kit::remote::StagedArrays arrays({kit::remote::staged(x), kit::remote::staged(counts)});
  launch(x.data(), n, counts.data());
  return counts;
}

inline std::string histograms_problem(const std::vector<float>& x,
                                      const std::vector<unsigned int>& counts) {
  const int n = static_cast<int>(x.size());
  const int chunks = chunk_count(n);
  int unwritten = 0, bad = 0, shown = 0, wrong_totals = 0, bad_last = 0;
  std::ostringstream detail;
  for (int t = 0; t < chunks; ++t) {
    unsigned int want[lab01::kBins] = {};
    const int end = std::min(n, (t + 1) * lab01::kChunk);
    for (int i = t * lab01::kChunk; i < end; ++i) ++want[host_bin(x[i])];
    bool chunk_wrong = false, chunk_unwritten = false;
    unsigned int total = 0;
    for (int b = 0; b < lab01::kBins; ++b) {
      const unsigned int got = counts[static_cast<std::size_t>(t) * lab01::kBins + b];
      if (got == 0xFFFFFFFFu) {
        chunk_unwritten = true;
      } else {
        total += got;
        chunk_wrong = chunk_wrong || got != want[b];
      }
    }
    if (chunk_unwritten) {
      ++unwritten;
    } else if (chunk_wrong) {
      ++bad;
      if (total != static_cast<unsigned int>(end - t * lab01::kChunk)) ++wrong_totals;
      if (t == chunks - 1) bad_last = 1;
      if (shown++ < 3) {
        detail << "  chunk " << t << ": counts";
        for (int b = 0; b < lab01::kBins; ++b) {
          detail << " " << counts[static_cast<std::size_t>(t) * lab01::kBins + b];
        }
        detail << ", expected";
        for (unsigned int w : want) detail << " " << w;
        detail << "\n";
      }
    }
  }
  if (unwritten == 0 && bad == 0) return "";
  std::ostringstream report;
  report << "n = " << n << ", " << chunks << " chunks of " << lab01::kChunk << ": " << bad
         << " chunks counted wrong and " << unwritten << " with counts never written\n";
  if (bad > 0) {
    report << "wrong chunks" << at_most(std::min(shown, 3), bad) << ":\n" << detail.str();
  }
  if (unwritten == chunks) {
    report << "hint: no count was written: README section 6, each thread stores its chunk's "
              "kBins counts in counts[chunk * kBins + b].";
  } else if (chunks > 1 && bad == 1 && bad_last == 1 && unwritten == 0 && n % lab01::kChunk != 0) {
    // Only beside whole chunks counted right: with one chunk, any mistake is "the last".
    report << "hint: only the last chunk, the one that reaches past n, is counted wrong: values "
              "at n and beyond are not counted (README section 6).";
  } else {
    report << "hint: the kit cannot tell why from the counts: " << wrong_totals
           << " of the wrong chunks do not add up to the number of values in the chunk; README "
              "section 6 shows which values a thread counts.";
  }
  return report.str();
}

}  // namespace lab01_tests
