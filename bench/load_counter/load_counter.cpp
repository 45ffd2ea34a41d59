// Counts a process's global load instructions per kernel launch without Nsight Compute, with the
// Compute Sanitizer API (README.md says why and how to try it): loaded into a CUDA program through
// CUDA_INJECTION64_PATH, it patches every module the program loads so that each global memory
// access calls kit_count_global_access (load_count_patch.cu), and after each launch it prints
//   ==KIT-LOADS== <grid id>,<kernel>,<warp-level global loads>,<thread loads>
// on standard error. A patched kernel runs as a plain one, beside other processes' kernels, where
// a kernel profiled by Nsight Compute holds up the whole GPU (bench/RESULTS.md).
// Anything that fails prints ==KIT-LOADS-ERROR== and the call, so that no count is read from a
// run whose counting failed.
#include <dlfcn.h>
#include <sanitizer.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "load_counts.h"

namespace {

std::recursive_mutex patching;     // the API's patching calls must be serialized
std::set<CUcontext> with_patches;  // contexts the patch module was loaded into
bool adding_patches = false;       // loading the patch module itself is not patched

std::mutex launches_mutex;
// Each launch's counts, in device memory from its begin to its end.
std::map<Sanitizer_LaunchHandle, kit_load_counter::Counts*> launches;

bool ok(SanitizerResult result, const char* call) {
  if (result == SANITIZER_SUCCESS) return true;
  const char* text = nullptr;
  sanitizerGetResultString(result, &text);
  std::fprintf(stderr, "==KIT-LOADS-ERROR== %s: %s\n", call, text != nullptr ? text : "?");
  return false;
}

// The patch file: KIT_LOAD_COUNT_PATCH, else load_count_patch.fatbin beside this library.
std::string patch_path() {
  if (const char* path = std::getenv("KIT_LOAD_COUNT_PATCH")) return path;
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
    std::fprintf(stderr, "==KIT-LOADS== %llu,%s,%llu,%llu\n",
                 static_cast<unsigned long long>(launch.gridId),
                 launch.functionName != nullptr ? launch.functionName : "?", counts.warp_loads,
                 counts.thread_loads);
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
  return 1;
}
