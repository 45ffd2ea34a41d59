#include "kit/nvml.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace kit::nvml {

const Library& library() {
  static const Library loaded = [] {
    Library n;
    void* opened = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (opened == nullptr) {
      n.problem = "NVML (libnvidia-ml.so.1) is not installed here";
      return n;
    }
    n.init = reinterpret_cast<decltype(n.init)>(dlsym(opened, "nvmlInit_v2"));
    n.count = reinterpret_cast<decltype(n.count)>(dlsym(opened, "nvmlDeviceGetCount_v2"));
    n.handle = reinterpret_cast<decltype(n.handle)>(dlsym(opened, "nvmlDeviceGetHandleByIndex_v2"));
    n.processes = reinterpret_cast<decltype(n.processes)>(
        dlsym(opened, "nvmlDeviceGetComputeRunningProcesses_v3"));
    n.by_bus_id =
        reinterpret_cast<decltype(n.by_bus_id)>(dlsym(opened, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.name = reinterpret_cast<decltype(n.name)>(dlsym(opened, "nvmlDeviceGetName"));
    n.capability = reinterpret_cast<decltype(n.capability)>(
        dlsym(opened, "nvmlDeviceGetCudaComputeCapability"));
    if (!n.init || !n.count || !n.handle || !n.processes) {
      n.problem = "this NVML lacks nvmlDeviceGetComputeRunningProcesses_v3";
    } else if (n.init() != 0) {
      n.problem = "nvmlInit failed";
    }
    return n;
  }();
  return loaded;
}

Device lane_device() {
  static const Device found = []() -> Device {
    const char* bus_id = std::getenv("KIT_GPU_BUS_ID");
    if (bus_id == nullptr || *bus_id == '\0') return nullptr;
    const Library& n = library();
    Device device = nullptr;
    if (!n.problem.empty() || n.by_bus_id == nullptr || n.by_bus_id(bus_id, &device) != 0) {
      return nullptr;
    }
    return device;
  }();
  return found;
}

bool lane_gpu(std::string& name, int& cc_major, int& cc_minor) {
  const Device device = lane_device();
  if (device == nullptr) return false;
  const Library& n = library();
  char text[96] = {};
  if (n.name == nullptr || n.capability == nullptr || n.name(device, text, sizeof text) != 0 ||
      n.capability(device, &cc_major, &cc_minor) != 0) {
    return false;
  }
  name = text;
  return true;
}

}  // namespace kit::nvml
