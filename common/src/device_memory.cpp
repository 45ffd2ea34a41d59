// The counting side of kit/device_memory.hpp: __wrap_cudaMalloc and __wrap_cudaFree, which the
// linker puts in place of every call of cudaMalloc and cudaFree (--wrap), and __real_*, which
// it binds to CUDA's own.
#include "kit/device_memory.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

extern "C" cudaError_t __real_cudaMalloc(void** pointer, size_t bytes);
extern "C" cudaError_t __real_cudaFree(void* pointer);

namespace kit {
namespace {

struct Allocation {
  std::size_t bytes;
  std::uint64_t serial;  // this process's count of allocations when it was made, from 1
};

struct Ledger {
  std::mutex mutex;
  std::unordered_map<void*, Allocation> sizes;
  DeviceMemoryUse use;
  std::uint64_t made = 0;
};

// Never destroyed: a buffer's destructor may free after main has returned.
Ledger& ledger() {
  static Ledger* const the_ledger = new Ledger;
  return *the_ledger;
}

}  // namespace

DeviceMemoryUse device_memory_use() {
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mutex);
  return l.use;
}

std::uint64_t allocation_serial(const void* base) {
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mutex);
  const auto found = l.sizes.find(const_cast<void*>(base));
  return found == l.sizes.end() ? 0 : found->second.serial;
}

std::size_t device_memory_limit() {
  static const std::size_t limit = [] {
    std::size_t mib = 2048;
    if (const char* text = std::getenv("KIT_DEVICE_MEMORY_LIMIT_MIB")) {
      char* end = nullptr;
      const unsigned long long given = std::strtoull(text, &end, 10);
      if (end != text && *end == '\0' && given > 0) mib = static_cast<std::size_t>(given);
    }
    return mib << 20;
  }();
  return limit;
}

}  // namespace kit

extern "C" cudaError_t __wrap_cudaMalloc(void** pointer, size_t bytes) {
  kit::Ledger& l = kit::ledger();
  const std::size_t limit = kit::device_memory_limit();
  std::lock_guard<std::mutex> lock(l.mutex);
  if (pointer != nullptr && (bytes > limit || l.use.bytes > limit - bytes)) {
    if (l.use.refused++ == 0) {
      std::fprintf(stderr,
                   "kit: a cudaMalloc of %zu MiB was refused: this test process holds %zu MiB "
                   "and may hold at most %zu MiB of device memory (the GPU is shared with "
                   "other tests)\n",
                   bytes >> 20, l.use.bytes >> 20, limit >> 20);
    }
    *pointer = nullptr;
    return cudaErrorMemoryAllocation;
  }
  const cudaError_t code = __real_cudaMalloc(pointer, bytes);
  if (code == cudaSuccess && pointer != nullptr && *pointer != nullptr) {
    l.sizes[*pointer] = {bytes, ++l.made};
    l.use.bytes += bytes;
    ++l.use.allocations;
  }
  return code;
}

extern "C" cudaError_t __wrap_cudaFree(void* pointer) {
  const cudaError_t code = __real_cudaFree(pointer);
  if (code == cudaSuccess && pointer != nullptr) {
    kit::Ledger& l = kit::ledger();
    std::lock_guard<std::mutex> lock(l.mutex);
    const auto found = l.sizes.find(pointer);
    if (found != l.sizes.end()) {
      l.use.bytes -= found->second.bytes;
      --l.use.allocations;
      l.sizes.erase(found);
    }
  }
  return code;
}
