// The judge's side of kit/remote.hpp: starting a worker, sending calls, rethrowing what the
// worker's call threw, and handing device buffers over as CUDA IPC handles.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kit/cuda_check.hpp"
#include "kit/device_memory.hpp"
#include "kit/process_log.hpp"
#include "kit/remote.hpp"
#include "remote_wire.hpp"

extern char** environ;

namespace kit::remote {
namespace {

// Variables a worker keeps from the judge's environment: what a CUDA program needs. Not the
// judge's own settings (the GPU gate's descriptors, the grader's paths).
bool kept_for_worker(const std::string& entry) {
  for (const char* prefix : {"PATH=", "LANG=", "LC_ALL=", "LD_LIBRARY_PATH=", "HOME=", "TMPDIR=",
                             "CUDA_VISIBLE_DEVICES=", "CUDA_DEVICE_MAX_CONNECTIONS=",
                             "CUDA_DEVICE_ORDER=", "NVIDIA_", "KIT_DEVICE_MEMORY_LIMIT_MIB="}) {
    if (entry.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> parts;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) parts.push_back(line);
  }
  return parts;
}

// A message's first line, cut after at most `most` characters, at a space where there is one.
std::string first_line(const std::string& text, std::size_t most) {
  const std::string line = text.substr(0, text.find('\n'));
  if (line.size() <= most) return line;
  const std::size_t space = line.rfind(' ', most);
  return line.substr(0, space == std::string::npos || space == 0 ? most : space) + " ...";
}

std::string describe_status(int status) {
  // A confined worker's status comes through the sandbox's first process, which may report a
  // signal as the shell does, 128 + its number.
  int signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + 32) {
    signal = WEXITSTATUS(status) - 128;
  }
  if (signal != 0) {
    return "crashed (killed by signal " + std::to_string(signal) + ": " + strsignal(signal) + ")";
  }
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

int call_timeout_ms() {
  if (const char* text = std::getenv("KIT_WORKER_CALL_TIMEOUT_S")) {
    const long seconds = std::strtol(text, nullptr, 10);
    if (seconds > 0) return static_cast<int>(seconds * 1000);
  }
  return 100 * 1000;
}

class Worker {
 public:
  explicit Worker(Role role) : role_(role) {}
  ~Worker() { stop(); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  std::vector<char> exchange(const std::string& name, std::vector<char> arguments,
                             const std::vector<Callback>& callbacks) {
    end_reason_.clear();
    if (pid_ <= 0) start();
    in_step_ = false;  // until the call's reply has been read whole
    Encoder request;
    // A timed call carries the mark before its name (TimedCalls); messages keep the bare name.
    request.text(calls_are_timed() ? kTimedMark + name : name);
    request.bytes(arguments.data(), arguments.size());
    if (!wire::send_frame(fd_, request.buffer())) {
      throw WorkerError(ended("before it took " + name));
    }
    std::vector<char> reply;
    std::string why;
    // The worker's code may call the call's callbacks any number of times before it replies.
    while ((why = wait_for_worker(name)).empty() &&
           (why = wire::receive_frame(fd_, reply, kMessageLimit, call_timeout_ms())).empty() &&
           !reply.empty() && reply[0] == static_cast<char>(wire::Status::callback)) {
      if (!wire::send_frame(fd_, answer(name, reply, callbacks))) break;
    }
    // Not while calls are timed: the watch asks NVML, driver work that other processes' work can
    // hold up, and it fell inside the student's time alone, never the reference's (a reference
    // submitted as a student's work measured 8.3 times the reference's time). The GPU is the
    // timing test's alone meanwhile, so no classmate can run short; the next untimed call, and a
    // timed call still running after 250 ms, are watched as ever.
    if (why.empty() && !calls_are_timed()) watch_memory(name, false);
    if (why == "timeout") {
      stop();
      end_reason_ =
          "did not finish " + name + " within " + std::to_string(call_timeout_ms() / 1000) + " s";
      throw WorkerError(who() + " " + end_reason_ +
                        " and was stopped: a kernel or a loop that never ends?");
    }
    if (!why.empty())
      throw WorkerError(ended("during " + name) + (why == "closed" ? "" : ": " + why));
    in_step_ = true;
    return unpack(name, reply);
  }

  long pid() const { return pid_; }
  // Whether the worker waits for a call, its last call's reply read whole: false while a call is
  // under way, or when one was left mid-way by an exception that did not end the worker (an
  // assertion of a test's thrown in a callback), when its next frame would not be a reply.
  bool in_step() const { return pid_ <= 0 || in_step_; }
  // How the last call ended this worker, in a few words ("crashed (killed by signal 11:
  // Segmentation fault) during ..."); "" when it did not, or when the worker failed to start,
  // which is the kit's trouble and not the student's.
  const std::string& end_reason() const { return end_reason_; }

  // The worker, as its failures name it.
  std::string who() const {
    return role_ == Role::student ? "the worker running your lab's code"
                                  : "the worker running the kit's reference (not your code)";
  }

  // Waits until the worker has something to say ("" then), "timeout" after the call's time
  // limit, watching the worker's device memory meanwhile.
  std::string wait_for_worker(const std::string& name) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::milliseconds(call_timeout_ms());
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, 250);
      if (ready > 0) return "";
      if (ready < 0 && errno != EINTR) return std::string("poll failed: ") + std::strerror(errno);
      if (Clock::now() >= deadline) return "timeout";
      watch_memory(name, true);
    }
  }

