// Counting what a kernel did with Nsight Compute (ncu) from a test: a lab's probe runs the
// student's kernel once, ncu counts one metric over every kernel the probe launched, and the
// test compares the count with what the lesson predicts (kit/locality.hpp). Where the grader
// names the kit's load counter (common/load_counter/, KIT_LOAD_COUNTER_PATH), global loads are
// counted by it instead, over the lesson's kernel launched by the kit alone (kit_device_count): no
// profiler, so no turn as the GPU's one profiling process, and no host code of the student's.
#pragma once

#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kit/gpu_gate.hpp"
#include "kit/probe.hpp"
#include "kit/sanitizer.hpp"

namespace kit::profiler {

// Warp-level global load instructions: one for each warp that issues a load from global memory,
// whatever the number of its threads. On the H100 at width 2048 (bench/RESULTS.md, "Global
// loads counted by Nsight Compute"): 536.9 M for the naive kernel, 33.6 M for the tiled kernel
// at TILE_WIDTH 16, 16.8 M at 32.
inline const std::string kGlobalLoads = "smsp__inst_executed_op_global_ld.sum";

struct KernelCount {
  std::string kernel;  // as ncu names it, e.g. "void lab03::tiled_matmul_kernel<16>(...)"
  double value = 0.0;
};

struct Profile {
  sanitizer::Run run;                // ncu's run of the probe: command, exit status, output
  std::vector<KernelCount> kernels;  // one per kernel launch ncu profiled, in launch order
  // Who counted: "Nsight Compute", or "the kit's load counter"; and, when the load counter ran
  // but its count was not used, why (the count is then Nsight Compute's).
  std::string counted_by = "Nsight Compute";
  std::string counter_problem;
  // The count is the kit's launch of the lesson's kernel (count_kernel_alone), not the probe's;
  // `launcher` is then the probe's own run of the same modes, the student's launcher counted by
  // the same counter, which must have launched the kernel to the same count (kit/locality.hpp).
  bool kit_launched = false;
  std::shared_ptr<const Profile> launcher;

  double total() const {
    double sum = 0.0;
    for (const KernelCount& k : kernels) sum += k.value;
    return sum;
  }
  // ncu ran but may not read the GPU's performance counters here (an administrator's setting).
  bool permission_denied() const {
    return run.output.find("ERR_NVGPUCTRPERM") != std::string::npos;
  }
  // The probe checked the kernel's result (kit::probe::run_counted_matmul) and found it right
  // or wrong; neither when the probe did not get that far.
  bool result_right() const { return has_line(probe::kResultRight); }
  bool result_wrong() const { return has_line(probe::kResultWrong); }
  // How many trials the probe found right, when it ran several (kit::probe::main).
  int results_right() const { return count_lines(probe::kResultRight); }

  // With several probe modes in one run, the kernels of each trial in order: the probe launches
  // its trial-end kernel after each one, and ncu profiles that like any other. Kernels after the
  // last marker (a trial that did not finish) make one more group.
  std::vector<std::vector<KernelCount>> trials() const {
    std::vector<std::vector<KernelCount>> groups(1);
    for (const KernelCount& k : kernels) {
      if (is_trial_end(k.kernel)) {
        groups.emplace_back();
      } else {
        groups.back().push_back(k);
      }
    }
    if (groups.back().empty()) groups.pop_back();
    return groups;
  }
  // The run's output without ncu's CSV rows, its ==PROF== lines and its notes on caches and clocks
  // (==WARNING== Note: Running with ...; a warning such as "No kernels were profiled" stays), its
  // last `limit` lines, for a failure message: the probe's own explanation (which element of P was
  // wrong, and what it held) and ncu's errors; the probe's result markers are left out too. ncu
  // prints its rows after the probe has ended, so the plain tail of a failed run was rows of
  // counts, and the probe's explanation was cut off.
  std::string explanation(int limit = 8) const {
    std::istringstream in(run.output);
    std::string kept;
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '"' || line.rfind("==PROF==", 0) == 0 ||
          (line.rfind("==WARNING==", 0) == 0 &&
           line.find("Note: Running with") != std::string::npos) ||
          line == probe::kResultRight || line == probe::kResultWrong) {
        continue;
      }
      kept += line + "\n";
    }
    return sanitizer::tail(kept, limit);
  }
  // How many trials ended with the kit's marker: those the probe finished.
  std::size_t trials_finished() const {
    std::size_t markers = 0;
    for (const KernelCount& k : kernels) markers += is_trial_end(k.kernel) ? 1 : 0;
    return markers;
  }

 private:
  // The kit's own marker, a kernel in namespace kit, where no student file may define one. ncu
  // is asked for mangled names (--print-kernel-base mangled): "_ZN3kit12_GLOBAL__N_19trial_endEv"
  // against "_ZN5lab03...". Demangled, ncu wrote it "kit::<unnamed>::trial_end()" in one run
  // and "unnamed>::trial_end()" in another (both on the H100), and the second was missed: the
  // trials of a CPU fallback were not told apart, and its hint was lost.
  static bool is_trial_end(const std::string& name) {
    std::string bare = name.rfind("void ", 0) == 0 ? name.substr(5) : name;
    return (bare.rfind("kit::", 0) == 0 || bare.rfind("_ZN3kit", 0) == 0) &&
           bare.find("trial_end") != std::string::npos;
  }
  bool has_line(const std::string& line) const { return count_lines(line) > 0; }
  int count_lines(const std::string& line) const {
    std::istringstream in(run.output);
    std::string l;
    int found = 0;
    while (std::getline(in, l)) {
      if (l == line) ++found;
    }
    return found;
  }
};

