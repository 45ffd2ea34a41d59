// kit/device_memory.hpp: every cudaMalloc and cudaFree of the process is counted, and none may
// take the process past its limit.
#include <cuda_runtime_api.h>

#include <catch2/catch_test_macros.hpp>
#include <cstddef>

#include "kit/device_buffer.hpp"
#include "kit/device_memory.hpp"
#include "kit/testing.hpp"

TEST_CASE("a cudaMalloc past the process's device memory limit is refused before CUDA sees it",
          "[common]") {
  // No GPU needed: the count refuses the call itself.
  const kit::DeviceMemoryUse before = kit::device_memory_use();
  void* pointer = &pointer;
  const cudaError_t code = cudaMalloc(&pointer, kit::device_memory_limit() + 1);
  const kit::DeviceMemoryUse after = kit::device_memory_use();
  CHECK(code == cudaErrorMemoryAllocation);
  CHECK(pointer == nullptr);
  CHECK(after.refused == before.refused + 1);
  CHECK(after.bytes == before.bytes);
  CHECK(kit::device_memory_limit() == (std::size_t(2048) << 20));
}

TEST_CASE("device memory is counted per allocation until it is freed", "[common][gpu]") {
  KIT_REQUIRE_GPU();
  const kit::DeviceMemoryUse start = kit::device_memory_use();
  void* kept = nullptr;
  REQUIRE(cudaMalloc(&kept, 3 << 20) == cudaSuccess);
  {
    kit::DeviceBuffer<float> scoped(1 << 18);  // 1 MiB, freed at the end of the scope
    const kit::DeviceMemoryUse inside = kit::device_memory_use();
    CHECK(inside.bytes - start.bytes == (4u << 20));
    CHECK(inside.allocations - start.allocations == 2);
  }
  CHECK(kit::device_memory_use().bytes - start.bytes == (3u << 20));
  REQUIRE(cudaFree(kept) == cudaSuccess);
  CHECK(kit::device_memory_use().bytes == start.bytes);
  CHECK(kit::device_memory_use().allocations == start.allocations);
}
