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
#include <vector>

#include "kit/remote.hpp"

extern "C" cudaError_t __real_cudaMalloc(void** pointer, size_t bytes);
extern "C" cudaError_t __real_cudaFree(void* pointer);

namespace kit {
namespace {

struct Allocation {
  std::size_t bytes;
  std::uint64_t serial;   // this process's count of allocations when it was made, from 1
  bool exported = false;  // handed to a worker as an IPC handle
};

struct Ledger {
  std::mutex mutex;
  std::unordered_map<void*, Allocation> sizes;
  DeviceMemoryUse use;
  std::vector<void*> held;  // freed by the program, kept until the worker ends (cudaFree below)
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
  // Read at every call, not once a process: the grader sets it before a process starts, but the
  // kit's own tests set it case by case, and a value kept from a case before was the one used.
  std::size_t mib = 2048;
  if (const char* text = std::getenv("KIT_DEVICE_MEMORY_LIMIT_MIB")) {
    char* end = nullptr;
    const unsigned long long given = std::strtoull(text, &end, 10);
    if (end != text && *end == '\0' && given > 0) mib = static_cast<std::size_t>(given);
  }
  return mib << 20;
}

}  // namespace kit

namespace {
constexpr std::size_t kIpcBlock = std::size_t(2) << 20;
}  // namespace

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
  // A judge's buffers cross to its worker as CUDA IPC handles (kit/remote.hpp): whole 2 MiB
  // blocks of their own, so that no two buffers a test hands over share a block. A precaution,
  // like holding freed buffers back (cudaFree below): the results "never written" seen on an
  // H200 came from the judge's poison still queued when the worker ran, which the judge now
  // waits for before each call.
  const std::size_t asked = bytes;
  if (kit::remote::calls_are_remote()) bytes = (bytes + kIpcBlock - 1) / kIpcBlock * kIpcBlock;
  const cudaError_t code = __real_cudaMalloc(pointer, bytes);
  if (code == cudaSuccess && pointer != nullptr && *pointer != nullptr) {
    l.sizes[*pointer] = {asked, ++l.use.made};
    l.use.bytes += asked;
    ++l.use.allocations;
  }
  return code;
}

extern "C" cudaError_t __wrap_cudaFree(void* pointer) {
  kit::Ledger& l = kit::ledger();
  std::unique_lock<std::mutex> lock(l.mutex);
  const auto found = pointer != nullptr ? l.sizes.find(pointer) : l.sizes.end();
  if (found != l.sizes.end()) {
    l.use.bytes -= found->second.bytes;
    --l.use.allocations;
    const bool shared = found->second.exported;
    l.sizes.erase(found);
    if (shared) {
      // A judge's buffer that a worker may still map (kit/remote.hpp): freed only once no
      // worker runs (release_held_device_memory), so that its address cannot come back for a
      // new allocation while a worker holds a mapping of the old one.
      l.held.push_back(pointer);
      return cudaSuccess;
    }
  }
  lock.unlock();
  return __real_cudaFree(pointer);
}

namespace kit {

void mark_exported(const void* base) {
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mutex);
  const auto found = l.sizes.find(const_cast<void*>(base));
  if (found != l.sizes.end()) found->second.exported = true;
}

void release_held_device_memory() {
  Ledger& l = ledger();
  std::vector<void*> held;
  {
    std::lock_guard<std::mutex> lock(l.mutex);
    held.swap(l.held);
  }
  for (void* pointer : held) (void)__real_cudaFree(pointer);
}

}  // namespace kit
