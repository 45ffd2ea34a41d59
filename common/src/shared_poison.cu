// Shared memory filled with kStaleShared right before each kernel the student's code launches: a
// kernel that reads a slot of shared memory no thread of its block stored this launch (a tile slot
// past the edge left as it was, a strip tile never loaded) then reads that value, not whatever an
// earlier kernel left there, which may be 0 and pass for a product or a term that is missing. The
// diagnoses read the values (kit/compare.hpp, kit/term_map.hpp): a stale 0 made them name causes
// the kernel did not have (seen on an H200). Not NaN: the guard-band tests take a NaN in P for a
// read past the end of an input.
//
// Why before each launch, in the launch's own stream, and not once before each call: while a class
// is graded, other processes' kernels run on the same SMs, and a fill made before the call's
// cudaMalloc and copies was gone by the time its kernel ran (bench/RESULTS.md, "Shared memory and
// barriers"). The worker's link wraps the runtime's launch entry points
// (common/CMakeLists.txt), which both <<<...>>> and cudaLaunchKernel reach.
#include <cuda_runtime.h>

#include "kit/remote.hpp"

namespace kit::remote {
namespace {

__global__ void fill_kernel(float value, int floats) {
  extern __shared__ float slots[];
  for (int i = threadIdx.x; i < floats; i += blockDim.x) slots[i] = value;
}

bool fill_on = false;
thread_local bool filling = false;  // the fill's own launch goes through the wrappers too

void fill_in(float value, cudaStream_t stream) {
  static int bytes = -1, blocks = 0;
  if (bytes < 0) {
    const KitsOwnSettings own;  // the fill kernel's attribute is no setting of the student's
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
  filling = true;
  fill_kernel<<<blocks, 1024, bytes, stream>>>(value, bytes / static_cast<int>(sizeof(float)));
  filling = false;
}

// Before one of the student's launches: the fill, unless it is off, or this is the fill's own
// launch, or an error is already pending, which the student's code must still find as it was (a
// failed fill's error is taken back, and only then is there none of theirs to lose).
void fill_before(cudaStream_t stream) {
  if (!fill_on || filling || cudaPeekAtLastError() != cudaSuccess) return;
  fill_in(kStaleShared, stream);
  (void)cudaGetLastError();  // a failure here is the kit's, not the student's
}

}  // namespace

void fill_before_launches(bool on) { fill_on = on; }

void fill_shared_memory(float value) {
  fill_in(value, nullptr);
  (void)cudaGetLastError();
}

}  // namespace kit::remote

// The wrapped launch entry points (--wrap, common/CMakeLists.txt): <<<...>>> reaches
// __cudaLaunchKernel (or its _ptsz twin under per-thread default streams); cudaLaunchKernel is
// the runtime's call for a launch written out by hand.
extern "C" {
cudaError_t __real___cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t __real___cudaLaunchKernel_ptsz(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t __real_cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t __real_cudaLaunchKernel_ptsz(const void*, dim3, dim3, void**, size_t, cudaStream_t);

cudaError_t __wrap___cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                      size_t shared, cudaStream_t stream) {
  kit::remote::fill_before(stream);
  return __real___cudaLaunchKernel(kernel, grid, block, args, shared, stream);
}

cudaError_t __wrap___cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                           size_t shared, cudaStream_t stream) {
  kit::remote::fill_before(stream == nullptr ? cudaStreamPerThread : stream);
  return __real___cudaLaunchKernel_ptsz(kernel, grid, block, args, shared, stream);
}

cudaError_t __wrap_cudaLaunchKernel(const void* kernel, dim3 grid, dim3 block, void** args,
                                    size_t shared, cudaStream_t stream) {
  kit::remote::fill_before(stream);
  return __real_cudaLaunchKernel(kernel, grid, block, args, shared, stream);
}

cudaError_t __wrap_cudaLaunchKernel_ptsz(const void* kernel, dim3 grid, dim3 block, void** args,
                                         size_t shared, cudaStream_t stream) {
  kit::remote::fill_before(stream == nullptr ? cudaStreamPerThread : stream);
  return __real_cudaLaunchKernel_ptsz(kernel, grid, block, args, shared, stream);
}
}
