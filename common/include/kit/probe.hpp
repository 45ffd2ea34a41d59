// What the labs' probes share. A probe (labs/NN_slug/tools/) is a small program of the kit's
// that runs the student's kernels in one of a few modes, so that a safety test can run it under
// compute-sanitizer (kit/sanitizer.hpp) and read the tool's report; each mode then checks that
// the kernels did their work, so that an empty kernel cannot pass for a safe one.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "kit/sanitizer.hpp"

namespace kit::probe {

// A probe's exit codes: 0 done, 1 a CUDA error or an exception, 2 usage, and this one for a
// result that is wrong or was never written.
constexpr int kWrongResult = kit::sanitizer::kWrongResult;

struct Mode {
  std::string name;
  std::function<int()> run;  // returns the exit code
};

// A probe's main: runs the mode that argv[1] names, one of `modes` or "selftest": a kernel of
// the kit's own (shared memory written, a barrier, then read by other threads; race-free and in
// bounds) that tells whether the sanitizer is usable on this machine at all.
int main(int argc, char** argv, const std::string& program, const std::vector<Mode>& modes);

// The index of the first of `count` floats at d_out (device memory) still holding the poison
// of kit/poison.hpp, that is never written; -1 when every one was.
long long first_unwritten(const float* d_out, std::size_t count);

}  // namespace kit::probe
