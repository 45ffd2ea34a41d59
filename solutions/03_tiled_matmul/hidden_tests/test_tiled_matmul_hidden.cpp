// Lab 03's hidden tests: widths and seeds the public tests do not use.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include "lab03_support.hpp"

TEST_CASE("tiled result matches the host reference on hidden widths and seeds",
          "[lab03][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = GENERATE(48, 128, 160, 224, 480, 800);
  lab03_tests::check_width_with_both_tiles(width, 93000 + 11 * width);
}
