#include "kit/args.hpp"

#include <stdexcept>
#include <string>

namespace kit {

void require_positive(const char* where, const char* name, long long value) {
  if (value >= 1) return;
  throw std::invalid_argument(std::string(where) + ": " + name + " must be at least 1, got " +
                              std::to_string(value));
}

void require_not_null(const char* where, const char* name, const void* ptr) {
  if (ptr != nullptr) return;
  throw std::invalid_argument(std::string(where) + ": " + name +
                              " is a null pointer; pass a buffer that holds the matrix");
}

void require_in_range(const char* where, const char* name, long long value, long long lo,
                      long long hi) {
  if (value >= lo && value <= hi) return;
  throw std::invalid_argument(std::string(where) + ": " + name + " must be between " +
                              std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
                              std::to_string(value));
}

}  // namespace kit
