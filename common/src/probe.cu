#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/gpu_gate.hpp"
#include "kit/poison.hpp"
#include "kit/probe.hpp"

namespace kit::probe {
namespace {

// Shared memory written, a barrier, then read by other threads: race-free and in bounds by
// construction, so any report on it means the sanitizer itself does not work here.
__global__ void selftest_kernel(float* out) {
  __shared__ float staged[64];
  staged[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = staged[63 - threadIdx.x];
}

// Launched after each trial when a probe runs several modes at once (kit::probe::main).
__global__ void trial_end() {}

int run_selftest() {
  DeviceBuffer<float> d_out(64);
  selftest_kernel<<<1, 64>>>(d_out.data());
  KIT_CHECK_LAUNCH();
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  return 0;
}

}  // namespace

int main(int argc, char** argv, const std::string& program, const std::vector<Mode>& modes) {
  std::vector<std::string> asked(argv + 1, argv + argc);
  const bool profiled = !asked.empty() && asked[0] == kProfiled;
  if (profiled) asked.erase(asked.begin());
  const bool together = !asked.empty() && asked[0] == sanitizer::kModesTogether;
  if (together) asked.erase(asked.begin());
  std::vector<const Mode*> chosen;
  for (const std::string& name : asked) {
    for (const Mode& m : modes) {
      if (m.name == name) chosen.push_back(&m);
    }
  }
  const bool selftest = asked.size() == 1 && asked[0] == "selftest";
  if (!selftest && (asked.empty() || chosen.size() != asked.size())) {
    std::string usage = "selftest";
    for (const Mode& m : modes) usage += "|" + m.name;
    std::fprintf(stderr, "usage: %s %s, or several of its modes in a row\n", program.c_str(),
                 usage.c_str());
    return 2;
  }
  std::string mode = selftest ? "selftest" : "";
  try {
    if (selftest || chosen.size() == 1) {
      if (!selftest) mode = chosen[0]->name;
      // Under Nsight Compute one mode, or the selftest that asks whether ncu can count here at
      // all, needs the GPU's profiling turn as several modes do: two processes profiled at once
      // on a GPU fail with "a driver resource was unavailable", which the selftest reported as
      // a machine that cannot count, skipping the test. The context comes first, as below; where
      // it cannot be made, the mode's own calls say why.
      std::optional<ExclusiveGpu> turn;
      if (profiled) {
        (void)cudaFree(nullptr);
        (void)cudaGetLastError();
        turn.emplace(GpuUse::profiling);
      }
      return selftest ? run_selftest() : chosen[0]->run();
    }
    if (together) {
      for (const Mode* m : chosen) {
        mode = m->name;
        if (const int code = m->run(); code != 0) return code;
        // What one mode leaves pending or unchecked is not the next one's: its own process would
        // not have seen it.
        (void)cudaDeviceSynchronize();
        (void)cudaGetLastError();
      }
      return 0;
    }
    // Several trials for one run of Nsight Compute (kit/locality.hpp): one ncu start instead of
    // one per trial, and one turn as the GPU's profiling process (taken once the context
    // exists) instead of one each. After each trial a kernel of the kit's marks where the next
    // begins, so that the profile can be told apart per trial (kit::profiler::Profile::trials).
    KIT_CUDA_CHECK(cudaFree(nullptr));
    const ExclusiveGpu profiling(GpuUse::profiling);
    for (const Mode* m : chosen) {
      mode = m->name;
      const int code = m->run();
      if (code != 0) return code;
      trial_end<<<1, 1>>>();
      KIT_CHECK_LAUNCH();
      KIT_CUDA_CHECK(cudaDeviceSynchronize());
    }
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s %s: %s\n", program.c_str(), mode.c_str(), error.what());
    return 1;
  }
}

int run_counted_matmul(const std::string& program, int width, int tile,
                       const std::function<void(const float*, const float*, float*)>& launch) {
  const std::size_t count = static_cast<std::size_t>(width) * width;
  std::vector<float> M(count), N(count);
  // Whole numbers, and neither matrix symmetric within a tile (N once was: i * 11 % 5 depends
  // on row + col alone when the width is 1 modulo 5), so that a tile loaded transposed gives a
  // wrong P here as in the correctness tests.
  for (int r = 0; r < width; ++r) {
    for (int c = 0; c < width; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * width + c;
      M[i] = static_cast<float>((r + 2 * c) % 7 - 3);
      N[i] = static_cast<float>((3 * r + c) % 5 - 2);
    }
  }
  DeviceBuffer<float> d_M(count), d_N(count), d_P(count);
  d_M.copy_from_host(M.data());
  d_N.copy_from_host(N.data());
  poison(d_P.data(), count);
  {
    // Under ncu the counted kernel is replayed at its launch: only that needs to be the GPU's
    // one profiling process (the gate reaches this process through ncu), not ncu's start, the
    // inputs or the check.
    const ExclusiveGpu profiling(GpuUse::profiling);
    launch(d_M.data(), d_N.data(), d_P.data());
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::vector<float> P(count);
  d_P.copy_to_host(P.data());
  for (int r = 0; r < width; ++r) {
    for (int c = 0; c < width; ++c) {
      // Whole numbers below 2^24 in magnitude: float sums them exactly, in any order.
      double want = 0.0;
      for (int k = 0; k < width; ++k) {
        want += static_cast<double>(M[static_cast<std::size_t>(r) * width + k]) *
                N[static_cast<std::size_t>(k) * width + c];
      }
      const float got = P[static_cast<std::size_t>(r) * width + c];
      if (is_poison(got) || static_cast<double>(got) != want) {
        std::printf("%s\n", kResultWrong.c_str());
        std::fflush(stdout);  // before the explanation on stderr, and before ncu's report
        std::fprintf(stderr, "%s: width %d, TILE_WIDTH %d: P[%d][%d] is %s, expected %g\n",
                     program.c_str(), width, tile, r, c,
                     is_poison(got) ? "never written" : std::to_string(got).c_str(), want);
        return kWrongResult;
      }
    }
  }
  std::printf("%s\n", kResultRight.c_str());
  std::fflush(stdout);
  return 0;
}

long long first_unwritten(const float* d_out, std::size_t count) {
  std::vector<float> got(count);
  KIT_CUDA_CHECK(cudaMemcpy(got.data(), d_out, count * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < count; ++i) {
    if (is_poison(got[i])) return static_cast<long long>(i);
  }
  return -1;
}

}  // namespace kit::probe