// ncu as kit::sanitizer::find_cuda_tool finds it, else in the folders NVIDIA's installers put
// Nsight Compute in, beside the toolkit or under /opt/nvidia (the newest version). Empty when
// none is found.
inline std::string find_ncu(const std::string& cuda_bin_dir) {
  const std::string found = sanitizer::find_cuda_tool("ncu", cuda_bin_dir);
  if (!found.empty()) return found;
  std::string newest;
  for (const std::string& pattern : {cuda_bin_dir + "/../nsight-compute*/ncu",
                                     std::string("/usr/local/cuda/nsight-compute*/ncu"),
                                     std::string("/opt/nvidia/nsight-compute/*/ncu")}) {
    glob_t matches{};
    if (glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
      for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
        const std::string path = matches.gl_pathv[i];  // sorted: the last, usually the newest
        if (sanitizer::is_executable(path)) newest = path;
      }
    }
    globfree(&matches);
    if (!newest.empty()) return newest;
  }
  return "";
}

// The fields of one line of CSV: "a","b,c",d gives a | b,c | d.
inline std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

// A metric value as ncu prints it: digits, perhaps with thousands separators ("65,536").
// Negative when it is not a number.
inline double metric_value(const std::string& text) {
  std::string digits;
  for (char c : text) {
    if (c != ',') digits += c;
  }
  if (digits.empty()) return -1.0;
  char* end = nullptr;
  const double value = std::strtod(digits.c_str(), &end);
  return end != nullptr && *end == '\0' ? value : -1.0;
}

// The metric's value for every kernel in the output of `ncu --csv` (the probe's own lines
// around it are skipped): the rows after a header that names "Kernel Name", "Metric Name" and
// "Metric Value", whose Metric Name is `metric`.
inline std::vector<KernelCount> parse_csv(const std::string& output, const std::string& metric) {
  std::vector<KernelCount> counts;
  std::istringstream in(output);
  std::string line;
  int kernel_col = -1, name_col = -1, value_col = -1;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '"') continue;  // ncu's ==PROF== lines, the probe's output
    const std::vector<std::string> fields = csv_fields(line);
    bool header = false;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (fields[i] == "Kernel Name") kernel_col = static_cast<int>(i), header = true;
      if (fields[i] == "Metric Name") name_col = static_cast<int>(i);
      if (fields[i] == "Metric Value") value_col = static_cast<int>(i);
    }
    if (header || kernel_col < 0 || name_col < 0 || value_col < 0) continue;
    const auto at = [&](int col) {
      return col < static_cast<int>(fields.size()) ? fields[static_cast<std::size_t>(col)] : "";
    };
    if (at(name_col) != metric) continue;
    const double value = metric_value(at(value_col));
    if (value >= 0.0) counts.push_back({at(kernel_col), value});
  }
  return counts;
}

