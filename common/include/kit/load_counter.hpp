// The judge's side of the kit's load counter (common/load_counter/): where the counter is, the
// pipes a counted run gets its token on and gives its lines back on, how the lines are read, and
// the counted run of the lesson's kernel launched by the kit alone (kit_device_count), with which
// of its outcomes are judged and which leave the count to Nsight Compute (kit/profiler.hpp).
// docs/design/tests.md, "The load counter", says why.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "kit/probe.hpp"
#include "kit/process_log.hpp"
#include "kit/profile.hpp"
#include "kit/sanitizer.hpp"

namespace kit::profiler {

// The load counter the kit's build made, "" where it made none (no Compute Sanitizer API): what
// the tests of the counter itself run.
inline std::string built_load_counter_path() {
#ifdef KIT_LOAD_COUNTER_PATH
  return KIT_LOAD_COUNTER_PATH;
#else
  return "";
#endif
}

// The load counter's library (common/load_counter/) that counts global loads, or "" for Nsight
// Compute: $KIT_LOAD_COUNTER_PATH where it names a readable file (the grader always sets it: the
// harness's counter, or "" with --ncu-loads), else the kit's build's own (a test run by CTest or
// by hand). A path LD_PRELOAD would split (a space or a colon) is refused too.
inline std::string load_counter_path() {
  const char* given = std::getenv("KIT_LOAD_COUNTER_PATH");
  const std::string path = given != nullptr ? given : built_load_counter_path();
  if (path.empty() || path.find_first_of(" :") != std::string::npos) return "";
  return access(path.c_str(), R_OK) == 0 ? path : "";
}

// The lesson's kernel as the kit launches it to count its loads alone (kit_device_count, beside
// the counter): its qualified name, lab 05's strip depth (0 for the square kernel of labs 03 and
// 04), and the cuobjdump that takes the device code out of the probe.
struct KitLaunch {
  std::string kernel;  // e.g. "lab03::tiled_matmul_kernel"
  int strip_depth = 0;
  std::string cuobjdump;
};

// kit_device_count beside `counter` (common/load_counter/CMakeLists.txt), or "" where there is
// none.
inline std::string device_count_path(const std::string& counter) {
  const std::string path = counter.substr(0, counter.rfind('/') + 1) + "kit_device_count";
  return !counter.empty() && sanitizer::is_executable(path) ? path : "";
}

// What the load counter wrote on the judge's pipe (common/load_counter/load_counter.cpp): one
// line per launch, "<token> <n> <global loads> <kernel>", numbered from 1, then
// "<token> end <begun> <counted>". Complete only when every line carries this run's token, the
// launches are numbered in order with none missing, and the end line counts them all: anything
// else (a line without the token, an error line, no end line) and the run's count is not used.
struct CounterLines {
  bool complete = false;
  std::vector<KernelCount> kernels;
  std::string problem;  // why it is not complete
};

inline CounterLines parse_counter(const std::string& text, const std::string& token) {
  CounterLines c;
  if (token.empty()) {
    c.problem = "no token";
    return c;
  }
  std::istringstream in(text);
  bool ended = false;
  for (std::string line; std::getline(in, line);) {
    if (ended) {
      c.problem = "a line after the end line";
      return c;
    }
    if (line.rfind(token + " ", 0) != 0) {
      c.problem = "a line without this run's token";
      return c;
    }
    const std::string rest = line.substr(token.size() + 1);
    if (rest.rfind("error ", 0) == 0) {
      c.problem = "the counter failed: " + rest.substr(6);
      return c;
    }
    std::istringstream words(rest);
    if (rest.rfind("end ", 0) == 0) {
      std::string end;
      unsigned long long begun = 0, counted = 0;
      if (!(words >> end >> begun >> counted) || !words.eof() || begun != counted ||
          counted != c.kernels.size()) {
        c.problem = "its end line (" + rest + ") does not match the " +
                    std::to_string(c.kernels.size()) + " launches counted";
        return c;
      }
      ended = true;
      continue;
    }
    unsigned long long number = 0;
    double value = -1.0;
    std::string name;
    if (!(words >> number >> value) || number != c.kernels.size() + 1 || value < 0.0 ||
        !std::getline(words >> std::ws, name) || name.empty()) {
      c.problem = "launch line " + std::to_string(c.kernels.size() + 1) + " is malformed";
      return c;
    }
    c.kernels.push_back({name, value});
  }
  if (!ended) {
    c.problem = "no end line: the probe did not end by returning or calling exit";
    return c;
  }
  c.complete = true;
  return c;
}

namespace detail {

// This run's secret: 32 hexadecimal digits from the kernel's random source ("" if none).
inline std::string counter_token() {
  unsigned char bytes[16];
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  const bool got = read(fd, bytes, sizeof bytes) == static_cast<ssize_t>(sizeof bytes);
  close(fd);
  if (!got) return "";
  std::string token;
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    token += hex;
  }
  return token;
}

// The descriptors the probe is given: the token's pipe and the lines' pipe. High, so that they
// meet none of the gate's and the report's.
constexpr int kCounterTokenFd = 1000;
constexpr int kCounterLinesFd = 1001;

// In the child, after fork: each of `from` made descriptor `to` (kept across exec), whatever
// numbers they had; false if one cannot be. Every source is first moved above all the targets, so
// that placing one never overwrites another still to be placed.
inline bool place_descriptors(const int (&from)[4], const int (&to)[4]) {
  int moved[4];
  for (int i = 0; i < 4; ++i) {
    moved[i] = fcntl(from[i], F_DUPFD_CLOEXEC, kCounterLinesFd + 1);
    if (moved[i] < 0) return false;
  }
  for (int i = 0; i < 4; ++i) {
    if (dup2(moved[i], to[i]) != to[i]) return false;  // dup2 clears close-on-exec on `to`
  }
  return true;
}

}  // namespace detail

