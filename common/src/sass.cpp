// kit/sass.hpp's functions that parse cuobjdump's output. Compiled once here rather than in
// every test that includes the header: std::regex made each such test file take about a second
// longer to compile, in every build of the kit and of the grader's harness.
#include "kit/sass.hpp"

#include <glob.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace kit::sass {

std::string find_cuobjdump(const std::string& configured, const std::string& cuda_bin_dir,
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

Dump disassemble(const std::string& cuobjdump, const std::string& binary,
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

std::vector<Resources> resource_usage(const std::string& cuobjdump, const std::string& binary,
                                      const std::string& name_prefix, std::string& error,
                                      sanitizer::Reads reads) {
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
