// What the student's worker holds of the device, read from outside it: the driver's own count
// per process (NVML), never a figure the worker's code could change. NVML is opened at run
// time, so that the kit builds and its host-only tests run where there is no driver.
#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kit/remote.hpp"

namespace kit::remote {
namespace {

// The few NVML declarations used here (nvml.h is not part of every toolkit install).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct Nvml {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*) = nullptr;
  std::string problem;
};

const Nvml& nvml() {
  static const Nvml loaded = [] {
    Nvml n;
    void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      n.problem = "NVML (libnvidia-ml.so.1) is not installed here";
      return n;
    }
    n.init = reinterpret_cast<decltype(n.init)>(dlsym(library, "nvmlInit_v2"));
    n.count = reinterpret_cast<decltype(n.count)>(dlsym(library, "nvmlDeviceGetCount_v2"));
    n.handle =
        reinterpret_cast<decltype(n.handle)>(dlsym(library, "nvmlDeviceGetHandleByIndex_v2"));
    n.processes = reinterpret_cast<decltype(n.processes)>(
        dlsym(library, "nvmlDeviceGetComputeRunningProcesses_v3"));
    if (!n.init || !n.count || !n.handle || !n.processes) {
      n.problem = "this NVML lacks nvmlDeviceGetComputeRunningProcesses_v3";
    } else if (n.init() != 0) {
      n.problem = "nvmlInit failed";
    }
    return n;
  }();
  return loaded;
}

// `pid` and every process below it (the worker may run under the grader's sandbox, whose
// first process starts it).
std::set<long> family(long pid) {
  std::set<long> all{pid};
  std::vector<long> todo{pid};
  while (!todo.empty()) {
    const long at = todo.back();
    todo.pop_back();
    const std::string tasks = "/proc/" + std::to_string(at) + "/task";
    DIR* dir = opendir(tasks.c_str());
    if (dir == nullptr) continue;
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      std::ifstream children(tasks + "/" + entry->d_name + "/children");
      for (long child; children >> child;) {
        if (all.insert(child).second) todo.push_back(child);
      }
    }
    closedir(dir);
  }
  return all;
}

}  // namespace

long long worker_device_memory(std::string* why) {
  return process_device_memory(worker_pid(Role::student), why);
}

long long process_device_memory(long pid, std::string* why) {
  const Nvml& n = nvml();
  auto fail = [why](const std::string& text) {
    if (why != nullptr) *why = text;
    return -1LL;
  };
  if (!n.problem.empty()) return fail(n.problem);
  if (pid <= 0) return fail("no worker is running");
  const std::set<long> worker = family(pid);
  unsigned int devices = 0;
  if (n.count(&devices) != 0) return fail("nvmlDeviceGetCount failed");
  long long bytes = 0;
  bool seen = false;  // this process or one of the worker's
  for (unsigned int i = 0; i < devices; ++i) {
    nvmlDevice_t device = nullptr;
    if (n.handle(i, &device) != 0) continue;
    std::vector<nvmlProcessInfo_t> list(256);
    unsigned int size = static_cast<unsigned int>(list.size());
    if (n.processes(device, &size, list.data()) != 0) continue;
    for (unsigned int p = 0; p < size && p < list.size(); ++p) {
      if (static_cast<long>(list[p].pid) == static_cast<long>(getpid())) seen = true;
      if (worker.count(static_cast<long>(list[p].pid)) != 0) {
        bytes += static_cast<long long>(list[p].usedGpuMemory);
        seen = true;
      }
    }
  }
  // A zero means something only where NVML's process ids are this namespace's, which a listed
  // process of ours shows. Where it lists neither this process (a judge makes no context of its
  // own unless a test needs one: common/src/gpu.cu) nor the worker's, the worker has no context,
  // and so holds nothing, or NVML's ids are another namespace's: unknown. Either way the worker
  // holds no device memory the judge could have read and stopped it for.
  if (!seen) {
    return fail(
        "NVML lists neither this process nor the worker: the worker has no CUDA context, or "
        "NVML's process ids are another namespace's");
  }
  return bytes;
}

}  // namespace kit::remote