// Runs `command` (a shell command line) with the counter's two pipes: `token` written into the
// one it reads as descriptor kCounterTokenFd, and what it writes to kCounterLinesFd kept in
// `lines`. The run's stdout and stderr together go to run.output (its first MiB), as
// sanitizer::run_command's. Every descriptor here is close-on-exec, so that a process another
// thread of the judge starts at the same time does not keep a pipe open.
inline sanitizer::Run run_with_counter_pipes(const std::string& command, const std::string& token,
                                             std::string& lines) {
  sanitizer::Run r;
  r.command = command;
  int to_child[2], from_counter[2], output[2];
  if (pipe2(to_child, O_CLOEXEC) != 0) return r;
  if (pipe2(from_counter, O_CLOEXEC) != 0) {
    close(to_child[0]), close(to_child[1]);
    return r;
  }
  if (pipe2(output, O_CLOEXEC) != 0) {
    close(to_child[0]), close(to_child[1]), close(from_counter[0]), close(from_counter[1]);
    return r;
  }
  const std::string sent = token + "\n";
  const bool written = write(to_child[1], sent.data(), sent.size()) ==
                       static_cast<ssize_t>(sent.size());  // fits in the pipe's buffer
  close(to_child[1]);
  const pid_t pid = written ? fork() : -1;
  if (pid == 0) {
    const int from[4] = {output[1], output[1], to_child[0], from_counter[1]};
    const int to[4] = {1, 2, detail::kCounterTokenFd, detail::kCounterLinesFd};
    if (detail::place_descriptors(from, to)) {
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    }
    _exit(127);
  }
  close(to_child[0]), close(from_counter[1]), close(output[1]);
  if (pid < 0) {
    close(from_counter[0]), close(output[0]);
    r.output = "could not start the probe with the load counter";
    return r;
  }
  pollfd fds[2] = {{output[0], POLLIN, 0}, {from_counter[0], POLLIN, 0}};
  std::string* into[2] = {&r.output, &lines};
  char buffer[4096];
  for (int open_ends = 2; open_ends > 0;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        if (into[i]->size() < (1u << 20)) {
          into[i]->append(buffer, static_cast<std::size_t>(n));
        } else if (i == 0) {
          r.truncated = true;  // as sanitizer::run_command says of its output
        }
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_ends;
      }
    }
  }
  for (pollfd& p : fds) {
    if (p.fd >= 0) close(p.fd);
  }
  int status = 0;
  pid_t waited = -1;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited != pid) return r;  // exit_code stays -1: never read as a clean end
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  return r;
}

// The command that runs the probe with the load counter: preloaded, so that it reads the token
// before any code of the student's runs (load_counter.cpp says why), and the CUDA driver's
// injection; every module loaded at the start, so that none is loaded past the patching; and no
// gate, since nothing is profiled (kit/gpu_gate.hpp: the turn is only for profilers).
inline std::string counted_command(const std::string& counter, const std::string& probe,
                                   const std::string& probe_args) {
  const std::string lib = sanitizer::shell_quote(counter);
  return "KIT_GPU_GATE= LD_PRELOAD=" + lib + " CUDA_INJECTION64_PATH=" + lib +
         " CUDA_MODULE_LOADING=EAGER KIT_LOAD_COUNT_TOKEN_FD=" +
         std::to_string(detail::kCounterTokenFd) +
         " KIT_LOAD_COUNT_FD=" + std::to_string(detail::kCounterLinesFd) + " " +
         sanitizer::shell_quote(probe) + " " + probe_args;
}