// The command that runs the probe in mode(s) `probe_args` under ncu, counting every metric of
// `metrics` (in a fixed order, so that tests asking for the same run ask with the same command).
// The counts are exact whatever the clock and the caches, so ncu is told to leave both alone:
// it changes no setting of the GPU, and needs no right to. The probe is told it is profiled
// (probe::kProfiled), so that it takes the GPU's profiling turn whatever it runs.
inline std::string profile_command(const std::string& ncu, std::vector<std::string> metrics,
                                   const std::string& probe, const std::string& probe_args) {
  std::sort(metrics.begin(), metrics.end());
  metrics.erase(std::unique(metrics.begin(), metrics.end()), metrics.end());
  std::string joined;
  for (const std::string& m : metrics) joined += (joined.empty() ? "" : ",") + m;
  return sanitizer::shell_quote(ncu) + " --metrics " + joined +
         " --csv --print-units base --clock-control none --cache-control none"
         " --print-kernel-base mangled " +
         sanitizer::shell_quote(probe) + " " + probe::kProfiled + " " + probe_args;
}

inline std::string built_load_counter_path();

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

// The load counter the kit's build made, "" where it made none (no Compute Sanitizer API): what
// the tests of the counter itself run.
inline std::string built_load_counter_path() {
#ifdef KIT_LOAD_COUNTER_PATH
  return KIT_LOAD_COUNTER_PATH;
#else
  return "";
#endif
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
        if (into[i]->size() < (1u << 20)) into[i]->append(buffer, static_cast<std::size_t>(n));
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

// Runs the probe in mode(s) `probe_args` under ncu, which counts `metric`, and every metric of
// `shared_with` too, for every kernel it launches; the Profile holds `metric`'s counts.
//
// ncu's start takes most of a run's seconds, and a GPU has one profiling process at a time, so
// tests that need counts of the same probe ask for one run between them (profile_shared, below):
// the run is kept for the rest of the process, and a test after the first in a shared judge reads
// it instead of running ncu again. The counts are exact, so a test run alone gets the same ones.
//
// Two processes profiling one GPU at once fail each other ("a driver resource was unavailable"):
// the kit's probes hold the GPU to themselves while profiled, but a profiler outside the grader's
// control can still collide, so such a run is tried again, up to three times in all, before its
// output is judged. It is never the student's doing.
inline Profile profile_with_ncu(const std::string& ncu, const std::string& metric,
                                const std::string& probe, const std::string& probe_args,
                                const std::vector<std::string>& shared_with = {}) {
  std::vector<std::string> metrics = shared_with;
  metrics.push_back(metric);
  const std::string command = profile_command(ncu, metrics, probe, probe_args);
  static std::map<std::string, sanitizer::Run> finished;  // this process's runs
  Profile p;
  if (const auto kept = finished.find(command); kept != finished.end()) {
    p.run = kept->second;
  } else {
    for (int attempt = 1; attempt <= 3; ++attempt) {
      log_process_start("tool");
      p.run = sanitizer::run_command(command);
      release_hold_of_ended_child();  // the probe's turn, had ncu killed it before it ended
      if (p.run.output.find("driver resource was unavailable") == std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::seconds(2 * attempt));
    }
    finished.emplace(command, p.run);
  }
  p.kernels = parse_csv(p.run.output, metric);
  return p;
}

// profile_with_ncu, but global loads alone (kGlobalLoads, shared with no other metric) of the
// lesson's kernel (`alone`, named) are counted by the load counter where the grader names one
// (load_counter_path) and kit_device_count is beside it: the same count, instruction for
// instruction (bench/RESULTS.md, "Global loads counted without Nsight Compute"), without a
// profiler's turn, over the kit's own launch of the kernel (count_kernel_alone). Where that count
// could not be made for a reason of the kit's, ncu counts the probe, as before, and the Profile
// says why in counter_problem. Beside a count of the kit's launch, the counter counts the probe's
// own run too (Profile::launcher): no profiler turn either, and the student's launcher is held to
// launching the kernel as the kit did.
inline Profile profile(const std::string& ncu, const std::string& metric, const std::string& probe,
                       const std::string& probe_args,
                       const std::vector<std::string>& shared_with = {},
                       const KitLaunch& alone = {}) {
  const std::string counter = metric == kGlobalLoads && shared_with.empty() && !alone.kernel.empty()
                                  ? load_counter_path()
                                  : std::string();
  const std::string device_count = device_count_path(counter);
  if (device_count.empty()) return profile_with_ncu(ncu, metric, probe, probe_args, shared_with);
  static std::map<std::string, Profile> counted;  // this process's counted runs
  const std::string key = counter + "\n" + probe + "\n" + alone.kernel + "\n" + probe_args;
  if (const auto kept = counted.find(key); kept != counted.end()) return kept->second;
  Profile c = count_kernel_alone(counter, device_count, alone, probe, probe_args);
  if (c.counter_problem.empty()) {
    // The launcher's run matters only beside a clean count: a failed one fails the test first.
    if (c.run.exit_code == 0) {
      c.launcher = std::make_shared<const Profile>(count_loads(counter, probe, probe_args));
    }
    return counted.emplace(key, c).first->second;
  }
  if (ncu.empty()) return c;  // nothing to count instead: the caller says why
  Profile p = profile_with_ncu(ncu, metric, probe, probe_args);
  p.counter_problem = c.counter_problem;
  return p;
}

// The other tests' part of one run of Nsight Compute over the same probe: the probe's modes they
// run before and after this test's own, and the metrics they count.
struct SharedProfile {
  std::vector<std::string> modes_before;
  std::vector<std::string> modes_after;
  std::vector<std::string> metrics;
};

// What a test that counts `metric` over its own modes `own_modes` reads when it shares a run with
// other tests (`shared`): the shared run (`shared.modes_before`, `own_modes`, then
// `shared.modes_after`, counting every metric), with `first_own_trial` the index of its first
// trial among the run's (Profile::trials), when the probe finished every trial of the test's own
// there. The probe stops at the first mode that fails, and ncu may refuse a metric another test
// needs (no right to the counters), so where the shared run ended before the test's own trials
// did, the test runs its own modes alone, as it did before it shared, and its trials come first.
// The choice depends only on the shared run's output, so a test alone and the same test in a
// shared judge read the same counts.
//
// Where global loads are counted without ncu (load_counter_path and kit_device_count beside it),
// a run that counts them is not shared: each test runs its own modes, the loads test with the
// counter (`alone`: its kernel as the kit launches it), the other with ncu.
inline Profile profile_shared(const std::string& ncu, const std::string& metric,
                              const std::string& probe, const std::string& own_modes,
                              const SharedProfile& shared, std::size_t& first_own_trial,
                              const KitLaunch& alone = {}) {
  first_own_trial = 0;
  const bool counts_loads =
      metric == kGlobalLoads ||
      std::find(shared.metrics.begin(), shared.metrics.end(), kGlobalLoads) != shared.metrics.end();
  if ((!shared.modes_before.empty() || !shared.modes_after.empty()) &&
      !(counts_loads && !device_count_path(load_counter_path()).empty())) {
    std::string modes;
    for (const std::string& mode : shared.modes_before) modes += mode + " ";
    modes += own_modes;
    for (const std::string& mode : shared.modes_after) modes += " " + mode;
    Profile all = profile(ncu, metric, probe, modes, shared.metrics);
    std::size_t own = 0;
    std::istringstream words(own_modes);
    for (std::string word; words >> word;) ++own;
    if (all.trials_finished() >= shared.modes_before.size() + own) {
      first_own_trial = shared.modes_before.size();
      return all;
    }
  }
  return profile(ncu, metric, probe, own_modes, {}, alone);
}

// Why ncu cannot count `metric` on this machine, or "" when it can: its run of the probe's own
// kernel (mode "selftest") must give a count. Asked only after a run of the student's kernel
// gave none, before that is blamed on the student.
inline std::string unusable_reason(const std::string& ncu, const std::string& metric,
                                   const std::string& probe) {
  const Profile self =
      profile_with_ncu(ncu, metric, probe, "selftest");  // ncu's, not the counter's
  if (self.run.exit_code == 0 && !self.kernels.empty()) return "";
  return "Nsight Compute cannot count " + metric +
         " on this machine: its run of the probe's own kernel gave no count (exit code " +
         std::to_string(self.run.exit_code) + "):\n" + self.explanation();
}

}  // namespace kit::profiler
