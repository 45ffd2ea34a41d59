// The barrier test of every lab whose kernels call __syncthreads() (labs 01, 03, 04 and 05):
// compute-sanitizer's synccheck runs the lab's probe and reports a barrier that some threads of
// a block reached and others did not (an early return, a barrier inside an if that depends on
// the thread). Such a kernel's results are undefined, so its values prove nothing: this test's
// cause is the one a student's feedback names first (grader/pipeline/score.py, HAZARD_TESTS).
//
// What synccheck sees on Hopper (measured on an H200 with three small kernels;
// bench/RESULTS.md, "Shared memory and barriers"): a barrier that only some threads of a warp
// reach is reported, one that whole warps skip is not. The probes run shapes that are no multiple
// of the tile, so that a barrier inside a guard splits a warp.
#pragma once

#include <catch2/catch_test_macros.hpp>
#include <cctype>
#include <string>
#include <vector>

#include "kit/sanitizer.hpp"

namespace kit::synccheck {

inline const std::string kTool = "--tool synccheck";

// "file.cu line N" for the first line of one of the student's source files that the report
// names, "" when it names none (a report without -lineinfo, or an error in the kit's own code).
// Only the file's name is told: the folder it was built in is the grader's.
inline std::string first_line_in(const std::string& output,
                                 const std::vector<std::string>& sources) {
  std::string::size_type best = std::string::npos;
  std::string found;
  for (const std::string& source : sources) {
    // "/<source>:N" or " <source>:N", the first such place (plain search: <regex> in this header
    // cost every lab test file that includes it about a second of compiling).
    const std::string key = source + ":";
    for (std::string::size_type at = output.find(key); at != std::string::npos;
         at = output.find(key, at + 1)) {
      if (at == 0 || at - 1 >= best) break;
      const std::string::size_type digits = at + key.size();
      std::string::size_type end = digits;
      while (end < output.size() && std::isdigit(static_cast<unsigned char>(output[end]))) ++end;
      if ((output[at - 1] != '/' && output[at - 1] != ' ') || end == digits) continue;
      best = at - 1;
      found = source + " line " + output.substr(digits, end - digits);
      break;
    }
  }
  return found;
}

// The report lines worth showing: what was found, where, and by which threads.
inline std::string report_lines(const std::string& output) {
  return sanitizer::lines_with(output,
                               {"Barrier error", "Divergent", "at ", "by thread", "SUMMARY"}, 10);
}

// The test itself: `modes` of `probe` (the lab's) under synccheck, in one process or side by
// side (kit::sanitizer::run_modes). A pass
// when none reports an error; a failure naming the barrier's line otherwise. `kernels` names
// what ran, `sources` the student's files, `readme` the write-up's section on barriers.
inline void check_barriers_reached(const std::string& tool, const std::string& probe,
                                   const std::vector<std::string>& modes,
                                   const std::string& kernels,
                                   const std::vector<std::string>& sources,
                                   const std::string& readme) {
  bool unusable_checked = false;
  for (const sanitizer::ModesRun& run : sanitizer::run_modes(tool, kTool, probe, modes)) {
    const sanitizer::Run& r = run.run;
    CAPTURE(run.modes, r.exit_code);
    if (r.exit_code == 0) continue;
    if (r.exit_code == sanitizer::kErrorsFound) {
      const std::string where = first_line_in(r.output, sources);
      FAIL("synccheck found a barrier that not every thread of a block reached, in "
           << kernels << ":\n"
           << report_lines(r.output) << "hint: the __syncthreads()"
           << (where.empty() ? std::string() : " at " + where)
           << " was not reached by every thread of its block: every thread must reach every "
              "barrier, so no early return before the last one and no barrier inside an if that "
              "only some threads take; guard the loads and the store instead ("
           << readme << ").");
    }
    if (r.exit_code == sanitizer::kWrongResult) {
      FAIL("synccheck found no barrier error, but " << kernels
                                                    << " left outputs unwritten, so there was "
                                                       "nothing to judge:\n"
                                                    << sanitizer::tail(r.output, 4)
                                                    << "hint: make the correctness tests pass "
                                                       "first.");
    }
    if (!unusable_checked) {
      unusable_checked = true;
      const std::string why = sanitizer::unusable_reason(tool, kTool, probe);
      if (!why.empty()) SKIP(why);
    }
    FAIL("the probe failed under synccheck (exit code " << r.exit_code << "):\n"
                                                        << sanitizer::tail(r.output, 10));
  }
  SUCCEED("synccheck found every barrier of " << kernels << " reached by every thread");
}

}  // namespace kit::synccheck
