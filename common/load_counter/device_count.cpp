// kit_device_count: the locality tests' counted run (docs/design/tests.md, "The load counter").
// A program of the kit's alone that takes the device code out of a lab's probe (cuobjdump
// -xelf), loads the cubin that holds the lesson's kernel and launches that kernel itself, with
// the lesson's configuration, in the probe's own counted run (kit::probe::run_counted_matmul: its
// inputs, P poisoned, its check of P), under the load counter. The process holds no host code of
// the student's: no constructor, no launcher, no symbol, so nothing of the student's can reach
// the counter's token or its lines; only the kernel runs, on the GPU.
//
//   kit_device_count <cuobjdump> <probe> <kernel> <strip depth> <mode>...
//
// <kernel> is qualified, e.g. lab03::tiled_matmul_kernel; each mode, loads-16 or loads-32, runs
// <kernel><16> or <32>, in order, with the kit's trial marker after each, as the probe's modes run
// under Nsight Compute (kit::probe::main). A strip depth of 0 is the square kernel of labs 03 and
// 04: (const float* M, const float* N, float* P, int width), one thread per element of P in tile
// x tile blocks. Otherwise lab 05's: (M, N, P, int I, int J, int K, int strip_depth), tile x tile
// blocks again, with two strips of tile x depth floats of dynamic shared memory.
//
// Exit codes: the probe's (0 done, 1 a CUDA error, as from a kernel that faults, 2 usage,
// kWrongResult), kCountNotSetUp where the probe holds no code for this GPU (the kit's build, not
// the student's doing: the judge then counts with Nsight Compute), and kNoLessonKernel where it
// holds code but not the lesson's kernel at a tile width.
#include <cuda.h>
#include <cxxabi.h>
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kit/probe.hpp"

namespace {

using kit::probe::kCountNotSetUp;
using kit::probe::kNoLessonKernel;

// A driver call's failure ends the program: with `code` 1 where the student's kernel may be why
// (its launch), kCountNotSetUp where the kit's set-up failed before the kernel ran.
void check(CUresult result, const char* call, int code = 1) {
  if (result == CUDA_SUCCESS) return;
  const char* text = nullptr;
  cuGetErrorString(result, &text);
  std::fprintf(stderr, "kit_device_count: %s failed: %s\n", call,
               text != nullptr ? text : "an unknown error");
  std::exit(code);
}

void set_up(CUresult result, const char* call) { check(result, call, kCountNotSetUp); }

std::string demangled(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

// The cubins of `probe` for compute capability `cc` (e.g. "sm_90"), extracted into `folder`;
// empty where cuobjdump failed or the probe has none for it.
std::vector<std::string> cubins(const std::string& cuobjdump, const std::string& probe,
                                const std::string& folder, const std::string& cc) {
  const std::string command =
      "cd '" + folder + "' && '" + cuobjdump + "' -xelf all '" + probe + "' > /dev/null";
  std::vector<std::string> found;
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "kit_device_count: cuobjdump -xelf failed on %s\n", probe.c_str());
    return found;
  }
  if (DIR* dir = opendir(folder.c_str())) {
    while (const dirent* entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name.find("." + cc + ".cubin") != std::string::npos) found.push_back(folder + "/" + name);
    }
    closedir(dir);
  }
  return found;
}

// Every function of the cubins `files`, by demangled name, each with how many cubins define it;
// `loaded` counts the cubins the driver loaded. A cubin it would not load is said on standard
// error: a student's file can make its own cubin too big to load, so that alone is the student's
// doing where another cubin (the kit's own) loaded.
struct DeviceFunctions {
  std::map<std::string, CUfunction> by_name;
  std::map<std::string, int> definitions;
  int loaded = 0;
};

DeviceFunctions device_functions(const std::vector<std::string>& files) {
  DeviceFunctions found;
  for (const std::string& file : files) {
    CUmodule module = nullptr;
    if (const CUresult result = cuModuleLoad(&module, file.c_str()); result != CUDA_SUCCESS) {
      const char* text = nullptr;
      cuGetErrorString(result, &text);
      std::fprintf(stderr, "kit_device_count: cuModuleLoad of %s failed: %s\n", file.c_str(),
                   text != nullptr ? text : "an unknown error");
      continue;
    }
    ++found.loaded;
    // A cubin with no kernel (lab 04's probe has one) enumerates none: the driver refuses a
    // count of 0 as an invalid argument.
    unsigned int count = 0;
    std::vector<CUfunction> functions;
    if (cuModuleGetFunctionCount(&count, module) == CUDA_SUCCESS && count > 0) {
      functions.resize(count);
      if (cuModuleEnumerateFunctions(functions.data(), count, module) != CUDA_SUCCESS) {
        functions.clear();
      }
    }
    for (CUfunction f : functions) {
      const char* name = nullptr;
      if (cuFuncGetName(&name, f) != CUDA_SUCCESS || name == nullptr) continue;
      const std::string full = demangled(name);
      found.by_name.emplace(full, f);
      ++found.definitions[full];
    }
    // Kept loaded: a function found here is launched later.
  }
  return found;
}

// The tile width a loads mode names: loads-16 gives 16; 0 for any other.
int tile_of(const std::string& mode) {
  if (mode == "loads-16") return 16;
  if (mode == "loads-32") return 32;
  return 0;
}

