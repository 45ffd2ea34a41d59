#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <stdexcept>

#include "kit/args.hpp"

using Catch::Matchers::ContainsSubstring;

TEST_CASE("argument checks name the function and the argument and the bad value", "[common]") {
  CHECK_NOTHROW(kit::require_positive("f", "width", 1));
  CHECK_THROWS_WITH(kit::require_positive("lab02::naive_matmul", "width", 0),
                    ContainsSubstring("lab02::naive_matmul") && ContainsSubstring("width") &&
                        ContainsSubstring("got 0"));
  CHECK_THROWS_AS(kit::require_positive("f", "width", -5), std::invalid_argument);

  int x = 0;
  CHECK_NOTHROW(kit::require_not_null("f", "h_M", &x));
  CHECK_THROWS_WITH(kit::require_not_null("f", "h_M", nullptr),
                    ContainsSubstring("h_M") && ContainsSubstring("null"));

  CHECK_NOTHROW(kit::require_in_range("f", "block_size", 32, 1, 32));
  CHECK_THROWS_WITH(kit::require_in_range("f", "block_size", 33, 1, 32),
                    ContainsSubstring("between 1 and 32") && ContainsSubstring("got 33"));
}
