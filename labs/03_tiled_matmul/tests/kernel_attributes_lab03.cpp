// The tiled kernel's resources as the compiler built it, read from the student's worker
// executable (kit/remote.hpp): the tests never load the student's code, so they read the file.
#include <stdexcept>
#include <string>

#include "kit/remote.hpp"
#include "kit/sass.hpp"
#include "lab03_support.hpp"

namespace lab03_tests {

kit::KernelAttributes tiled_kernel_attributes(int tile_width) {
  if (tile_width != 16 && tile_width != 32) {
    throw std::invalid_argument("tiled_kernel_attributes: no kernel for tile width " +
                                std::to_string(tile_width));
  }
  return kit::remote::worker_kernel_attributes(
      kit::sass::mangled_template_prefix("lab03", "tiled_matmul_kernel", tile_width));
}

}  // namespace lab03_tests
