// The one lab 01 test file that nvcc compiles: it names the student's kernels, which only CUDA code
// can, so that the Catch2 tests (plain C++) can read what the compiler gave them.
#include "kit/kernel_attributes.hpp"
#include "lab01_support.hpp"
#include "memory_qualifiers.h"

namespace lab01_tests {

kit::KernelAttributes block_sums_attributes() {
  return kit::kernel_attributes(&lab01::block_sums_kernel);
}

kit::KernelAttributes chunk_histograms_attributes() {
  return kit::kernel_attributes(&lab01::chunk_histograms_kernel);
}

}  // namespace lab01_tests
