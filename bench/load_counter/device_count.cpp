// An experiment toward a load count no student code can forge (docs/design/tests.md, "The load
// counter", "Forging"): a program of the kit's alone that takes the device code out of a lab's
// probe (cuobjdump -xelf), loads the cubin that holds the lesson's kernel, and launches that
// kernel itself with the lesson's configuration, in the probe's own counted run
// (kit::probe::run_counted_matmul: its inputs, its check of P). Run under the load counter, the
// process holds no host code of the student's: no constructor, no symbol of the student's, no
// launcher. compare.py counts it beside ncu's count of the probe itself.
//
//   device_count <probe> <kernel, demangled, e.g. "lab03::tiled_matmul_kernel<16>("> <tile>
//
// Lab 03's kernel only: (const float* M, const float* N, float* P, int width), one thread per
// element of P, tile x tile blocks. Prints the probe's result line; exits 0 when P is right, 4
// when it is wrong, 1 on any other failure.
#include <cuda.h>
#include <cxxabi.h>
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kit/probe.hpp"

namespace {

void check(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const char* text = nullptr;
  cuGetErrorString(result, &text);
  std::fprintf(stderr, "device_count: %s failed: %s\n", call, text != nullptr ? text : "?");
  std::exit(1);
}

std::string demangled(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

// The cubins of `probe` for compute capability `cc` (e.g. "sm_90"), extracted into `folder`.
std::vector<std::string> cubins(const std::string& probe, const std::string& folder,
                                const std::string& cc) {
  const std::string command =
      "cd '" + folder + "' && cuobjdump -xelf all '" + probe + "' > /dev/null";
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "device_count: cuobjdump -xelf failed on %s\n", probe.c_str());
    std::exit(1);
  }
  std::vector<std::string> found;
  if (DIR* dir = opendir(folder.c_str())) {
    while (const dirent* entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name.find("." + cc + ".cubin") != std::string::npos) found.push_back(folder + "/" + name);
    }
    closedir(dir);
  }
  return found;
}

// The function whose demangled name holds `kernel`, in the first cubin that has one.
CUfunction find_kernel(const std::vector<std::string>& files, const std::string& kernel) {
  for (const std::string& file : files) {
    CUmodule module = nullptr;
    if (cuModuleLoad(&module, file.c_str()) != CUDA_SUCCESS) continue;
    unsigned int count = 0;
    check(cuModuleGetFunctionCount(&count, module), "cuModuleGetFunctionCount");
    std::vector<CUfunction> functions(count);
    check(cuModuleEnumerateFunctions(functions.data(), count, module),
          "cuModuleEnumerateFunctions");
    for (CUfunction f : functions) {
      const char* name = nullptr;
      // Demangled, a template's name begins with its return type ("void lab03::...").
      if (cuFuncGetName(&name, f) == CUDA_SUCCESS && name != nullptr &&
          demangled(name).find(kernel) != std::string::npos) {
        return f;
      }
    }
    cuModuleUnload(module);
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <probe> <demangled kernel name> <tile>\n", argv[0]);
    return 2;
  }
  const std::string probe = argv[1], kernel = argv[2];
  const int tile = std::atoi(argv[3]);
  if (tile <= 0 || kit::probe::kCountedMatmulWidth % tile != 0) {
    std::fprintf(stderr, "device_count: the tile must divide %d\n",
                 kit::probe::kCountedMatmulWidth);
    return 2;
  }
  check(cuInit(0), "cuInit");
  CUdevice device = 0;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  int major = 0, minor = 0;
  check(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "cc");
  check(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "cc");
  CUcontext context = nullptr;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");

  char folder[] = "/tmp/device-count-XXXXXX";
  if (mkdtemp(folder) == nullptr) return 1;
  const std::vector<std::string> files =
      cubins(probe, folder, "sm_" + std::to_string(major * 10 + minor));
  const CUfunction function = find_kernel(files, kernel);
  std::system(("rm -rf '" + std::string(folder) + "'").c_str());
  if (function == nullptr) {
    std::fprintf(stderr, "device_count: no kernel %s... in the %zu cubins of %s\n", kernel.c_str(),
                 files.size(), probe.c_str());
    return 1;
  }

  // The probe's own run (kit::probe::run_counted_matmul): its inputs, P poisoned, the check and
  // the result line; only the launch is the kit's here, tile x tile blocks.
  return kit::probe::run_counted_matmul(
      "device_count", kit::probe::kCountedMatmulWidth, tile,
      [function, tile](const float* M, const float* N, float* P) {
        int width = kit::probe::kCountedMatmulWidth;
        void* args[] = {&M, &N, &P, &width};
        const unsigned blocks = static_cast<unsigned>(width / tile);
        const unsigned threads = static_cast<unsigned>(tile);
        check(cuLaunchKernel(function, blocks, blocks, 1, threads, threads, 1, 0, nullptr, args,
                             nullptr),
              "cuLaunchKernel");
      });
}
