// Running a lab's probe executable under compute-sanitizer from a test: finding the tool,
// checking that it works on this machine, and keeping the lines of its report that matter.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "kit/built_path.hpp"
#include "kit/process_log.hpp"

namespace kit::sanitizer {

// The exit code asked of compute-sanitizer when it finds an error (--error-exitcode): the
// probe itself never exits with it.
constexpr int kErrorsFound = 3;
// The exit code of a probe whose kernel ran without a sanitizer error but left a wrong or
// unwritten result: a safety check judges only a kernel that does its work.
constexpr int kWrongResult = 4;

struct Run {
  int exit_code = -1;  // the process's exit status; 128 + signal when it was killed
  std::string command;
  std::string output;  // stdout and stderr together
  // The output passed its first MiB, which alone is kept: a count read from the output of such a
  // run could be the probe's own lines, the tool's pushed out of reach (kit/profiler.hpp).
  bool truncated = false;
};

inline bool is_executable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

// A tool of the CUDA toolkit (compute-sanitizer, ncu): on PATH, else in cuda_bin_dir (where the
// kit's nvcc is), else in /usr/local/cuda/bin. Empty when none is found.
inline std::string find_cuda_tool(const std::string& name, const std::string& cuda_bin_dir) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && is_executable(dir + "/" + name)) return dir + "/" + name;
  }
  for (const std::string& candidate : {cuda_bin_dir, std::string("/usr/local/cuda/bin")}) {
    if (!candidate.empty() && is_executable(candidate + "/" + name)) {
      return candidate + "/" + name;
    }
  }
  return "";
}

inline std::string find_compute_sanitizer(const std::string& cuda_bin_dir) {
  return find_cuda_tool("compute-sanitizer", cuda_bin_dir);
}

inline std::string shell_quote(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// A command that runs student code (a probe, under compute-sanitizer or Nsight Compute), as the
// grader confines it: the worker's command (KIT_WORKER_COMMAND, one argument a line; see
// kit/remote.hpp) in front, when the judge was given one. A judge loads no student code, so
// everything that does runs in there.
inline std::string confined(const std::string& command) {
  const char* prefix = std::getenv("KIT_WORKER_COMMAND");
  if (prefix == nullptr || *prefix == '\0') return command;
  std::istringstream lines(prefix);
  std::string out;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) out += shell_quote(line) + " ";
  }
  // The judge's TMPDIR and HOME are its own folder, which the worker's view does not hold:
  // compute-sanitizer and ncu, finding no temporary folder, refused to run (seen on an H200).
  // The view's fresh /tmp is theirs instead.
  // KIT_PROCESS_LOG is the judge's (kit/process_log.hpp): not the probe's business.
  return out + "/usr/bin/env -u KIT_PROCESS_LOG TMPDIR=/tmp HOME=/tmp /bin/sh -c " +
         shell_quote(command);
}

// How run_command runs a command: confined as the worker is (anything that runs or reads the
// student's code), or as the judge runs (a tool reading only the kit's own files, which the
// worker's view does not hold).
enum class Reads { student_code, kit_files };

// Runs a shell command: its exit status and its output, stdout and stderr together (the first
// MiB of it). The profiler's tests (kit/profiler.hpp) run Nsight Compute through it too.
inline Run run_command(const std::string& command, Reads reads = Reads::student_code) {
  Run r;
  r.command = command;
  const std::string shell = reads == Reads::student_code ? confined(r.command) : r.command;
  FILE* pipe = popen((shell + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    r.output = "popen failed: could not start a shell";
    return r;
  }
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    if (r.output.size() < (1u << 20)) {
      r.output.append(buffer, n);
    } else {
      r.truncated = true;
    }
  }
  const int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  else if (status != -1 && WIFSIGNALED(status))
    r.exit_code = 128 + WTERMSIG(status);
  return r;
}

// Runs `tool_args` (e.g. "--tool racecheck") of compute-sanitizer on `probe probe_args`.
inline Run run(const std::string& sanitizer_path, const std::string& tool_args,
               const std::string& probe, const std::string& probe_args) {
  log_process_start("tool");
  return run_command(shell_quote(sanitizer_path) + " " + tool_args + " --error-exitcode " +
                     std::to_string(kErrorsFound) + " --print-limit 20 " + shell_quote(probe) +
                     " " + probe_args);
}

// One run per entry of `probe_args`, side by side: the runs are independent, and each spends
// seconds starting the tool, so a test waits for the longest instead of their sum.
inline std::vector<Run> run_each(const std::string& sanitizer_path, const std::string& tool_args,
                                 const std::string& probe,
                                 const std::vector<std::string>& probe_args) {
  std::vector<std::future<Run>> started;
  for (const std::string& args : probe_args) {
    started.push_back(std::async(
        std::launch::async, [&, args] { return run(sanitizer_path, tool_args, probe, args); }));
  }
  std::vector<Run> runs;
  for (std::future<Run>& f : started) runs.push_back(f.get());
  return runs;
}

// A probe's first argument that runs the modes after it in one process as a plain one
// (kit::probe::main): no profiler turn, no trial markers.
inline const std::string kModesTogether = "--together";

// Whether the grader asked for a test's modes in one process of the probe
// (KIT_SANITIZER_MODES_TOGETHER=1, its default; CTest and `--modes-apart` run them apart).
inline bool modes_together_asked() {
  const char* together = std::getenv("KIT_SANITIZER_MODES_TOGETHER");
  return together != nullptr && std::string(together) == "1";
}

