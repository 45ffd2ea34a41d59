// The kit's own test worker: serves remote_test_calls.hpp for test_remote.cpp.
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../src/remote_wire.hpp"
#include "kit/device_memory.hpp"
#include "remote_test_calls.hpp"
#include "spin_kernel.cuh"

namespace {

int add(int a, int b) { return a + b; }

void scale(const float* x, float* y, int n, float k) {
  for (int i = 0; i < n; ++i) y[i] = k * x[i];
}

std::string describe(remote_test::Shape shape) {
  return shape.label + ":" + std::to_string(shape.rows) + "x" + std::to_string(shape.cols);
}

void throw_kind(std::string kind) {
  if (kind == "invalid_argument") throw std::invalid_argument("width must be at least 1");
  if (kind == "out_of_range") throw std::out_of_range("index 9 is out of range");
  throw std::runtime_error("something else went wrong");
}

std::string get(std::string variable) {
  const char* value = std::getenv(variable.c_str());
  return value != nullptr ? value : "";
}

std::uint64_t address(const float* d) { return reinterpret_cast<std::uint64_t>(d); }

std::uint64_t allocations_made() { return kit::device_memory_use().made; }

std::uint64_t allocations_held() { return kit::device_memory_use().allocations; }

void free_it(const float* d) {
  if (cudaFree(const_cast<float*>(d)) != cudaSuccess) {
    throw std::runtime_error("test::free_it: cudaFree failed");
  }
}

void fill(float* d, int n, float value) {
  const std::vector<float> values(static_cast<std::size_t>(n), value);
  if (cudaMemcpy(d, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice) !=
      cudaSuccess) {
    throw std::runtime_error("test::fill: the copy failed");
  }
}

float element_at(const float* d, int i) {
  float value = 0;
  if (cudaMemcpy(&value, d + i, sizeof value, cudaMemcpyDeviceToHost) != cudaSuccess) {
    throw std::runtime_error("test::element_at: the copy failed");
  }
  return value;
}

int ask(const std::function<int(int, int)>& f, int x) { return f(x, 2) + f(x, 3); }

__global__ void negate_kernel(float* d, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) d[i] = -d[i];
}

void negate(float* d, int n) {
  if (n <= 0) return;
  negate_kernel<<<(n + 255) / 256, 256>>>(d, n);
  if (cudaGetLastError() != cudaSuccess) throw std::runtime_error("test::negate: launch failed");
}

__global__ void attribute_kernel() {}

int set_attribute(int bytes) {
  return static_cast<int>(
      cudaFuncSetAttribute(attribute_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

int last_error() { return static_cast<int>(cudaGetLastError()); }

void spin_then_throw(int milliseconds) {
  spin<<<1, 1>>>(static_cast<unsigned long long>(milliseconds) * 1000000ULL);
  if (cudaGetLastError() != cudaSuccess) throw std::logic_error("test::spin_then_throw: no launch");
  throw std::runtime_error("test::spin_then_throw: thrown while the kernel runs");
}

void hog(int mib, int seconds) {
  void* kept = nullptr;
  if (cudaMallocAsync(&kept, static_cast<std::size_t>(mib) << 20, nullptr) != cudaSuccess ||
      cudaStreamSynchronize(nullptr) != cudaSuccess) {
    throw std::runtime_error("test::hog: no memory");
  }
  sleep(static_cast<unsigned>(seconds));
}

__global__ void stale_shared_kernel(float* out, int n) {
  __shared__ float never_stored[1024];
  if (static_cast<int>(threadIdx.x) < n) out[threadIdx.x] = never_stored[threadIdx.x];
}

// Every SM's shared memory set to value, by the worker's own fill.
void fill_shared(float value) {
  kit::remote::fill_shared_memory(value);
  if (cudaDeviceSynchronize() != cudaSuccess) throw std::runtime_error("test::fill_shared failed");
}

void stale_shared(float* values, int n) {
  float* d = nullptr;
  if (n < 1 || n > 1024 || cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) {
    throw std::runtime_error("test::stale_shared: bad n or no memory");
  }
  stale_shared_kernel<<<1, 1024>>>(d, n);
  const bool ok = cudaMemcpy(values, d, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(d);
  if (!ok) throw std::runtime_error("test::stale_shared: the kernel failed");
}

// 64 KiB of local memory a thread: launched with many threads, the driver reserves local memory
// for every thread that can be resident, and the context keeps it after the kernel.
__global__ void local_hog_kernel(int* out, int n) {
  volatile int big[16384];
  for (int i = 0; i < 16384; ++i) big[i] = i * n;
  out[threadIdx.x] = big[(threadIdx.x * 7) % 16384];
}

void local_hog(int seconds) {
  int* out = nullptr;
  cudaDeviceProp props{};
  if (cudaGetDeviceProperties(&props, 0) != cudaSuccess ||
      cudaMalloc(&out, 1024 * sizeof(int)) != cudaSuccess) {
    throw std::runtime_error("test::local_hog: no device");
  }
  local_hog_kernel<<<props.multiProcessorCount * 2, 1024>>>(out, seconds);
  if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    throw std::runtime_error("test::local_hog: the launch failed");
  }
  sleep(static_cast<unsigned>(seconds));
}

void crash() { std::abort(); }

void hang() {
  for (;;) pause();
}

void forge() {
  kit::remote::Encoder e;
  e.put<std::uint8_t>(0);      // ok
  e.put<std::uint64_t>(1024);  // an array the call never had
  kit::remote::wire::send_frame(kit::remote::wire::kWorkerFd, e.buffer());
}

long pid() { return static_cast<long>(getpid()); }

[[maybe_unused]] const bool served[] = {
    kit::remote::serve<remote_test::Add>(&add),
    kit::remote::serve<remote_test::Scale>(&scale),
    kit::remote::serve<remote_test::Describe>(&describe),
    kit::remote::serve<remote_test::StaleShared>(&stale_shared),
    kit::remote::serve<remote_test::FillShared>(&fill_shared),
    kit::remote::serve<remote_test::Throw>(&throw_kind),
    kit::remote::serve<remote_test::Getenv>(&get),
    kit::remote::serve<remote_test::Address>(&address),
    kit::remote::serve<remote_test::AllocationsMade>(&allocations_made),
    kit::remote::serve<remote_test::AllocationsHeld>(&allocations_held),
    kit::remote::serve<remote_test::FreeIt>(&free_it),
    kit::remote::serve<remote_test::Fill>(&fill),
    kit::remote::serve<remote_test::ElementAt>(&element_at),
    kit::remote::serve<remote_test::Negate>(&negate),
    kit::remote::serve<remote_test::Ask>(&ask),
    kit::remote::serve<remote_test::Hog>(&hog),
    kit::remote::serve<remote_test::LocalHog>(&local_hog),
    kit::remote::serve<remote_test::Crash>(&crash),
    kit::remote::serve<remote_test::Hang>(&hang),
    kit::remote::serve<remote_test::Forge>(&forge),
    kit::remote::serve<remote_test::Pid>(&pid),
    kit::remote::serve<remote_test::SetAttribute>(&set_attribute),
    kit::remote::serve<remote_test::LastError>(&last_error),
    kit::remote::serve<remote_test::SpinThenThrow>(&spin_then_throw),
};

}  // namespace
