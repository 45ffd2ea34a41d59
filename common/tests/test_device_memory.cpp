// kit/device_memory.hpp: every cudaMalloc and cudaFree of the process is counted, and none may
// take the process past its limit; and what run_matmul keeps of it between calls.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cstddef>
#include <cstdlib>
#include <vector>

#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/device_memory.hpp"
#include "kit/matmul_harness.hpp"
#include "kit/poison.hpp"
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

TEST_CASE("run_matmul hands a shape it ran before the same buffers and poisons their output again",
          "[common][gpu]") {
  KIT_REQUIRE_GPU();
  const kit::MatmulProblem problem = kit::make_matmul_problem(5, 7, 3, 1);
  const kit::MatmulProblem other = kit::make_matmul_problem(6, 7, 3, 1);
  std::vector<const float*> seen;
  const auto record = [&seen](const float* d_M, const float* d_N, float* d_P) {
    seen.insert(seen.end(), {d_M, d_N, d_P});
  };
  const kit::MatmulLaunch writes_zeros = [&](const float* d_M, const float* d_N, float* d_P) {
    record(d_M, d_N, d_P);
    KIT_CUDA_CHECK(cudaMemset(d_P, 0, 5 * 3 * sizeof(float)));
  };
  const kit::MatmulLaunch writes_nothing = [&](const float* d_M, const float* d_N, float* d_P) {
    record(d_M, d_N, d_P);
  };
  const std::size_t before = kit::device_memory_use().allocations;
  CHECK(kit::run_matmul(problem, writes_zeros) == std::vector<float>(5 * 3, 0.0f));
  // Its three buffers are still held after it returned (a freed buffer's address can come back
  // for the next cudaMalloc, so equal pointers alone would not show that they were kept).
  CHECK(kit::device_memory_use().allocations == before + 3);
  // Nothing a call left in P reaches the next call of the shape.
  const std::vector<float> unwritten = kit::run_matmul(problem, writes_nothing);
  CHECK(std::all_of(unwritten.begin(), unwritten.end(), kit::is_poison));
  CHECK(kit::device_memory_use().allocations == before + 3);
  (void)kit::run_matmul(other, writes_nothing);
  CHECK(kit::device_memory_use().allocations == before + 6);  // another shape: buffers of its own
  REQUIRE(seen.size() == 9);
  CHECK(std::equal(seen.begin(), seen.begin() + 3, seen.begin() + 3));
}

TEST_CASE("a device memory limit set while a process runs holds from its next allocation on",
          "[common]") {
  // The kit's own tests set KIT_DEVICE_MEMORY_LIMIT_MIB case by case in one process.
  REQUIRE(setenv("KIT_DEVICE_MEMORY_LIMIT_MIB", "64", 1) == 0);
  CHECK(kit::device_memory_limit() == (std::size_t(64) << 20));
  void* pointer = &pointer;
  CHECK(cudaMalloc(&pointer, std::size_t(65) << 20) == cudaErrorMemoryAllocation);
  CHECK(pointer == nullptr);
  REQUIRE(unsetenv("KIT_DEVICE_MEMORY_LIMIT_MIB") == 0);
  CHECK(kit::device_memory_limit() == (std::size_t(2048) << 20));
}
