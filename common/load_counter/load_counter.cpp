// Counts a probe's global load instructions per kernel launch without Nsight Compute, with the
// Compute Sanitizer API (docs/design/tests.md, "Counting global loads (the locality test)"). The
// judge (kit::profiler::count_loads) runs the probe with this library both preloaded (LD_PRELOAD)
// and named in CUDA_INJECTION64_PATH, so that the CUDA driver calls InitializeInjection at its
// start. It patches every module the probe loads so that each global memory access first calls
// kit_count_global_access (load_count_patch.cu), and after each launch writes one line to the
// judge's pipe:
//   <token> <n> <warp-level global loads> <kernel's mangled name>
// numbered from 1, and at the process's end
//   <token> end <launches begun> <launches counted>
// Anything that fails writes "<token> error <call>: <why>", and the judge reads no count from the
// run: it counts with Nsight Compute instead.
//
// The token is the judge's secret for this run, read from a pipe (KIT_LOAD_COUNT_TOKEN_FD) by the
// constructor below, which runs before the executable's own constructors. That does not keep the
// student's code, linked into the probe, from the token or from the judge's pipe
// (docs/design/tests.md, "The load counter", "Forging"): the count grading reads is that of
// kit_device_count (device_count.cpp), which holds no host code of the student's.
#include <dlfcn.h>
#include <sanitizer.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "load_counts.h"

namespace {

// Plain data, and containers never destroyed: the end line is written by a destructor that may
// run after the C++ objects of this library are gone (exit's handlers before the libraries'
// finalizers).
char token[129];     // empty when the judge gave none: then nothing is written
int results = -1;    // the judge's pipe
std::mutex writing;  // one line at a time, whole

std::recursive_mutex patching;                  // the API's patching calls, one at a time
auto& with_patches = *new std::set<CUcontext>;  // contexts the patch module was loaded into
bool adding_patches = false;                    // loading the patch itself is not patched

std::mutex launches_mutex;
// Each launch's counts, in device memory from its begin to its end.
auto& launches = *new std::map<Sanitizer_LaunchHandle, kit_load_counter::Counts*>;
unsigned long long begun = 0;    // launches whose counts were set up
unsigned long long counted = 0;  // launches whose line was written
bool injected = false;           // the CUDA driver called InitializeInjection, which subscribed
// Only in the copy built for the kit's CPU tests (KIT_LOAD_COUNT_TEST_HATCH), which have no CUDA
// driver to load the counter: an end line without injection. Never in the copy a probe is given,
// where a student's code could set the variable first.
bool end_without_driver = false;

void write_line(const std::string& text) {
  if (token[0] == '\0' || results < 0) return;
  const std::string line = std::string(token) + " " + text + "\n";
  const std::lock_guard<std::mutex> lock(writing);
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = write(results, line.data() + done, line.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

int descriptor(const char* variable) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long fd = std::strtol(text, &end, 10);
  return end != nullptr && *end == '\0' && fd >= 0 && fd < 1 << 20 ? static_cast<int>(fd) : -1;
}

// Before main and before any constructor of the executable (the student's files are in it): the
// token, and the pipe the lines go to. The token's pipe is read to its end and closed, so that
// nothing after this finds it there.
__attribute__((constructor)) void read_token() {
  const int from = descriptor("KIT_LOAD_COUNT_TOKEN_FD");
  results = descriptor("KIT_LOAD_COUNT_FD");
  if (from < 0) return;
  std::size_t size = 0;
  for (ssize_t n;
       size < sizeof token - 1 && (n = read(from, token + size, sizeof token - 1 - size)) > 0;)
    size += static_cast<std::size_t>(n);
  close(from);
  while (size > 0 && (token[size - 1] == '\n' || token[size - 1] == ' ')) --size;
  token[size] = '\0';
  unsetenv("KIT_LOAD_COUNT_TOKEN_FD");
#ifdef KIT_LOAD_COUNT_TEST_HATCH
  end_without_driver = std::getenv("KIT_LOAD_COUNT_END_WITHOUT_DRIVER") != nullptr;
#endif
}

// At the process's end (exit, or main's return): how many launches were begun and counted. A
// process that ends otherwise (a crash, _exit) writes no end line, and its count is not read.
// A process the driver never loaded the counter into (CUDA_INJECTION64_PATH lost or ignored)
// counted nothing, which is not a count of zero: it says so instead.
__attribute__((destructor)) void write_end() {
  const std::lock_guard<std::mutex> lock(launches_mutex);
  if (!injected && !end_without_driver) {
    write_line("error the CUDA driver never started the counter (InitializeInjection)");
    return;
  }
  write_line("end " + std::to_string(begun) + " " + std::to_string(counted));
}

bool ok(SanitizerResult result, const char* call) {
  if (result == SANITIZER_SUCCESS) return true;
  const char* text = nullptr;
  sanitizerGetResultString(result, &text);
  write_line(std::string("error ") + call + ": " + (text != nullptr ? text : "?"));
  return false;
}

// The patch file: load_count_patch.fatbin beside this library (the kit's build puts it there).
std::string patch_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&patch_path), &info) != 0 && info.dli_fname != nullptr) {
    const std::string self = info.dli_fname;
    return self.substr(0, self.find_last_of('/') + 1) + "load_count_patch.fatbin";
  }
  return "load_count_patch.fatbin";
}

