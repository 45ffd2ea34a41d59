#include "kit/process_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace kit {
namespace {

std::mutex logging;  // tool runs start from several threads at once (kit::sanitizer::run_each)
std::string& current_test() {
  static std::string name;
  return name;
}

}  // namespace

void set_logged_test(const std::string& name) {
  const std::lock_guard<std::mutex> lock(logging);
  current_test() = name;
}

bool process_log_on() {
  const char* path = std::getenv("KIT_PROCESS_LOG");
  return path != nullptr && *path != '\0';
}

std::string logged_test() {
  const std::lock_guard<std::mutex> lock(logging);
  return current_test();
}

void log_process_start(const char* kind) { log_process_event(kind, logged_test()); }

void log_process_event(const char* kind, const std::string& test) {
  const char* path = std::getenv("KIT_PROCESS_LOG");
  if (path == nullptr || *path == '\0') return;
  const std::lock_guard<std::mutex> lock(logging);
  std::string line = std::string(kind) + "\t" + test;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';  // one line a start, whatever the name
  }
  line += "\n";
  const int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;                            // a count lost, never a test
  (void)!::write(fd, line.data(), line.size());  // one write: whole lines with O_APPEND
  ::close(fd);
}

}  // namespace kit
