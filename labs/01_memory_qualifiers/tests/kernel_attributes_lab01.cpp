// What the compiler gave the student's kernels, read from the worker's executable
// (kit/remote.hpp): the tests never load the student's code, so they read the file.
#include "kit/kernel_attributes.hpp"
#include "kit/remote.hpp"
#include "kit/sass.hpp"
#include "lab01_support.hpp"

namespace lab01_tests {

kit::KernelAttributes block_sums_attributes() {
  return kit::remote::worker_kernel_attributes(
      kit::sass::mangled_prefix("lab01", "block_sums_kernel"));
}

kit::KernelAttributes chunk_histograms_attributes() {
  return kit::remote::worker_kernel_attributes(
      kit::sass::mangled_prefix("lab01", "chunk_histograms_kernel"));
}

}  // namespace lab01_tests