  // Stops a student's worker that holds more device memory than a test may, before a classmate's
  // test sharing the GPU runs short: during a long call, and after calls at most every 100 ms
  // (a kernel's local memory stays reserved after it ends). The driver's count, through NVML.
  void watch_memory(const std::string& name, bool now) {
    using Clock = std::chrono::steady_clock;
    if (role_ != Role::student || pid_ <= 0) return;
    if (!now && Clock::now() - last_watch_ < std::chrono::milliseconds(100)) return;
    last_watch_ = Clock::now();
    const long long used = process_device_memory(pid_);
    const auto cap = static_cast<long long>(worker_device_memory_cap());
    if (used <= cap) return;
    stop();
    end_reason_ = "held " + std::to_string(used >> 20) + " MiB of device memory during " + name;
    throw WorkerError(who() + " " + end_reason_ + ", more than a test may (" +
                      std::to_string(cap >> 20) +
                      " MiB), and was stopped so that no other test on the GPU runs short: "
                      "free what you allocate, and keep local arrays small");
  }

  void stop() {
    // A worker that served host calls alone never started CUDA: the process log says so, for
    // the test that started it, so that the bench counts CUDA starts and not processes (one
    // that ended by itself, or cannot be read, counts as one that did). Read before its socket
    // closes (a worker that sees the close exits, and an ended process holds nothing to read),
    // from its descriptors alone, which takes no lock a wedged worker could hold.
    if (pid_ > 0 && process_log_on() && holds_gpu_open(pid_, false) == std::optional<bool>(false)) {
      log_process_event(
          role_ == Role::student ? "worker without CUDA" : "reference worker without CUDA",
          started_in_);
    }
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    pid_ = 0;
    in_step_ = true;
  }

 private:
  std::string path() const {
    const std::string program = worker_executable(role_);
    if (program.empty()) {
      throw std::runtime_error(
          std::string("no ") + (role_ == Role::student ? "worker" : "reference worker") +
          " for this lab: set " + (role_ == Role::student ? "KIT_WORKER" : "KIT_REFERENCE_WORKER") +
          " to its executable");
    }
    return program;
  }

