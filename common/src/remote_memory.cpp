// What the student's worker holds of the device, read from outside it: the driver's own count
// per process (NVML, kit/nvml.hpp), never a figure the worker's code could change.
#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kit/nvml.hpp"
#include "kit/remote.hpp"

namespace kit::remote {
namespace {

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

std::optional<bool> maps_gpu(long pid) {
  if (pid <= 0) return std::nullopt;
  for (long member : family(pid)) {
    std::ifstream maps("/proc/" + std::to_string(member) + "/maps");
    if (!maps) return std::nullopt;
    std::string line;
    bool read_any = false;
    while (std::getline(maps, line)) {
      read_any = true;
      if (line.find("/dev/nvidia") != std::string::npos) return true;
    }
    if (!read_any || maps.bad()) return std::nullopt;  // a live process always maps something
  }
  return false;
}

long long process_device_memory(long pid, std::string* why) {
  const nvml::Library& n = nvml::library();
  auto fail = [why](const std::string& text) {
    if (why != nullptr) *why = text;
    return -1LL;
  };
  if (!n.problem.empty()) return fail(n.problem);
  if (pid <= 0) return fail("no worker is running");
  const std::set<long> worker = family(pid);
  // The lane's GPU alone where it is known: the worker sees no other (the sandbox shows it that
  // GPU's node), and a judge polls every 100 ms, so asking each GPU of a node of four about its
  // processes made four times the driver's work, for every judge on the node.
  std::vector<nvml::Device> devices;
  if (nvml::Device lane = nvml::lane_device(); lane != nullptr) {
    devices.push_back(lane);
  } else {
    unsigned int count = 0;
    if (n.count(&count) != 0) return fail("nvmlDeviceGetCount failed");
    for (unsigned int i = 0; i < count; ++i) {
      nvml::Device device = nullptr;
      if (n.handle(i, &device) == 0) devices.push_back(device);
    }
  }
  long long bytes = 0;
  bool seen = false;  // this process or one of the worker's
  for (nvml::Device device : devices) {
    std::vector<nvml::ProcessInfo> list(256);
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
  // and so holds nothing, or NVML's ids are another namespace's. The worker's maps tell the two
  // apart: one that never mapped the driver's device files has never opened the GPU (lab 06's
  // calculator, lab 05's configuration chooser: the worker makes no context for host calls), and
  // holds nothing; otherwise the count is unknown. Either way the worker holds no device memory
  // the judge could have read and stopped it for.
  if (!seen) {
    if (maps_gpu(pid) == std::optional<bool>(false)) return 0;
    return fail(
        "NVML lists neither this process nor the worker: the worker has no CUDA context, or "
        "NVML's process ids are another namespace's");
  }
  return bytes;
}

}  // namespace kit::remote