// The probe's arguments that run `modes` one after another in one process (kModesTogether).
inline std::string together_args(const std::vector<std::string>& modes) {
  std::string args = kModesTogether;
  for (const std::string& mode : modes) args += " " + mode;
  return args;
}

// What a run of the tool covered: one mode, or several in one process ("tiles and strips").
struct ModesRun {
  std::string modes;
  Run run;
};

// Runs `tool_args` over each of the probe's `modes`: where the grader asks for fewer CUDA
// processes (KIT_SANITIZER_MODES_TOGETHER=1, its default), all in one process of the probe, one
// after the other (kModesTogether): one start of CUDA and of the tool instead of one a mode;
// otherwise (CTest, `grader bench --modes-apart`) each in a process of its own, side by side
// (run_each). A
// test passes or fails the same either way: it fails when any mode's run does, and a process that
// stops at a failing mode fails it as that mode's own run would; what its message names differs.
inline std::vector<ModesRun> run_modes(const std::string& sanitizer_path,
                                       const std::string& tool_args, const std::string& probe,
                                       const std::vector<std::string>& modes) {
  if (modes.size() > 1 && modes_together_asked()) {
    std::string named;
    for (std::size_t i = 0; i < modes.size(); ++i) {
      named += (i == 0 ? "" : i + 1 == modes.size() ? " and " : ", ") + modes[i];
    }
    return {{named, run(sanitizer_path, tool_args, probe, together_args(modes))}};
  }
  std::vector<ModesRun> runs;
  const std::vector<Run> each = run_each(sanitizer_path, tool_args, probe, modes);
  for (std::size_t i = 0; i < modes.size(); ++i) runs.push_back({modes[i], each[i]});
  return runs;
}

// One run per mode, for a test whose diagnosis tells the modes apart (lab 03's race check: one
// phase against several). Where the grader asks for the modes together, they first run in one
// process of the probe: a clean run (exit 0: every mode ended well and the tool found nothing)
// stands for each mode's, one start of CUDA and of the tool instead of one a mode; any other end
// runs each mode again in a process of its own (run_each), so a test that fails is judged on
// exactly the runs it would have been judged on apart. A clean run together is not always a clean
// run a mode (run_modes says why: what the student's launcher keeps reaches the next mode); the
// grader accepts that, as it does for run_modes. A truncated output is not taken for clean.
// Elsewhere (CTest, `--modes-apart`): run_each.
inline std::vector<Run> run_each_unless_clean_together(const std::string& sanitizer_path,
                                                       const std::string& tool_args,
                                                       const std::string& probe,
                                                       const std::vector<std::string>& modes) {
  if (modes.size() > 1 && modes_together_asked()) {
    const Run together = run(sanitizer_path, tool_args, probe, together_args(modes));
    if (together.exit_code == 0 && !together.truncated) {
      return std::vector<Run>(modes.size(), together);
    }
  }
  return run_each(sanitizer_path, tool_args, probe, modes);
}

// Lines of a tool's output as a test quotes them in a failure message: each behind "| ", so that
// nothing the student's program printed can pass for one of the kit's "hint:" lines.
inline std::string quoted(const std::string& line) { return "| " + line + "\n"; }

// The lines of a report that contain any of `needles`, at most `limit` of them, quoted.
inline std::string lines_with(const std::string& output, const std::vector<std::string>& needles,
                              int limit = 12) {
  std::istringstream in(output);
  std::string line, kept;
  int count = 0;
  while (std::getline(in, line) && count < limit) {
    for (const std::string& needle : needles) {
      if (line.find(needle) != std::string::npos) {
        kept += quoted(line);
        ++count;
        break;
      }
    }
  }
  return kept;
}

// racecheck as the tests run it: its analysis report, one entry per race (the two source lines
// and how many hazards between them), not its hazard report, one entry per pair of accesses. A
// kernel without a barrier makes over 100,000 hazards at width 64, and reporting each one took
// racecheck 11-15 s of the GPU where the analysis took 1.4 s, with the same exit code
// (bench/RESULTS.md, "Racecheck's report").
inline const std::string kRacecheck = "--tool racecheck --racecheck-report analysis";

// The lines of a racecheck report that show a student the race: the two accesses and the
// summary (and, from a hazard report, the threads).
inline std::string race_lines(const std::string& output) {
  return lines_with(output,
                    {"Race reported", "access at", "hazard detected", "Thread (", "SUMMARY"}, 10);
}

// The last `limit` lines of an output, quoted, for reports the tests do not understand.
inline std::string tail(const std::string& output, int limit = 15) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  std::string kept;
  for (std::size_t i = lines.size() > static_cast<std::size_t>(limit) ? lines.size() - limit : 0;
       i < lines.size(); ++i) {
    kept += quoted(lines[i]);
  }
  return kept;
}

// Why compute-sanitizer cannot judge kernels here, or "" when it can: its run of the probe's own
// clean kernel (probe mode "selftest") must exit 0. Tests ask only after a run of the student's
// kernels ended in a way they do not understand, which saves a sanitizer start in every test
// that passes.
inline std::string unusable_reason(const std::string& sanitizer_path, const std::string& tool_args,
                                   const std::string& probe) {
  const Run self = run(sanitizer_path, tool_args, probe, "selftest");
  if (self.exit_code == 0) return "";
  return "compute-sanitizer cannot check kernels on this machine: its run of the probe's own "
         "clean kernel exited with " +
         std::to_string(self.exit_code) + ":\n" + tail(self.output, 8);
}

}  // namespace kit::sanitizer