  void start() {
    const std::string program = path();
    // The grader confines each worker: its command (sandbox, limits) comes first, one argument a
    // line; unconfined (make check, CTest) the worker runs as it is. The reference's worker is the
    // kit's own code, confined so that it sees its lane's GPU alone (grader/pipeline/run.py,
    // worker_env).
    std::vector<std::string> argv;
    const bool student = role_ == Role::student;
    if (const char* prefix =
            std::getenv(student ? "KIT_WORKER_COMMAND" : "KIT_REFERENCE_WORKER_COMMAND");
        prefix != nullptr) {
      argv = split_lines(prefix);
    }
    argv.push_back(program);
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    std::vector<std::string> kept;
    const char* home = std::getenv(student ? "KIT_WORKER_HOME" : "KIT_REFERENCE_WORKER_HOME");
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      const bool place = entry.rfind("HOME=", 0) == 0 || entry.rfind("TMPDIR=", 0) == 0;
      if (kept_for_worker(entry) && !(place && home != nullptr)) kept.push_back(entry);
    }
    if (home != nullptr) {
      kept.push_back(std::string("HOME=") + home);
      kept.push_back(std::string("TMPDIR=") + home);
    }
    std::vector<char*> env;
    for (std::string& e : kept) env.push_back(e.data());
    env.push_back(nullptr);

    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      throw std::runtime_error(std::string("socketpair failed: ") + std::strerror(errno));
    }
    const pid_t parent = ::getpid();
    const pid_t child = ::fork();
    if (child < 0) {
      ::close(pair[0]), ::close(pair[1]);
      throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
    }
    if (child == 0) {
      // Only async-signal-safe calls from here to exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the worker never outlives its judge
      if (::getppid() != parent) ::_exit(126);
      if (::dup2(pair[1], wire::kWorkerFd) < 0) ::_exit(126);
      ::close_range(wire::kWorkerFd + 1, ~0U, 0);
      ::execve(args[0], args.data(), env.data());
      const char message[] = "kit: could not start the worker\n";
      (void)!::write(2, message, sizeof message - 1);
      ::_exit(127);
    }
    ::close(pair[1]);
    fd_ = pair[0];
    pid_ = child;
    started_in_ = logged_test();
    log_process_event(student ? "worker" : "reference worker", started_in_);
  }

  // What became of a worker that stopped answering.
  std::string ended(const std::string& when) {
    std::string how = "stopped answering";
    if (pid_ > 0) {
      int status = 0;
      pid_t reaped = 0;
      // The socket closes a moment before the process can be reaped: wait for it, briefly.
      for (int i = 0; i < 100 && (reaped = ::waitpid(pid_, &status, WNOHANG)) == 0; ++i) {
        ::usleep(10000);
      }
      if (reaped == pid_) {
        how = describe_status(status);
        pid_ = 0;
      }
    }
    stop();
    end_reason_ = how + " " + when;
    return who() + " " + end_reason_ +
           " (a crash in your code, such as a null pointer or an abort; it was restarted for the "
           "next call)";
  }

  // The judge's answer to a callback frame: ok and the result, or threw and its text.
  std::vector<char> answer(const std::string& name, const std::vector<char>& frame,
                           const std::vector<Callback>& callbacks) {
    Decoder d(frame.data() + 1, frame.size() - 1);
    const auto index = d.get<std::uint32_t>();
    if (index >= callbacks.size()) {
      stop();
      throw WorkerError("the worker asked for a callback that " + name + " does not have");
    }
    Encoder out;
    out.put(static_cast<std::uint8_t>(wire::Status::ok));
    try {
      callbacks[index](d, out);
    } catch (const WorkerError&) {
      stop();
      throw;
    } catch (const std::exception& e) {
      Encoder failed;
      failed.put(static_cast<std::uint8_t>(wire::Status::threw));
      failed.text(e.what());
      return std::move(failed.buffer());
    }
    return std::move(out.buffer());
  }

  std::vector<char> unpack(const std::string& name, const std::vector<char>& reply) {
    Decoder d(reply.data(), reply.size());
    const auto status = static_cast<wire::Status>(d.get<std::uint8_t>());
    if (status == wire::Status::ok) return std::vector<char>(reply.begin() + 1, reply.end());
    if (status != wire::Status::threw && status != wire::Status::broken) {
      stop();
      throw WorkerError("the worker's reply to " + name + " was not one the kit sends");
    }
    const std::string kind = d.text(64);
    const std::string text = d.text(kTextLimit);
    if (status == wire::Status::broken) {  // it ends itself; a new one serves the next call
      stop();
      end_reason_ = "was left unusable during " + name + " (" + first_line(text, 120) + ")";
    }
    if (kind == wire::kInvalidArgument) throw std::invalid_argument(text);
    if (kind == wire::kOutOfRange) throw std::out_of_range(text);
    if (kind == wire::kCuda) {
      const int code = d.left() >= sizeof(int) ? d.get<int>() : 0;
      throw CudaError(static_cast<cudaError_t>(code), text);
    }
    throw std::runtime_error(text);
  }

  Role role_;
  std::string started_in_;  // the test running when it started (kit/process_log.hpp)
  int fd_ = -1;
  pid_t pid_ = 0;
  std::chrono::steady_clock::time_point last_watch_{};
  std::string end_reason_;
  bool in_step_ = true;
};

struct Workers {
  std::mutex mutex;
  Worker student{Role::student};
  Worker reference{Role::reference};
  // The trouble that ended the student's worker first in this test case ("" when none), and
  // whether it arose in the part under way (begin_case_part, end_case_part).
  std::string case_trouble;
  bool trouble_in_this_part = false;
  // A later part of the case than the one whose trouble it was: the student's calls are refused.
  bool refusing() const { return !case_trouble.empty() && !trouble_in_this_part; }
  Worker& of(Role role) { return role == Role::student ? student : reference; }
  // The buffers whose cudaFree was held back (kit/device_memory.hpp) are freed once no worker
  // could map them.
  void release_if_idle() {
    if (student.pid() <= 0 && reference.pid() <= 0) release_held_device_memory();
  }
};

