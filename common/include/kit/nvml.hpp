// NVML, the driver's management library, opened at run time so that the kit builds and its
// host-only tests run where there is no driver: the few declarations the kit uses, and the GPU
// of a test process's lane as the grader names it.
#pragma once

#include <string>

namespace kit::nvml {

// The few NVML declarations used (nvml.h is not part of every toolkit install).
using Return = int;
using Device = void*;
struct ProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct Library {
  Return (*init)() = nullptr;
  Return (*count)(unsigned int*) = nullptr;
  Return (*handle)(unsigned int, Device*) = nullptr;
  Return (*processes)(Device, unsigned int*, ProcessInfo*) = nullptr;
  Return (*by_bus_id)(const char*, Device*) = nullptr;
  Return (*name)(Device, char*, unsigned int) = nullptr;
  Return (*capability)(Device, int*, int*) = nullptr;
  std::string problem;  // why NVML cannot be used here; empty when it can
};

// Loaded and initialized once a process.
const Library& library();

// The GPU of this process's lane, where the grader named it by its PCI address (KIT_GPU_BUS_ID,
// grader/pipeline/run.py): nullptr where it did not (CTest, make check) or NVML cannot find it.
// NVML attaches a GPU when a handle to it is first taken, so a process that asks only for its own
// GPU never initializes the node's others.
Device lane_device();

// The lane's GPU's name and compute capability (false where lane_device has none). Asks nothing of
// the CUDA driver, which would initialize every GPU whose node the process can open.
bool lane_gpu(std::string& name, int& cc_major, int& cc_minor);

}  // namespace kit::nvml
