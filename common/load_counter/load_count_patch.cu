// The device half of the load counter (load_counter.cpp): the Compute Sanitizer API calls this
// before every global memory access of a patched kernel. It counts the warp-level global load
// instructions executed, what Nsight Compute's smsp__inst_executed_op_global_ld.sum counts
// (kit::profiler::kGlobalLoads), and the threads' loads beside it.
#include <sanitizer_patching.h>

#include <cstdint>

#include "load_counts.h"

extern "C" __device__ __noinline__ SanitizerPatchResult
kit_count_global_access(void* userdata, uint64_t pc, void* /*ptr*/, uint32_t /*size*/,
                        uint32_t flags, const void* /*data*/) {
  // Loads only: not stores, atomics (read and written) or prefetches.
  const bool load =
      (flags & SANITIZER_MEMORY_DEVICE_FLAG_READ) != 0 &&
      (flags & (SANITIZER_MEMORY_DEVICE_FLAG_WRITE | SANITIZER_MEMORY_DEVICE_FLAG_ATOMSYS |
                SANITIZER_MEMORY_DEVICE_FLAG_PREFETCH)) == 0;
  if (!load) return SANITIZER_PATCH_SUCCESS;
  // A launch the host half set no counts up for (one from a CUDA graph or from the device): its
  // loads would go uncounted, so the kernel stops instead, and the judge counts with Nsight
  // Compute (a run that did not end cleanly is never read).
  if (userdata == nullptr) __trap();
  auto* counts = static_cast<kit_load_counter::Counts*>(userdata);
  // The threads of a warp here at once for this instruction are one instruction, one request:
  // one of them (the lowest lane) counts it.
  const unsigned here = __match_any_sync(__activemask(), pc);
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  if (lane == static_cast<unsigned>(__ffs(here) - 1)) {
    atomicAdd(&counts->warp_loads, 1ull);
    atomicAdd(&counts->thread_loads, static_cast<unsigned long long>(__popc(here)));
  }
  return SANITIZER_PATCH_SUCCESS;
}