void module_loaded(const Sanitizer_ResourceModuleData& data) {
  // Recursive, and the flag: whether loading the patches reports a module loaded is not said.
  const std::lock_guard<std::recursive_mutex> lock(patching);
  if (adding_patches) return;
  if (with_patches.insert(data.context).second) {
    adding_patches = true;
    const bool added = ok(sanitizerAddPatchesFromFile(patch_path().c_str(), data.context),
                          "sanitizerAddPatchesFromFile");
    adding_patches = false;
    if (!added) return;
  }
  if (ok(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, data.module,
                                    "kit_count_global_access"),
         "sanitizerPatchInstructions")) {
    ok(sanitizerPatchModule(data.module), "sanitizerPatchModule");
  }
}

void launch_begin(const Sanitizer_LaunchData& launch) {
  void* counts = nullptr;
  if (!ok(sanitizerAlloc(launch.context, &counts, sizeof(kit_load_counter::Counts)),
          "sanitizerAlloc")) {
    return;
  }
  if (!ok(sanitizerMemset(counts, 0, sizeof(kit_load_counter::Counts), launch.hStream),
          "sanitizerMemset") ||
      !ok(sanitizerSetLaunchCallbackData(launch.hLaunch, launch.function, launch.hStream, counts),
          "sanitizerSetLaunchCallbackData")) {
    sanitizerFree(launch.context, counts);
    return;
  }
  const std::lock_guard<std::mutex> lock(launches_mutex);
  launches[launch.hLaunch] = static_cast<kit_load_counter::Counts*>(counts);
  ++begun;
}

void launch_end(const Sanitizer_LaunchData& launch) {
  kit_load_counter::Counts* device = nullptr;
  {
    const std::lock_guard<std::mutex> lock(launches_mutex);
    const auto found = launches.find(launch.hLaunch);
    if (found == launches.end()) return;
    device = found->second;
    launches.erase(found);
  }
  kit_load_counter::Counts counts{};
  // The header calls the end "complete" without saying the kernel has finished: wait for it.
  if (ok(sanitizerStreamSynchronize(launch.hStream), "sanitizerStreamSynchronize") &&
      ok(sanitizerMemcpyDeviceToHost(&counts, device, sizeof counts, launch.hStream),
         "sanitizerMemcpyDeviceToHost")) {
    const std::lock_guard<std::mutex> lock(launches_mutex);
    ++counted;
    // The name last: it may hold spaces.
    write_line(std::to_string(counted) + " " + std::to_string(counts.warp_loads) + " " +
               (launch.functionName != nullptr ? launch.functionName : "?"));
  }
  sanitizerFree(launch.context, device);
}

void SANITIZERAPI on_event(void* /*userdata*/, Sanitizer_CallbackDomain domain,
                           Sanitizer_CallbackId id, const void* data) {
  if (domain == SANITIZER_CB_DOMAIN_RESOURCE && id == SANITIZER_CBID_RESOURCE_MODULE_LOADED) {
    module_loaded(*static_cast<const Sanitizer_ResourceModuleData*>(data));
  } else if (domain == SANITIZER_CB_DOMAIN_LAUNCH && id == SANITIZER_CBID_LAUNCH_BEGIN) {
    launch_begin(*static_cast<const Sanitizer_LaunchData*>(data));
  } else if (domain == SANITIZER_CB_DOMAIN_LAUNCH && id == SANITIZER_CBID_LAUNCH_END) {
    launch_end(*static_cast<const Sanitizer_LaunchData*>(data));
  }
}

}  // namespace

// Called by the CUDA driver when it loads this library (CUDA_INJECTION64_PATH). NVIDIA's
// injection samples return 1 for success; the sanitizer's headers do not document this entry.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  Sanitizer_SubscriberHandle subscriber = nullptr;
  if (!ok(sanitizerSubscribe(&subscriber, on_event, nullptr), "sanitizerSubscribe") ||
      !ok(sanitizerEnableDomain(1, subscriber, SANITIZER_CB_DOMAIN_RESOURCE),
          "sanitizerEnableDomain") ||
      !ok(sanitizerEnableDomain(1, subscriber, SANITIZER_CB_DOMAIN_LAUNCH),
          "sanitizerEnableDomain")) {
    return 0;
  }
  const std::lock_guard<std::mutex> lock(launches_mutex);
  injected = true;
  return 1;
}
