// Lab 05's hidden tests: shapes, strip depths and seeds the public tests do not use.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include "lab05_support.hpp"

using lab05_tests::Shape;

TEST_CASE("result matches the host reference on hidden shapes with strips one tile deep",
          "[lab05][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const Shape s = GENERATE(Shape{2, 3, 4}, Shape{31, 65, 9}, Shape{129, 17, 200},
                           Shape{500, 64, 33}, Shape{777, 777, 777});
  lab05_tests::check_shape(s, 95100 + s.I * 5 + s.J * 3 + s.K, {1});
}

TEST_CASE("result matches the host reference on hidden shapes with deep strips",
          "[lab05][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const Shape s =
      GENERATE(Shape{2, 3, 4}, Shape{9, 700, 70}, Shape{129, 17, 200}, Shape{65, 257, 63});
  lab05_tests::check_shape(s, 95200 + s.I * 5 + s.J * 3 + s.K, {5, 6});
}
