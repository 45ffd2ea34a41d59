// Reading a kernel's machine code (SASS) from a built executable with cuobjdump, so that a test
// can check what the compiler made of the student's code (local loads and stores, wide shared
// loads) without a GPU. cuobjdump comes with the CUDA toolkit; where the toolkit lacks it,
// scripts/setup.sh installs NVIDIA's pip wheel (nvidia-cuda-cuobjdump) into the kit's .venv.
#pragma once

#include <glob.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "kit/sanitizer.hpp"

namespace kit::sass {

// cuobjdump: `configured` (the path CMake found) when it is executable, else in cuda_bin_dir
// (where the kit's nvcc lives), else in the kit's .venv under kit_root (the pip wheel's
// site-packages/nvidia/cu*/bin), else on PATH. Empty when there is none.
inline std::string find_cuobjdump(const std::string& configured, const std::string& cuda_bin_dir,
                                  const std::string& kit_root) {
  if (sanitizer::is_executable(configured)) return configured;
  if (!cuda_bin_dir.empty() && sanitizer::is_executable(cuda_bin_dir + "/cuobjdump")) {
    return cuda_bin_dir + "/cuobjdump";
  }
  if (!kit_root.empty()) {
    const std::string pattern =
        kit_root + "/.venv/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump";
    glob_t found{};
    std::string hit;
    if (glob(pattern.c_str(), 0, nullptr, &found) == 0) {
      for (std::size_t i = 0; i < found.gl_pathc && hit.empty(); ++i) {
        if (sanitizer::is_executable(found.gl_pathv[i])) hit = found.gl_pathv[i];
      }
    }
    globfree(&found);
    if (!hit.empty()) return hit;
  }
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && sanitizer::is_executable(dir + "/cuobjdump")) return dir + "/cuobjdump";
  }
  return "";
}

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
inline Dump disassemble(const std::string& cuobjdump, const std::string& binary,
                        const std::string& name_prefix) {
  Dump dump;
  const std::string command =
      sanitizer::shell_quote(cuobjdump) + " -sass " + sanitizer::shell_quote(binary) + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    dump.error = "could not start " + command;
    return dump;
  }
  static const std::regex instruction(
      R"(^\s*/\*[0-9a-f]+\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*))");
  std::string arch, tail;
  Function* current = nullptr;
  char buffer[4096];
  std::size_t n = 0;
  std::string pending;
  auto take_line = [&](const std::string& text) {
    if (text.find("code for sm_") != std::string::npos) {
      arch = text.substr(text.find("sm_"));
      while (!arch.empty() && std::isspace(static_cast<unsigned char>(arch.back())))
        arch.pop_back();
      current = nullptr;
      return;
    }
    const std::size_t at = text.find("Function : ");
    if (at != std::string::npos) {
      std::string name = text.substr(at + 11);
      while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
        name.pop_back();
      current = nullptr;
      if (name.compare(0, name_prefix.size(), name_prefix) == 0) {
        dump.functions.push_back({name, arch, {}});
        current = &dump.functions.back();
      }
      return;
    }
    std::smatch match;
    if (current != nullptr && std::regex_search(text, match, instruction)) {
      current->opcodes.push_back(match[2]);
    }
    if (tail.size() < 2000) tail += text + "\n";
  };
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    pending.append(buffer, n);
    std::size_t start = 0, end = 0;
    while ((end = pending.find('\n', start)) != std::string::npos) {
      take_line(pending.substr(start, end - start));
      start = end + 1;
    }
    pending.erase(0, start);
  }
  if (!pending.empty()) take_line(pending);
  const int status = pclose(pipe);
  if (status != 0) {
    dump.error = command + " exited with status " + std::to_string(status) + ":\n" +
                 sanitizer::tail(tail, 8);
  }
  return dump;
}

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
inline std::vector<Resources> resource_usage(
    const std::string& cuobjdump, const std::string& binary, const std::string& name_prefix,
    std::string& error, sanitizer::Reads reads = sanitizer::Reads::student_code) {
  std::vector<Resources> found;
  const sanitizer::Run run =
      sanitizer::run_command(sanitizer::shell_quote(cuobjdump) + " --dump-resource-usage " +
                                 sanitizer::shell_quote(binary),
                             reads);
  if (run.exit_code != 0) {
    error = "cuobjdump --dump-resource-usage failed (exit code " + std::to_string(run.exit_code) +
            "): " + run.output.substr(0, 500);
    return found;
  }
  std::istringstream lines(run.output);
  std::string line, arch;
  const std::regex arch_line(R"(^\s*arch = (sm_\d+a?))");
  const std::regex function_line(R"(^\s*Function ([^:]+):)");
  const std::regex field(R"(([A-Z]+)(\[0\])?:(\d+))");
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, arch_line)) {
      arch = m[1];
    } else if (std::regex_search(line, m, function_line)) {
      Resources r;
      r.name = m[1];
      r.arch = arch;
      if (!std::getline(lines, line)) break;
      if (r.name.rfind(name_prefix, 0) != 0) continue;
      for (auto it = std::sregex_iterator(line.begin(), line.end(), field);
           it != std::sregex_iterator(); ++it) {
        const std::string key = (*it)[1];
        const long long value = std::stoll((*it)[3]);
        if (key == "REG") r.registers = static_cast<int>(value);
        if (key == "STACK") r.stack = value;
        if (key == "SHARED") r.shared = value;
        if (key == "LOCAL") r.local = value;
        if (key == "CONSTANT") r.constant = value;
      }
      found.push_back(r);
    }
  }
  return found;
}

}  // namespace kit::sass
