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
// first process starts it). With `whole`, nullopt where a process's list of children cannot be
// read, which would hide a part of the family (a kernel without those lists, a /proc that shows
// none); otherwise the processes found.
std::optional<std::set<long>> family(long pid, bool whole) {
  std::set<long> all{pid};
  std::vector<long> todo{pid};
  while (!todo.empty()) {
    const long at = todo.back();
    todo.pop_back();
    const std::string tasks = "/proc/" + std::to_string(at) + "/task";
    DIR* dir = opendir(tasks.c_str());
    if (dir == nullptr) {
      if (whole) return std::nullopt;
      continue;
    }
    bool listed = true;
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      std::ifstream children(tasks + "/" + entry->d_name + "/children");
      listed = listed && static_cast<bool>(children);
      for (long child; children >> child;) {
        if (all.insert(child).second) todo.push_back(child);
      }
    }
    closedir(dir);
    if (whole && !listed) return std::nullopt;
  }
  return all;
}

// The device files through which a process reaches the GPU's driver: NVIDIA's (/dev/nvidiactl,
// /dev/nvidia0, /dev/nvidia-uvm...) and WSL's (/dev/dxg).
bool names_gpu_device(const std::string& text) {
  return text.find("/dev/nvidia") != std::string::npos ||
         text.find("/dev/dxg") != std::string::npos;
}

// Whether process `pid` runs yet: an ended one that is not yet reaped (a zombie) has closed its
// descriptors and unmapped its memory, whatever it held of the GPU while it ran.
bool running(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const std::size_t close = text.rfind(')');  // "pid (comm) state ...": comm may hold anything
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  const char state = text[close + 2];
  return state != 'Z' && state != 'X' && state != 'x';
}

// Whether process `pid` has one of them open through a descriptor; nullopt where its descriptors
// cannot be read, or it has ended.
std::optional<bool> descriptor_on_gpu(long pid) {
  if (!running(pid)) return std::nullopt;
  const std::string folder = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = opendir(folder.c_str());
  if (dir == nullptr) return std::nullopt;
  bool found = false;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    char target[4096];
    const ssize_t n = ::readlink((folder + "/" + entry->d_name).c_str(), target, sizeof target - 1);
    if (n > 0 && names_gpu_device(std::string(target, static_cast<std::size_t>(n)))) {
      found = true;
      break;
    }
  }
  closedir(dir);
  return found;
}

// Whether process `pid` maps one of them; nullopt where its maps cannot be read (a process that
// has ended maps nothing, and a live one always maps something).
std::optional<bool> mapping_of_gpu(long pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  if (!maps) return std::nullopt;
  std::string line;
  bool read_any = false;
  while (std::getline(maps, line)) {
    read_any = true;
    if (names_gpu_device(line)) return true;
  }
  if (!read_any || maps.bad()) return std::nullopt;
  return false;
}

}  // namespace

long long worker_device_memory(std::string* why) {
  return process_device_memory(worker_pid(Role::student), why);
}

std::optional<bool> holds_gpu_open(long pid, bool read_maps) {
  if (pid <= 0) return std::nullopt;
  const std::optional<std::set<long>> members = family(pid, true);
  if (!members) return std::nullopt;
  for (long member : *members) {
    const std::optional<bool> descriptor = descriptor_on_gpu(member);
    if (!descriptor || *descriptor) return descriptor;
    if (!read_maps) continue;
    const std::optional<bool> mapping = mapping_of_gpu(member);
    if (!mapping || *mapping) return mapping;
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
  const std::set<long> worker = *family(pid, false);
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
  // and so holds nothing, or NVML's ids are another namespace's. The worker's descriptors and
  // maps tell the two apart: a process's device memory lives only while it holds the driver's
  // device file open, through a descriptor or a mapping, so one that holds neither holds nothing
  // (lab 06's calculator, lab 05's configuration chooser: the worker makes no context for host
  // calls); otherwise the count is unknown. Either way the worker holds no device memory the
  // judge could have read and stopped it for.
  if (!seen) {
    if (holds_gpu_open(pid) == std::optional<bool>(false)) return 0;
    return fail(
        "NVML lists neither this process nor the worker: the worker has no CUDA context, or "
        "NVML's process ids are another namespace's");
  }
  return bytes;
}

}  // namespace kit::remote
