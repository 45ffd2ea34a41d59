// Which processes a judge started for CUDA work, test by test, for the grader's bench: a node
// starts CUDA processes largely one after another whatever its GPUs (bench/RESULTS.md, "Every GPU
// of a node"), so how many a student-lab costs, and which tests start them, bounds the rate.
// Where $KIT_PROCESS_LOG names a file, each start appends "<kind>\t<test>\n" to it: "worker" and
// "reference worker" (a judge's workers: each starts CUDA at its first GPU call, which a worker
// serving host calls alone never makes; such a worker adds "worker without CUDA" or "reference
// worker without CUDA" for the same test when it is stopped), "tool" (a probe run under
// compute-sanitizer, Nsight Compute or the load counter), "judge" (the judge's own CUDA start, the
// first time it has one). A line break in a test's name is written as a space. Without the
// variable, nothing is written.
#pragma once

#include <string>

namespace kit {

// The test case now running in this process (the kit's Catch2 listener sets it).
void set_logged_test(const std::string& name);

void log_process_start(const char* kind);

// Whether $KIT_PROCESS_LOG names a file (a judge's log is on), the test now logged, and a line
// of `kind` for `test` (what is learnt of a process after its start: "worker without CUDA").
bool process_log_on();
std::string logged_test();
void log_process_event(const char* kind, const std::string& test);

}  // namespace kit