// The probe's global loads in mode(s) `probe_args`, counted by the load counter `counter`,
// confined as a probe under ncu is. The Profile is used only when its counter_problem is empty:
// the counter's lines are complete and the probe ended either with exit code 0 or having found P
// wrong (its exit code sanitizer::kWrongResult and its line saying so: the test then fails on P, as
// under ncu, and the count is not read); otherwise its counter_problem says why, and the caller
// counts with Nsight Compute. A wrong P is most of the probes that fail (the bench's mutants), and
// an ncu run after a counted one cost them both.
inline Profile count_loads(const std::string& counter, const std::string& probe,
                           const std::string& probe_args) {
  Profile p;
  p.counted_by = "the kit's load counter";
  const std::string token = detail::counter_token();
  std::string lines;
  log_process_start("tool");
  p.run = run_with_counter_pipes(sanitizer::confined(counted_command(counter, probe, probe_args)),
                                 token, lines);
  const CounterLines c = parse_counter(lines, token);
  p.kernels = c.kernels;
  const bool ended =
      p.run.exit_code == 0 || (p.run.exit_code == sanitizer::kWrongResult && p.result_wrong());
  if (p.run.exit_code < 0) {
    p.counter_problem = "the probe could not be run or waited for";
  } else if (!ended) {
    p.counter_problem = "the probe exited with code " + std::to_string(p.run.exit_code);
  } else if (!c.complete) {
    p.counter_problem = c.problem;
  }
  return p;
}

// What keeps a run of kit_device_count from being judged, "" where it is judged as it ended: its
// exit code `code`, whether it printed the probe's wrong-P line, the problem count_loads found in
// the counter's lines (`lines_problem`, "" where none) and the run's explanation. The kit's own
// failures: kCountNotSetUp; 2, 125, 126 or 127 (usage; env, which confines it, failing; not
// executable; not found); a run that could not start (code < 0); the counter's lines spoiled in a
// run that ended cleanly. Anything else is the kernel's: a fault also makes the counter write an
// error line, and that run is judged.
inline std::string kit_side_problem(int code, bool found_p_wrong, const std::string& lines_problem,
                                    const std::string& explanation) {
  const bool ended = code == 0 || (code == sanitizer::kWrongResult && found_p_wrong);
  if (code == probe::kCountNotSetUp) {
    return "kit_device_count could not set its count up: " + explanation;
  }
  if (code == 2 || code == 125 || code == 126 || code == 127) {
    return "kit_device_count could not be run (exit code " + std::to_string(code) +
           "): " + explanation;
  }
  if (code < 0 || ended) return lines_problem;
  return "";
}

// The global loads of the lesson's kernel, taken out of `probe` and launched by the kit alone in
// modes `probe_args` (kit_device_count `device_count`, counted by `counter`): the probe's counted
// run with every line of host code the kit's, so nothing of the student's can reach the
// counter's token or lines (docs/design/tests.md, "The load counter"). The run is read as it
// ended, a wrong P or a kernel that failed included (a kernel that faults also makes the counter
// write an error line: that run is judged too), and the test judges it; only where the count could
// not be made for a reason of the kit's (the run not started, or kit_device_count not run or
// refused its arguments, its set-up failed before the kernel ran, or the counter failed or gave
// incomplete lines after a clean end) does counter_problem say why, and the caller counts with
// Nsight Compute instead.
inline Profile count_kernel_alone(const std::string& counter, const std::string& device_count,
                                  const KitLaunch& launch, const std::string& probe,
                                  const std::string& probe_args) {
  const std::string args = sanitizer::shell_quote(launch.cuobjdump) + " " +
                           sanitizer::shell_quote(probe) + " " +
                           sanitizer::shell_quote(launch.kernel) + " " +
                           std::to_string(launch.strip_depth) + " " + probe_args;
  Profile p = count_loads(counter, device_count, args);
  p.counted_by = "the kit's load counter, the kit launching the kernel itself";
  p.kit_launched = true;
  p.counter_problem =
      kit_side_problem(p.run.exit_code, p.result_wrong(), p.counter_problem, p.explanation(2));
  return p;
}

}  // namespace kit::profiler