Workers& workers() {
  static Workers the_workers;
  return the_workers;
}

std::map<Role, std::string>& default_paths() {
  static std::map<Role, std::string> paths;
  return paths;
}

}  // namespace

std::size_t worker_device_memory_cap() { return device_memory_limit() + (std::size_t(1) << 30); }

bool set_default_worker_path(Role role, const char* path) {
  mark_calls_remote();  // a judge, from static initialisation on: before any buffer is made
  // One hardware work queue per CUDA context, as the grader sets for its test processes
  // (grader/pipeline/run.py's TEST_ENV says why): make check and CTest's judges, and through their
  // environment their workers, then make their contexts as fast. Static initialisation makes no
  // CUDA call, so this comes first; a value already set is kept.
  ::setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 0);
  default_paths()[role] = path;
  return true;
}

std::string default_worker_path(Role role) {
  const auto found = default_paths().find(role);
  return found == default_paths().end() ? "" : found->second;
}

bool export_device_pointer(const void* pointer, DeviceRef& ref) {
  // Before the CUDA runtime has started here, no pointer is device memory (a host-only test's
  // arguments): a bare address, without starting it.
  if (!cuda_started()) return false;
  // The allocation's start and size come from the driver's cuMemGetAddressRange, reached
  // through the runtime, so that the judge links no libcuda (CI has no driver; the host-only
  // tests still run, and every pointer is then a bare address).
  using AddressRange = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
  static const auto address_range =
      reinterpret_cast<AddressRange>(driver_function("cuMemGetAddressRange"));
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (address_range == nullptr ||
      address_range(&base, &size, reinterpret_cast<CUdeviceptr>(pointer)) != CUDA_SUCCESS) {
    return false;
  }
  cudaIpcMemHandle_t handle;
  KIT_CUDA_CHECK(cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base)));
  static_assert(sizeof handle == sizeof ref.handle);
  std::memcpy(ref.handle, &handle, sizeof handle);
  ref.offset = reinterpret_cast<CUdeviceptr>(pointer) - base;
  ref.size = size;
  ref.serial = allocation_serial(reinterpret_cast<void*>(base));
  mark_exported(reinterpret_cast<void*>(base));
  return true;
}

std::vector<char> exchange(Role role, const std::string& name, std::vector<char> arguments,
                           bool device_memory, const std::vector<Callback>& callbacks) {
  if (device_memory) KIT_CUDA_CHECK(cudaDeviceSynchronize());
  Workers& w = workers();
  std::lock_guard<std::mutex> lock(w.mutex);
  const bool student = role == Role::student;
  if (student && w.refusing()) {
    throw WorkerError("stopped: in an earlier part of this test (another size or section), " +
                      w.case_trouble +
                      ", so the kit runs none of your code in the rest of this test; fix what "
                      "that part reports first");
  }
  try {
    return w.of(role).exchange(name, std::move(arguments), callbacks);
  } catch (const std::exception&) {
    if (student && w.case_trouble.empty() && !w.student.end_reason().empty()) {
      w.case_trouble = w.student.who() + " " + w.student.end_reason();
      w.trouble_in_this_part = true;
    }
    w.release_if_idle();
    throw;
  } catch (...) {
    w.release_if_idle();
    throw;
  }
}

void begin_case_part(bool first_part) {
  Workers& w = workers();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (first_part) w.case_trouble.clear();
  w.trouble_in_this_part = false;
}

void end_case_part(bool part_failed) {
  Workers& w = workers();
  std::lock_guard<std::mutex> lock(w.mutex);
  // A part whose trouble was caught and that passed all the same (a diagnosis of the kit's that
  // went on) leaves the later parts to run: what stops them must be a failure the student reads.
  if (!part_failed && w.trouble_in_this_part) w.case_trouble.clear();
}

bool workers_in_step() {
  Workers& w = workers();
  std::lock_guard<std::mutex> lock(w.mutex);
  return w.student.in_step() && w.reference.in_step();
}

long worker_pid(Role role) {
  Workers& w = workers();
  std::lock_guard<std::mutex> lock(w.mutex);
  return w.of(role).pid();
}

bool end_case(Role role) { return worker_pid(role) <= 0 || call<EndCase, bool>(role); }

void stop_worker(Role role) {
  Workers& w = workers();
  std::lock_guard<std::mutex> lock(w.mutex);
  w.of(role).stop();
  w.release_if_idle();
}

}  // namespace kit::remote
