// A stand-in for a student's probe that tries to forge the load counter's count
// (test_profiler.cpp): a constructor of the executable, where a student's file could put one,
// reads the descriptor the token comes on and writes a count of its own to the counter's pipe.
// Run with the load counter preloaded, it must find the token already taken.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace {

// What the constructor read from the token's descriptor: plain data, set before any C++ object
// of this file would be constructed.
char taken[128];
std::size_t taken_size = 0;

bool forging() {
  std::ifstream cmdline("/proc/self/cmdline");
  std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  return args.find(std::string("forge") + '\0') != std::string::npos;
}

__attribute__((constructor)) void forge() {
  if (!forging()) return;
  const ssize_t n = read(1000, taken, sizeof taken - 1);
  taken_size = n > 0 ? static_cast<std::size_t>(n) : 0;
  while (taken_size > 0 && taken[taken_size - 1] == '\n') --taken_size;
  const std::string token(taken, taken_size);
  const std::string line = token + " 1 0 _ZN5lab039forged_kernelEv\n" + token + " end 1 1\n";
  if (write(1001, line.data(), line.size()) < 0) std::perror("write");
}

}  // namespace

int main() {
  std::printf("the constructor read %zu bytes of the token\n", taken_size);
  return 0;
}
