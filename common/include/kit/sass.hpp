// Reading a kernel's machine code (SASS) from a built executable with cuobjdump, so that a test
// can check what the compiler made of the student's code (local loads and stores, wide shared
// loads) without a GPU. cuobjdump comes with the CUDA toolkit; where the toolkit lacks it,
// scripts/setup.sh installs NVIDIA's pip wheel (nvidia-cuda-cuobjdump) into the kit's .venv.
#pragma once

#include <unistd.h>

#include <cctype>
#include <string>
#include <vector>

#include "kit/sanitizer.hpp"

namespace kit::sass {

// cuobjdump: `configured` (the path CMake found) when it is executable, else in cuda_bin_dir
// (where the kit's nvcc lives), else in the kit's .venv under kit_root (the pip wheel's
// site-packages/nvidia/cu*/bin), else on PATH. Empty when there is none.
std::string find_cuobjdump(const std::string& configured, const std::string& cuda_bin_dir,
                           const std::string& kit_root);

// The path of the running program (a test reads its own machine code); empty if unknown.
inline std::string this_executable() {
  char path[4096];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  return length > 0 ? std::string(path, static_cast<std::size_t>(length)) : std::string();
}

// The start of a kernel's mangled name, for a __global__ function `name` in namespace `space`:
// "_ZN5lab0123chunk_histograms_kernelE" (the parameter types follow).
inline std::string mangled_prefix(const std::string& space, const std::string& name) {
  return "_ZN" + std::to_string(space.size()) + space + std::to_string(name.size()) + name + "E";
}

// One function's machine code for one architecture.
struct Function {
  std::string name;                  // mangled
  std::string arch;                  // "sm_90"
  std::vector<std::string> opcodes;  // "LDL.64", "STG.E", "EXIT", in order, predicates dropped
};

struct Dump {
  std::string error;  // empty when cuobjdump ran and its output was read
  std::vector<Function> functions;
};

// cuobjdump -sass of `binary`, keeping the functions whose mangled name starts with name_prefix.
Dump disassemble(const std::string& cuobjdump, const std::string& binary,
                 const std::string& name_prefix);

// How many of a function's instructions have an opcode starting with one of `prefixes`
// ({"LDL", "STL"}: local loads and stores).
inline int count_opcodes(const Function& function, const std::vector<std::string>& prefixes) {
  int count = 0;
  for (const std::string& opcode : function.opcodes) {
    for (const std::string& prefix : prefixes) {
      if (opcode.compare(0, prefix.size(), prefix) == 0) {
        ++count;
        break;
      }
    }
  }
  return count;
}

// A template kernel's mangled name up to its parameters, for `name<value>` with one int
// template argument in namespace `space`: "_ZN5lab0319tiled_matmul_kernelILi16EEE".
inline std::string mangled_template_prefix(const std::string& space, const std::string& name,
                                           int value) {
  return "_ZN" + std::to_string(space.size()) + space + std::to_string(name.size()) + name + "ILi" +
         std::to_string(value) + "EEE";
}

// The qualified name of a mangled function without its template arguments and parameters
// ("lab01::block_sums_kernel" for _ZN5lab0117block_sums_kernelEPKfPfi), so two builds of one
// kernel with other parameter types or instantiations compare equal; the mangled name itself
// where it is not a plain (nested) name.
inline std::string function_identifier(const std::string& mangled) {
  if (mangled.rfind("_Z", 0) != 0) return mangled;
  std::size_t at = 2;
  const bool nested = at < mangled.size() && mangled[at] == 'N';
  if (nested) ++at;
  std::string name;
  while (at < mangled.size() && std::isdigit(static_cast<unsigned char>(mangled[at]))) {
    std::size_t length = 0;
    while (at < mangled.size() && std::isdigit(static_cast<unsigned char>(mangled[at])))
      length = length * 10 + static_cast<std::size_t>(mangled[at++] - '0');
    if (length == 0 || at + length > mangled.size()) return mangled;
    name += (name.empty() ? "" : "::") + mangled.substr(at, length);
    at += length;
    if (!nested) break;
  }
  return name.empty() ? mangled : name;
}

// What the compiler gave one function for one architecture (cuobjdump --dump-resource-usage).
struct Resources {
  std::string name;  // mangled
  std::string arch;  // "sm_90"
  int registers = 0;
  long long stack = 0, shared = 0, local = 0, constant = 0;
};

// The resource usage of every function of `binary` whose mangled name starts with name_prefix,
// for every architecture it holds; error set when cuobjdump could not be run. `reads` says
// whose binary it is (sanitizer::run_command).
std::vector<Resources> resource_usage(const std::string& cuobjdump, const std::string& binary,
                                      const std::string& name_prefix, std::string& error,
                                      sanitizer::Reads reads = sanitizer::Reads::student_code);

}  // namespace kit::sass
