// Files the tests were built to use (a lab's answers sheet, its probe executable). The grader
// builds the tests once for a whole class and links each submission's own executables, so it
// points a test process at that submission's files through the environment variable of the
// same name (docs/design/engine.md, "The engine").
#pragma once

#include <cstdlib>
#include <string>

namespace kit {

inline std::string built_path(const char* variable, const char* built_in) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? std::string(value) : std::string(built_in);
}

}  // namespace kit

// KIT_BUILT_PATH(KIT_PROBE_PATH): $KIT_PROBE_PATH when set, else the path compiled in.
#define KIT_BUILT_PATH(name) ::kit::built_path(#name, name)
