// Diagnosis by construction for a reduction into groups (lab 01's block sums): the student's
// launch runs again on inputs whose values say where they came from, so that each group's sum
// tells which input elements it took and how many times, and a wrong kernel's mistake is read
// off that map instead of guessed from how far its sums are off.
//
// Run r codes the elements 12r to 12r + 11: element 12r + j holds 4^j, every other element 0. A
// group's sum is then a number in base 4 whose digit j is how many times the group took element
// 12r + j (0 to 3), exact in float (below 2^24). ceil(n / 12) runs map every element. An
// element taken 4 times or more carries into the next digit and reads as another element: no
// rule below is proven by such a map, and its example may then name the wrong element.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kit {

// Elements one run codes, and the most elements a map covers (its runs stay few).
constexpr int kSumMapWindow = 12;
constexpr int kSumMapMaxElements = 4096;

struct SumMap {
  int groups = 0, elements = 0;
  // [g * elements + e]: how many times group g's sum took element e (0 to 3); -1 where the run
  // that codes e left g's sum unreadable (not a whole number of that form, or never written).
  std::vector<int> counts;
  int at(int g, int e) const { return counts[static_cast<std::size_t>(g) * elements + e]; }
};

// The input of run r for n elements.
std::vector<float> sum_map_input(int n, int run);
int sum_map_runs(int n);

// The map from every run's group sums (run r: `groups` floats, poison where not written).
SumMap decode_sum_map(const std::vector<std::vector<float>>& sums, int n, int groups);

// Runs `reduce` (input x of n elements -> `groups` sums) on every run's input and decodes it.
// n at most kSumMapMaxElements.
SumMap map_sums(const std::function<std::vector<float>(const std::vector<float>&)>& reduce, int n,
                int groups);

// What a map of block sums says, each block of `block` elements summed into one group: `cause`,
// the mistake it proves in the lab's terms, named only when every group agrees with it; else
// `example`, what one wrong group took against what it should have. Both empty when right.
struct SumDiagnosis {
  std::string cause;
  std::string example;
};
SumDiagnosis explain_block_sums(const SumMap& map, int block);

}  // namespace kit
