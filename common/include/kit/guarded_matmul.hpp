// A matrix product run inside guard bands, for the safety tests of the tiled labs: M, N and P
// each sit between bands of NaN sentinels (kit::GuardedBuffer), so that a stray read shows as a
// NaN in P and a stray write as a changed sentinel around P.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "kit/cuda_check.hpp"
#include "kit/matmul_harness.hpp"
#include "kit/poison.hpp"
#include "kit/remote.hpp"

namespace kit {

struct GuardedMatmulRun {
  std::vector<float> P;
  std::string P_damage;  // empty when no sentinel around P changed
};

// One launch on the problem's inputs with P poisoned; the bands are wide enough for anything a
// missing guard can reach (up to 32 rows past the end of a matrix).
inline GuardedMatmulRun run_guarded_matmul(const MatmulProblem& p, const MatmulLaunch& launch) {
  const std::size_t guard = 32 * (static_cast<std::size_t>(std::max(p.inner, p.cols)) + 2);
  if (launch.target<WorkerLaunch>() != nullptr && remote::calls_are_remote()) {
    // The worker's call on staged host arrays, bands included: the judge's device is left alone
    // (a judge without a context, docs/design/engine.md).
    HostGuarded M(p.M.size(), guard), N(p.N.size(), guard);
    HostGuarded P(static_cast<std::size_t>(p.rows) * p.cols, guard);
    M.copy_from_host(p.M.data());
    N.copy_from_host(p.N.data());
    P.poison_data();
    {
      const remote::StagedArrays staged({{M.storage(), M.storage_bytes()},
                                         {N.storage(), N.storage_bytes()},
                                         {P.storage(), P.storage_bytes()}});
      launch(M.data(), N.data(), P.data());
    }
    return GuardedMatmulRun{P.values(), P.damaged_guards()};
  }
  GuardedBuffer d_M(p.M.size(), guard), d_N(p.N.size(), guard);
  GuardedBuffer d_P(static_cast<std::size_t>(p.rows) * p.cols, guard);
  d_M.copy_from_host(p.M.data());
  d_N.copy_from_host(p.N.data());
  d_P.poison_data();
  launch(d_M.data(), d_N.data(), d_P.data());
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  GuardedMatmulRun r;
  r.P.resize(d_P.size());
  d_P.copy_to_host(r.P.data());
  r.P_damage = d_P.damaged_guards();
  return r;
}

// How many elements of P are NaN or infinite although no input is (poison excepted: an
// unwritten element is the correctness tests' business).
inline long long not_finite(const std::vector<float>& P) {
  return std::count_if(P.begin(), P.end(),
                       [](float v) { return !std::isfinite(v) && !is_poison(v); });
}

}  // namespace kit
