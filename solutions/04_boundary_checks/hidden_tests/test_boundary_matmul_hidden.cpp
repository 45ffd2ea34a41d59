// Lab 04's hidden tests: widths, shapes and seeds the public tests do not use.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include "lab04_support.hpp"

using lab04_tests::Shape;

TEST_CASE("tiled result matches the host reference on hidden awkward widths and seeds",
          "[lab04][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int width = GENERATE(3, 47, 63, 65, 129, 500, 777);
  lab04_tests::check_square_with_both_tiles(width, 94000 + 13 * width);
}

TEST_CASE("rectangular result matches the host reference on hidden shapes",
          "[lab04][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const Shape s = GENERATE(Shape{2, 3, 4}, Shape{31, 65, 9}, Shape{129, 17, 200},
                           Shape{500, 64, 33}, Shape{9, 700, 70});
  lab04_tests::check_rect_with_both_tiles(s, 95000 + s.I * 5 + s.J * 3 + s.K);
}
