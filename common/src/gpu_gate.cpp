#include "kit/gpu_gate.hpp"

#include <errno.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace kit {
namespace {

// The grader's protocol (grader/confine/gate.py): KIT_GPU_GATE="<request fd>,<grant fd>"; write 'A'
// (the GPU alone) or 'P' (the one profiling process on it) and read 'G', write 'R' to give it
// back; between test cases, write 'C' and read 'G'.
struct Gate {
  int request = -1;
  int grant = -1;
};

Gate gate_from_environment() {
  const char* value = std::getenv("KIT_GPU_GATE");
  Gate gate;
  if (value == nullptr || *value == '\0') return gate;
  int used = 0;
  if (std::sscanf(value, "%d,%d%n", &gate.request, &gate.grant, &used) != 2 ||
      value[used] != '\0' || gate.request < 0 || gate.grant < 0) {
    throw std::runtime_error(std::string("kit problem: KIT_GPU_GATE is '") + value +
                             "', not '<request fd>,<grant fd>'; the grader sets it, so unset it "
                             "to run a test by hand");
  }
  return gate;
}

int profiling_hold_limit_s() {
  if (const char* text = std::getenv("KIT_PROFILING_HOLD_LIMIT_S")) {
    const long seconds = std::strtol(text, nullptr, 10);
    if (seconds > 0) return static_cast<int>(seconds);
  }
  return kProfilingHoldLimitS;
}

// Ends the process when a profiling hold outlasts its limit (kit::kProfiledTooLong says why).
// Its thread waits for the hold's end or the limit, whichever comes first; the hold's end joins
// it, so no thread outlives the hold.
class HoldWatch {
 public:
  explicit HoldWatch(int seconds) : thread_([this, seconds] { watch(seconds); }) {}
  ~HoldWatch() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ended_ = true;
    }
    ended_changed_.notify_all();
    thread_.join();
  }
  HoldWatch(const HoldWatch&) = delete;
  HoldWatch& operator=(const HoldWatch&) = delete;

 private:
  void watch(int seconds) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (ended_changed_.wait_for(lock, std::chrono::seconds(seconds), [this] { return ended_; })) {
      return;
    }
    // write(2), not stdio: whatever holds stdout's or stderr's lock (the student's code, stuck)
    // must not keep this from being said.
    // What was observed, not a cause: a kernel that never ends does this, and so does a GPU
    // that stalls under everyone (bench/RESULTS.md, "A GPU that stalled during a bench").
    const std::string said =
        "\nkit: the profiled run had not finished " + std::to_string(seconds) +
        " s after it began to profile, so the probe stopped itself: a kernel being profiled "
        "holds up every other process on the GPU until it ends. A kernel that never ends (a loop "
        "whose end is never reached, a barrier that not every thread of a block reaches) does "
        "this; the correctness tests show whether yours ends.\n";
    [[maybe_unused]] const ssize_t written = ::write(2, said.data(), said.size());
    std::_Exit(kProfiledTooLong);
  }

  std::mutex mutex_;
  std::condition_variable ended_changed_;
  bool ended_ = false;
  std::thread thread_;  // last: it starts once the members it uses exist
};

std::mutex holds_mutex;
int holds = 0;
Gate held;                         // the gate the outermost hold asked through
std::unique_ptr<HoldWatch> watch;  // the outermost hold's, where it is a profiling one

void send(int fd, char byte) {
  ssize_t written;
  do {
    written = ::write(fd, &byte, 1);
  } while (written < 0 && errno == EINTR);
  if (written != 1) {
    throw std::runtime_error(
        "kit problem: could not ask the grader for the GPU (its gate is closed); grade again, "
        "and report it to the course staff if it happens twice");
  }
}

char receive(int fd) {
  char byte = 0;
  ssize_t got;
  do {
    got = ::read(fd, &byte, 1);
  } while (got < 0 && errno == EINTR);
  return got == 1 ? byte : '\0';
}

// Writes `request` and waits for the grader's 'G'; a gate closed instead is a kit problem, said
// with `refused`.
void ask_and_wait(const Gate& gate, char request, const char* refused) {
  send(gate.request, request);
  if (receive(gate.grant) != 'G') {
    throw std::runtime_error(std::string("kit problem: the grader did not ") + refused +
                             " (its gate closed); grade again, and report it to the course staff "
                             "if it happens twice");
  }
}

// Gives back what `gate` holds. Nothing to do on failure: the grader closes the window when the
// process ends anyway, and ignores an 'R' when nothing is held (grader/confine/gate.py).
void give_back(const Gate& gate) {
  const char done = 'R';
  [[maybe_unused]] const ssize_t written = ::write(gate.request, &done, 1);
}

}  // namespace

void between_test_cases() {
  std::lock_guard<std::mutex> lock(holds_mutex);
  if (holds != 0) return;
  const Gate gate = gate_from_environment();
  if (gate.request >= 0) ask_and_wait(gate, 'C', "let this test start");
}

ExclusiveGpu::ExclusiveGpu(GpuUse use) {
  std::lock_guard<std::mutex> lock(holds_mutex);
  if (holds == 0) {
    held = gate_from_environment();
    if (held.request >= 0) {
      ask_and_wait(held, use == GpuUse::alone ? 'A' : 'P', "give this test the GPU to itself");
    }
    // Counted from the turn's grant, so that the wait for it is not: a class's queue for the
    // turn can be long, a profiled run's own seconds are few.
    if (use == GpuUse::profiling) watch = std::make_unique<HoldWatch>(profiling_hold_limit_s());
  }
  ++holds;
}

ExclusiveGpu::~ExclusiveGpu() {
  std::lock_guard<std::mutex> lock(holds_mutex);
  if (holds == 1) watch.reset();  // before the turn is given back
  if (--holds == 0 && held.request >= 0) give_back(held);
}

void release_hold_of_ended_child() {
  std::lock_guard<std::mutex> lock(holds_mutex);
  if (holds != 0) return;
  const Gate gate = gate_from_environment();
  if (gate.request >= 0) give_back(gate);
}

}  // namespace kit
