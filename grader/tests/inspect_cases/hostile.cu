// A lab 02 file that tries what issue "Grades that cannot be forged" found: each line below is
// one thing the object inspection must refuse (grader/tests/test_inspect.py names them).
#include <cstdio>
#include <fstream>
#include <functional>

namespace lab02_reference {
void launch_naive_matmul(const float* M, const float* N, float* P, int width, int block);
}
namespace kit {
struct Timing { double median_ms, min_ms, max_ms; int repeats; };
struct TimingOptions { int warmup, repeats; };
// Replaces the kit's timer: every kernel would look fast.
Timing time_on_device(const std::function<void()>&, TimingOptions) { return {0.001, 0.001, 0.001, 1}; }
}  // namespace kit

struct Daemon {
  Daemon() { std::remove("/tmp/anything"); }  // a global constructor: runs before main
};
Daemon daemon_object;

__attribute__((constructor)) static void early() { std::puts("before main"); }

int global_counter = 0;  // a global outside the lab's namespace

namespace lab02 {

void naive_matmul(const float* M, const float* N, float* P, int width, int block) {
  lab02_reference::launch_naive_matmul(M, N, P, width, block);  // the reference, called
  FILE* f = std::fopen("/etc/passwd", "r");                     // files
  if (f) std::fclose(f);
  std::ofstream out("results.json");                            // files, the C++ way
  out << "{}";
  float ms = 0;
  cudaEventElapsedTime(&ms, nullptr, nullptr);                   // the timer's own call
  ++global_counter;
}

}  // namespace lab02
