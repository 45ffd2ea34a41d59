// A stand-in for the grader's gate (grader/confine/gate.py) in the kit's own tests: two pipes,
// named by KIT_GPU_GATE for as long as it lives.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <string>

namespace kit_tests {

// The grader's side: reads what the test process asked, and may grant in advance.
struct FakeGate {
  int request[2] = {-1, -1};
  int grant[2] = {-1, -1};
  FakeGate() {
    REQUIRE(pipe(request) == 0);
    REQUIRE(pipe(grant) == 0);
    REQUIRE(fcntl(request[0], F_SETFL, O_NONBLOCK) == 0);
    const std::string value = std::to_string(request[1]) + "," + std::to_string(grant[0]);
    setenv("KIT_GPU_GATE", value.c_str(), 1);
  }
  ~FakeGate() {
    unsetenv("KIT_GPU_GATE");
    for (int fd : {request[0], request[1], grant[0], grant[1]}) {
      if (fd >= 0) close(fd);
    }
  }
  void grant_once() { REQUIRE(write(grant[1], "G", 1) == 1); }
  void close_grant() {
    close(grant[1]);
    grant[1] = -1;
  }
  std::string asked() {  // every byte the process wrote since the last call
    std::string bytes;
    char c;
    while (read(request[0], &c, 1) == 1) bytes += c;
    return bytes;
  }
};

}  // namespace kit_tests
