// The tiled kernels' resources as the compiler built them, read from the student's worker
// executable (kit/remote.hpp): the tests never load the student's code, so they read the file.
#include <stdexcept>
#include <string>

#include "kit/remote.hpp"
#include "kit/sass.hpp"
#include "lab04_support.hpp"

namespace lab04_tests {
namespace {

kit::KernelAttributes attributes(const char* kernel, int tile_width) {
  if (tile_width != 16 && tile_width != 32) {
    throw std::invalid_argument(std::string(kernel) + ": no kernel for tile width " +
                                std::to_string(tile_width));
  }
  return kit::remote::worker_kernel_attributes(
      kit::sass::mangled_template_prefix("lab04", kernel, tile_width));
}

}  // namespace

kit::KernelAttributes square_kernel_attributes(int tile_width) {
  return attributes("tiled_matmul_kernel", tile_width);
}

kit::KernelAttributes rect_kernel_attributes(int tile_width) {
  return attributes("rect_matmul_kernel", tile_width);
}

}  // namespace lab04_tests
