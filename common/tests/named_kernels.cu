// Two builds of one small "lab" for the test of kit::remote::worker_functions_beyond_the_labs
// (test_remote.cpp): as a reference (its namespace renamed lab99_reference, as a lab's reference
// worker is) and as a student's that adds a kernel of another name and gives the lab's kernel
// other parameter types, which must not count as another kernel.
#include <cuda_runtime.h>

namespace lab99 {

#ifdef KIT_TEST_DECOY
__global__ void scale_kernel(const float* x, float* y, int n) {
#else
__global__ void scale_kernel(float* x, float* y, int n) {
#endif
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

#ifdef KIT_TEST_DECOY
__global__ void doubling_kernel(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + x[i];
}
#endif

}  // namespace lab99

int main() { return 0; }  // only read by cuobjdump, never run
