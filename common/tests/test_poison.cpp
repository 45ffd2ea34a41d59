// kit/poison.hpp on the host: a guarded array a judge stages for its worker (kit::HostGuarded)
// keeps its sentinels and says where they changed, in the words of the device's GuardedBuffer.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <vector>

#include "kit/poison.hpp"
#include "kit/remote.hpp"

using Catch::Matchers::ContainsSubstring;

TEST_CASE("a host guarded array reports writes before its start and past its end", "[common]") {
  kit::HostGuarded a(5, 4);
  const std::vector<float> values = {1, 2, 3, 4, 5};
  a.copy_from_host(values.data());
  CHECK(a.values() == values);
  CHECK(a.damaged_guards().empty());  // writes inside the data touch no sentinel
  a.data()[4] = 9.0f;
  CHECK(a.damaged_guards().empty());
  a.data()[-2] = 0.0f;
  a.data()[5] = 0.0f;
  a.data()[7] = 0.0f;
  const std::string damage = a.damaged_guards();
  CHECK_THAT(damage, ContainsSubstring("1 element(s) before its start (up to 2 before it)"));
  CHECK_THAT(damage, ContainsSubstring("2 element(s) past its end (the first at index 5)"));
  CHECK(a.storage_bytes() == (5 + 2 * 4) * sizeof(float));
}

TEST_CASE("a host guarded array's poisoned data reads as never written", "[common]") {
  kit::HostGuarded a(3, 2);
  a.poison_data();
  for (float v : a.values()) CHECK(kit::is_poison(v));
  CHECK(a.damaged_guards().empty());
}

TEST_CASE("host arrays cannot be staged in a process whose lab calls do not go to a worker",
          "[common]") {
  // common_tests is no judge: a launch here would be handed the host addresses themselves.
  REQUIRE_FALSE(kit::remote::calls_are_remote());
  std::vector<float> v(4);
  CHECK_THROWS_WITH(kit::remote::StagedArrays({kit::remote::staged(v)}),
                    ContainsSubstring("outside a judge"));
  kit::remote::StagedArray found{};
  CHECK_FALSE(kit::remote::find_staged(v.data(), found));  // nothing was left registered
}
