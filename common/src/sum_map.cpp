#include "kit/sum_map.hpp"

#include <cmath>
#include <stdexcept>

#include "kit/poison.hpp"
#include "kit/term_map.hpp"

namespace kit {
namespace {

constexpr float kDigits = 16777216.0f;  // 4^12: every digit pattern lies below it

// The elements group g took, as "e0 to e1" when they are one run, else a count and the first.
std::string taken(const SumMap& map, int g) {
  int first = -1, last = -1, count = 0;
  bool contiguous = true;
  for (int e = 0; e < map.elements; ++e) {
    if (map.at(g, e) <= 0) continue;
    if (count > 0 && e != last + 1) contiguous = false;
    if (first < 0) first = e;
    last = e, ++count;
  }
  if (count == 0) return "no element";
  if (contiguous) return "elements " + index_range(first, last);
  return std::to_string(count) + " elements from " + std::to_string(first) + " to " +
         std::to_string(last);
}

}  // namespace

int sum_map_runs(int n) { return (n + kSumMapWindow - 1) / kSumMapWindow; }

std::vector<float> sum_map_input(int n, int run) {
  std::vector<float> x(static_cast<std::size_t>(n), 0.0f);
  float code = 1.0f;
  for (int j = 0; j < kSumMapWindow; ++j, code *= 4.0f) {
    const int e = run * kSumMapWindow + j;
    if (e < n) x[static_cast<std::size_t>(e)] = code;
  }
  return x;
}

SumMap decode_sum_map(const std::vector<std::vector<float>>& sums, int n, int groups) {
  if (n < 1 || n > kSumMapMaxElements || groups < 1 ||
      static_cast<int>(sums.size()) != sum_map_runs(n)) {
    throw std::invalid_argument("a sum map needs 1 <= n <= 4096 and one run per 12 elements");
  }
  SumMap map;
  map.groups = groups, map.elements = n;
  map.counts.assign(static_cast<std::size_t>(groups) * n, -1);
  for (int r = 0; r < static_cast<int>(sums.size()); ++r) {
    if (static_cast<int>(sums[r].size()) != groups) {
      throw std::invalid_argument("a sum map's run has a sum for each group");
    }
    for (int g = 0; g < groups; ++g) {
      const float s = sums[r][g];
      if (is_poison(s) || !(s >= 0.0f) || s >= kDigits || s != std::floor(s)) continue;
      long digits = static_cast<long>(s);
      for (int j = 0; j < kSumMapWindow; ++j, digits /= 4) {
        const int e = r * kSumMapWindow + j;
        if (e < n) map.counts[static_cast<std::size_t>(g) * n + e] = static_cast<int>(digits % 4);
      }
    }
  }
  return map;
}

SumMap map_sums(const std::function<std::vector<float>(const std::vector<float>&)>& reduce, int n,
                int groups) {
  if (n < 1 || n > kSumMapMaxElements) {
    throw std::invalid_argument("a sum map covers 1 to 4096 elements");
  }
  std::vector<std::vector<float>> sums;
  for (int r = 0; r < sum_map_runs(n); ++r) sums.push_back(reduce(sum_map_input(n, r)));
  return decode_sum_map(sums, n, groups);
}

SumDiagnosis explain_block_sums(const SumMap& map, int block) {
  const auto every = [&](const std::function<bool(int g, int e, int count)>& rule) {
    for (int g = 0; g < map.groups; ++g) {
      for (int e = 0; e < map.elements; ++e) {
        if (!rule(g, e, map.at(g, e))) return false;
      }
    }
    return true;
  };
  const auto own = [&](int g, int e) { return e >= g * block && e < (g + 1) * block; };
  if (every([&](int g, int e, int c) { return c == (own(g, e) ? 1 : 0); })) return {};
  // Each block took only the first h of its elements, the same h for every block.
  for (int h = 1; h < block && h < map.elements; ++h) {
    if (every([&](int g, int e, int c) { return c == (own(g, e) && e < g * block + h ? 1 : 0); })) {
      return {"each block's sum took only its first " + std::to_string(h) +
                  " elements, of a block of " + std::to_string(block) +
                  ": the reduction's first stride must be half the block, " +
                  std::to_string(block / 2) + ", so that every element is added in " +
                  "(README section 5); a read of partial[] before the store it needs does the " +
                  "same, which the racecheck test would report",
              ""};
    }
  }
  // Each block took only the elements whose offset in it is a multiple of m: a tree that stops
  // log2(m) steps early (while stride > 1, say) leaves the sum of those in partial[0].
  for (int m = 2, steps = 1; m < block && m < map.elements; m *= 2, ++steps) {
    if (every([&](int g, int e, int c) {
          return c == (own(g, e) && (e - g * block) % m == 0 ? 1 : 0);
        })) {
      return {
          "each block's sum took only the elements whose offset in the block is a multiple "
          "of " +
              std::to_string(m) + ": the reduction stopped " + std::to_string(steps) +
              (steps == 1 ? " step" : " steps") +
              " early, before stride 1; run it while stride > 0 (README section 5)",
          ""};
    }
  }
  if (map.groups > 1 && every([&](int, int e, int c) { return c == (e < block ? 1 : 0); })) {
    return {"every block's sum took block 0's elements, 0 to " +
                std::to_string(std::min(block, map.elements) - 1) +
                ": the element's index lacks the block's offset, blockIdx.x * blockDim.x "
                "(README section 5)",
            ""};
  }
  // No cause proven: the first group that took something other than its own elements once.
  const bool only_own = every([&](int g, int e, int c) { return own(g, e) || c == 0; });
  for (int g = 0; g < map.groups; ++g) {
    for (int e = 0; e < map.elements; ++e) {
      const int c = map.at(g, e);
      if (c == (own(g, e) ? 1 : 0)) continue;
      if (only_own) {
        return {"", "block " + std::to_string(g) + "'s sum took element " + std::to_string(e) +
                        " " +
                        (c < 0    ? std::string("an unreadable number of times")
                         : c == 0 ? std::string("not at all")
                         : c == 2 ? std::string("twice")
                                  : std::to_string(c) + " times") +
                        ", and no element of another block"};
      }
      const int lo = g * block, hi = std::min(map.elements, (g + 1) * block) - 1;
      return {"", "block " + std::to_string(g) + "'s sum took " + taken(map, g) +
                      " where it should take elements " + index_range(lo, hi) + ", each once"};
    }
  }
  return {};
}

}  // namespace kit
