// Shared memory filled with kStaleShared before each call of the student's code that may launch a
// kernel: a kernel that reads a slot of shared memory no thread of its block stored this launch (a
// tile slot past the edge left as it was, a strip tile never loaded) then reads that value, not
// whatever an earlier kernel left there, which may be 0 and pass for a product or a term that is
// missing. The diagnoses read the values (kit/compare.hpp, kit/term_map.hpp): a stale 0 made them
// name causes the kernel did not have (seen on an H200). Not NaN: the guard-band tests take a NaN
// in P for a read past the end of an input.
#include <cuda_runtime.h>

#include "kit/remote.hpp"

namespace kit::remote {
namespace {

__global__ void fill_kernel(float value, int floats) {
  extern __shared__ float slots[];
  for (int i = threadIdx.x; i < floats; i += blockDim.x) slots[i] = value;
}

}  // namespace

void poison_shared_memory() { fill_shared_memory(kStaleShared); }

void fill_shared_memory(float value) {
  static int bytes = -1, blocks = 0;
  if (bytes < 0) {
    int device = 0, optin = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaFuncSetAttribute(fill_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin) !=
            cudaSuccess) {
      (void)cudaGetLastError();
      bytes = 0;  // not here: the calls run as they would without it
      return;
    }
    bytes = optin, blocks = 2 * sms;  // one block fills an SM's shared memory; two per SM
  }
  if (bytes == 0) return;
  fill_kernel<<<blocks, 1024, bytes>>>(value, bytes / static_cast<int>(sizeof(float)));
  // A failure here is the kit's, not the student's: it must not be reported as theirs.
  (void)cudaGetLastError();
}

}  // namespace kit::remote