// One counted run: `function` (the lesson's kernel at `tile`) launched as the lesson launches it.
int run_counted(CUfunction function, int tile, int depth) {
  return kit::probe::run_counted_matmul(
      "kit_device_count", kit::probe::kCountedMatmulWidth, tile,
      [function, tile, depth](const float* M, const float* N, float* P) {
        int width = kit::probe::kCountedMatmulWidth;
        int strip_depth = depth;
        const unsigned blocks = static_cast<unsigned>((width + tile - 1) / tile);
        const unsigned threads = static_cast<unsigned>(tile);
        if (depth == 0) {
          void* args[] = {&M, &N, &P, &width};
          check(cuLaunchKernel(function, blocks, blocks, 1, threads, threads, 1, 0, nullptr, args,
                               nullptr),
                "cuLaunchKernel");
        } else {
          // Lab 05's: I = J = K = width, and Mds and Nds carved from the one dynamic buffer.
          const unsigned bytes = static_cast<unsigned>(2 * tile * depth * sizeof(float));
          check(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(bytes)),
                "cuFuncSetAttribute");
          void* args[] = {&M, &N, &P, &width, &width, &width, &strip_depth};
          check(cuLaunchKernel(function, blocks, blocks, 1, threads, threads, 1, bytes, nullptr,
                               args, nullptr),
                "cuLaunchKernel");
        }
      });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: %s <cuobjdump> <probe> <kernel, e.g. lab03::tiled_matmul_kernel> "
                 "<strip depth, 0 for the square kernel> loads-16|loads-32...\n",
                 argv[0]);
    return 2;
  }
  const std::string cuobjdump = argv[1], probe = argv[2], kernel = argv[3];
  const int depth = std::atoi(argv[4]);
  std::vector<char*> modes_argv = {argv[0]};
  std::map<int, CUfunction> kernels;  // by tile width
  for (int i = 5; i < argc; ++i) {
    const int tile = tile_of(argv[i]);
    if (tile == 0 || (depth != 0 && depth % tile != 0)) {
      std::fprintf(stderr, "kit_device_count: %s is no loads mode for a strip depth of %d\n",
                   argv[i], depth);
      return 2;
    }
    kernels[tile] = nullptr;
    modes_argv.push_back(argv[i]);
  }

  set_up(cuInit(0), "cuInit");
  CUdevice device = 0;
  set_up(cuDeviceGet(&device, 0), "cuDeviceGet");
  int major = 0, minor = 0;
  set_up(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
         "cuDeviceGetAttribute");
  set_up(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
         "cuDeviceGetAttribute");
  // The primary context, the one the runtime's calls in run_counted_matmul use too.
  CUcontext context = nullptr;
  set_up(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  set_up(cuCtxSetCurrent(context), "cuCtxSetCurrent");

  const char* tmp = std::getenv("TMPDIR");
  std::string folder =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/kit-device-count-XXXXXX";
  if (mkdtemp(folder.data()) == nullptr) {
    std::fprintf(stderr, "kit_device_count: no temporary folder for the cubins in %s\n",
                 folder.c_str());
    return kCountNotSetUp;
  }
  const std::string cc = "sm_" + std::to_string(major * 10 + minor);
  const std::vector<std::string> files = cubins(cuobjdump, probe, folder, cc);
  const std::string parameters = depth == 0
                                     ? "(float const*, float const*, float*, int)"
                                     : "(float const*, float const*, float*, int, int, int, int)";
  const DeviceFunctions functions = device_functions(files);
  if (std::system(("rm -rf '" + folder + "'").c_str()) != 0) {
    std::fprintf(stderr, "kit_device_count: could not remove %s\n", folder.c_str());
  }
  if (files.empty() || functions.loaded == 0) {
    std::fprintf(stderr, "kit_device_count: %s holds no device code for this GPU (%s) that loads\n",
                 probe.c_str(), cc.c_str());
    return kCountNotSetUp;
  }
  // The kernel as the lab's header declares it, demangled ("void lab03::tiled_matmul_kernel<16>(
  // float const*, float const*, float*, int)"): an overload of other parameters is another
  // function. Defined once: with two definitions the kit could count another than the launcher's.
  for (auto& [tile, function] : kernels) {
    const std::string name = "void " + kernel + "<" + std::to_string(tile) + ">" + parameters;
    const auto defined = functions.definitions.find(name);
    if (defined == functions.definitions.end() || defined->second != 1) {
      std::fprintf(stderr,
                   "kit_device_count: the probe's device code has %s %s<%d>%s: the lab's kernel "
                   "must keep its name, its TILE_WIDTH template parameter and the parameters its "
                   "header declares, defined once\n",
                   defined == functions.definitions.end() ? "no" : "more than one", kernel.c_str(),
                   tile, parameters.c_str());
      return kNoLessonKernel;
    }
    function = functions.by_name.at(name);
  }

  std::vector<kit::probe::Mode> modes;
  for (const auto& [tile, function] : kernels) {
    modes.push_back({"loads-" + std::to_string(tile), [function = function, tile = tile, depth] {
                       return run_counted(function, tile, depth);
                     }});
  }
  return kit::probe::main(static_cast<int>(modes_argv.size()), modes_argv.data(),
                          "kit_device_count", modes);
}
