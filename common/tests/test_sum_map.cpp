// kit/sum_map.hpp on the host: block-sum kernels with the mistakes of lab 01's part 3, emulated
// on the map's inputs, and the cause the map proves for each.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <functional>
#include <stdexcept>
#include <vector>

#include "kit/poison.hpp"
#include "kit/sum_map.hpp"

using Catch::Matchers::ContainsSubstring;

namespace {

constexpr int kBlock = 8;

// An emulated kernel: block g's sum over the elements take(g) says, `times` each.
using Takes = std::function<std::vector<int>(int g, int n)>;

kit::SumDiagnosis explain(const Takes& take, int n) {
  const int groups = (n + kBlock - 1) / kBlock;
  const auto reduce = [&](const std::vector<float>& x) {
    std::vector<float> sums(groups, 0.0f);
    for (int g = 0; g < groups; ++g) {
      for (int e : take(g, n)) sums[g] += x[e];
    }
    return sums;
  };
  return kit::explain_block_sums(kit::map_sums(reduce, n, groups), kBlock);
}

std::vector<int> span(int from, int to, int n) {  // [from, min(to, n))
  std::vector<int> e;
  for (int i = from; i < to && i < n; ++i) e.push_back(i);
  return e;
}

}  // namespace

TEST_CASE("a right block sum maps every element to its own block once", "[common][sum_map]") {
  const auto right = [](int g, int n) { return span(g * kBlock, (g + 1) * kBlock, n); };
  const kit::SumDiagnosis d = explain(right, 30);
  CHECK(d.cause.empty());
  CHECK(d.example.empty());
}

TEST_CASE("the sum map names the block sum mistakes it proves", "[common][sum_map]") {
  // A tree whose first stride is a quarter of the block: only the first half is added in.
  CHECK_THAT(explain([](int g, int n) { return span(g * kBlock, g * kBlock + 4, n); }, 32).cause,
             ContainsSubstring("took only its first 4 elements, of a block of 8") &&
                 ContainsSubstring("first stride must be half the block, 4"));
  // The same in one partial block: 7 elements, of which the sum took the first 4.
  CHECK_THAT(explain([](int g, int n) { return span(g * kBlock, g * kBlock + 4, n); }, 7).cause,
             ContainsSubstring("took only its first 4 elements, of a block of 8"));
  // A tree that stops before stride 1: each block keeps the sum of its even offsets.
  CHECK_THAT(explain(
                 [](int g, int n) {
                   std::vector<int> e;
                   for (int i = g * kBlock; i < (g + 1) * kBlock && i < n; i += 2) e.push_back(i);
                   return e;
                 },
                 32)
                 .cause,
             ContainsSubstring("offset in the block is a multiple of 2: the reduction stopped 1 "
                               "step early"));
  // An index without blockIdx.x * blockDim.x: every block sums block 0.
  CHECK_THAT(explain([](int, int n) { return span(0, kBlock, n); }, 32).cause,
             ContainsSubstring("every block's sum took block 0's elements") &&
                 ContainsSubstring("lacks the block's offset"));
}

TEST_CASE(
    "a block sum that takes its own elements the wrong number of times is shown and not named",
    "[common][sum_map]") {
  // A race: element 3 of block 1 added twice, no element of another block.
  const kit::SumDiagnosis d = explain(
      [](int g, int n) {
        std::vector<int> e = span(g * kBlock, (g + 1) * kBlock, n);
        if (g == 1) e.push_back(kBlock + 3);
        return e;
      },
      24);
  CHECK(d.cause.empty());
  CHECK(d.example == "block 1's sum took element 11 twice, and no element of another block");
  // Another block's elements: said as the range taken against the range due.
  const kit::SumDiagnosis shifted =
      explain([](int g, int n) { return span(g * kBlock + 1, (g + 1) * kBlock + 1, n); }, 24);
  CHECK(shifted.cause.empty());
  CHECK(shifted.example ==
        "block 0's sum took elements 1 to 8 where it should take elements 0 "
        "to 7, each once");
}

TEST_CASE("a sum never written or not a whole number reads as unknown", "[common][sum_map]") {
  std::vector<std::vector<float>> sums = {{1.0f, kit::poison_value()}, {0.5f, 0.0f}};
  const kit::SumMap map = kit::decode_sum_map(sums, 24, 2);
  CHECK(map.at(0, 0) == 1);
  CHECK(map.at(1, 0) == -1);   // never written
  CHECK(map.at(0, 12) == -1);  // 0.5 is no count
  CHECK(map.at(1, 12) == 0);
  CHECK_THROWS_AS(kit::decode_sum_map(sums, 5000, 2), std::invalid_argument);
}
