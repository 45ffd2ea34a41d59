// A kernel of the student's worker, as the compiler built it, read by the judge from the
// worker's executable with cuobjdump: a file the judge reads, never a figure the worker's code
// reports about itself.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "kit/cuda_check.hpp"
#include "kit/gpu.hpp"
#include "kit/remote.hpp"
#include "kit/sass.hpp"

namespace kit::remote {

std::string worker_executable(Role role) {
  const char* variable = role == Role::student ? "KIT_WORKER" : "KIT_REFERENCE_WORKER";
  if (const char* given = std::getenv(variable); given != nullptr && *given != '\0') return given;
  return default_worker_path(role);
}

namespace {

std::string cuobjdump_or_throw() {
  const std::string cuobjdump =
      sass::find_cuobjdump(KIT_CUOBJDUMP, KIT_CUDA_BIN_DIR, KIT_SOURCE_DIR);
  if (cuobjdump.empty()) {
    throw std::runtime_error(
        "cuobjdump was not found, and the kit reads your kernels' resources with it (it comes "
        "with the CUDA toolkit, or pip install nvidia-cuda-cuobjdump)");
  }
  return cuobjdump;
}

// The functions of a role's worker whose mangled name starts with mangled_prefix. cuobjdump
// reads each worker once per process: a test asks for several kernels (one per tile width) and
// for the list of all of them, and the executable does not change while the test runs. The
// reference's worker is the kit's own build, outside the view of the sandbox that reads the
// student's; cuobjdump reads it as the judge runs.
std::vector<sass::Resources> functions_of(Role role, const std::string& mangled_prefix) {
  static std::map<std::string, std::vector<sass::Resources>> read;
  const std::string binary = worker_executable(role);
  auto found = read.find(binary);
  if (found == read.end()) {
    std::string error;
    const sanitizer::Reads reads =
        role == Role::student ? sanitizer::Reads::student_code : sanitizer::Reads::kit_files;
    std::vector<sass::Resources> all =
        sass::resource_usage(cuobjdump_or_throw(), binary, "", error, reads);
    if (!error.empty()) throw std::runtime_error(error);
    found = read.emplace(binary, std::move(all)).first;
  }
  std::vector<sass::Resources> matching;
  for (const sass::Resources& r : found->second) {
    if (r.name.rfind(mangled_prefix, 0) == 0) matching.push_back(r);
  }
  return matching;
}

// The reference's lab namespace is renamed when it is built (-DlabNN=labNN_reference, cmake/
// KitLab.cmake), so its name loses that suffix here to compare with the student's.
std::string as_the_students(std::string name) {
  const std::string suffix = "_reference";
  const std::size_t end = name.find("::");
  if (end != std::string::npos && end >= suffix.size() &&
      name.compare(end - suffix.size(), suffix.size(), suffix) == 0) {
    name.erase(end - suffix.size(), suffix.size());
  }
  return name;
}

}  // namespace

std::vector<std::string> worker_functions_beyond_the_labs() {
  std::set<std::string> labs;
  for (const sass::Resources& r : functions_of(Role::reference, ""))
    labs.insert(as_the_students(sass::function_identifier(r.name)));
  std::set<std::string> beyond;
  for (const sass::Resources& r : functions_of(Role::student, "")) {
    const std::string name = sass::function_identifier(r.name);
    if (labs.count(name) == 0) beyond.insert(name);
  }
  return {beyond.begin(), beyond.end()};
}

long long reserved_shared_bytes_per_block(int cc) {
  // What cudaDevAttrReservedSharedMemoryPerBlock reports, by architecture (the CUDA C++
  // Programming Guide's table of compute capabilities: 1 KB from 8.0 on), so that a judge need not
  // start CUDA to ask. Checked against CUDA's answer on the GPU the kit's tests run on
  // (common/tests/test_remote.cpp).
  return cc >= 80 ? 1024 : 0;
}

KernelAttributes worker_kernel_attributes(const std::string& mangled_prefix) {
  const std::vector<sass::Resources> found = functions_of(Role::student, mangled_prefix);
  // The GPU as gpu_status found it: a judge told its GPU by the grader asks NVML, and starts no
  // CUDA for this (common/src/gpu.cu).
  const GpuStatus& gpu = gpu_status();
  if (!gpu.usable) throw std::runtime_error("no usable GPU here: " + gpu.reason);
  const int wanted = gpu.cc_major * 10 + gpu.cc_minor;
  // The machine code the driver loads: the newest architecture not above the device's.
  const sass::Resources* best = nullptr;
  int best_arch = -1;
  for (const sass::Resources& r : found) {
    const int arch = std::atoi(r.arch.c_str() + 3);
    if (arch <= wanted && arch > best_arch) best = &r, best_arch = arch;
  }
  if (best == nullptr) {
    throw std::runtime_error("your code has no kernel " + mangled_prefix +
                             "... built for this GPU (sm_" + std::to_string(wanted) +
                             "): is it defined and instantiated under that name?");
  }
  // cuobjdump counts the shared memory the system reserves for every block in an sm_90 (and
  // later) kernel's figure; cudaFuncGetAttributes, whose meaning the tests use, does not. Seen
  // with cuobjdump 13: a kernel with no shared memory reads SHARED:1024 for sm_90 and 0 for sm_80.
  const long long reserved = best_arch >= 90 ? reserved_shared_bytes_per_block(wanted) : 0;
  KernelAttributes a;
  a.registers_per_thread = best->registers;
  a.static_shared_bytes =
      static_cast<std::size_t>(best->shared > reserved ? best->shared - reserved : 0);
  // A thread's local arrays are its stack frame to cuobjdump (STACK:32, LOCAL:0 for an array of
  // eight counters indexed at run time, sm_90); cudaFuncGetAttributes counts both as local.
  a.local_bytes_per_thread = static_cast<std::size_t>(best->local + best->stack);
  a.constant_bytes = static_cast<std::size_t>(best->constant);
  a.binary_version = best_arch;
  return a;
}

}  // namespace kit::remote
