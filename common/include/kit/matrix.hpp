// Host-side matrices for tests: seeded random inputs and the double-precision reference.
#pragma once

#include <cstdint>
#include <vector>

namespace kit {

// rows x cols values drawn uniformly from [-1, 1), row-major, the same for the same seed on
// every machine (the generator is specified here, not left to the standard library).
std::vector<float> random_matrix(int rows, int cols, std::uint64_t seed);

// The host reference for P = M * N with M rows x inner and N inner x cols, row-major.
// value[i] is the exact-as-double dot product; magnitude[i] is the sum of |M_ik * N_kj|,
// which bounds the rounding error a float dot product can make and so sets the tolerance.
struct MatmulReference {
  int rows = 0;
  int cols = 0;
  std::vector<double> value;
  std::vector<double> magnitude;
};
MatmulReference reference_matmul(const std::vector<float>& M, const std::vector<float>& N, int rows,
                                 int inner, int cols);
// The host loop of reference_matmul (with `magnitude`) and of reference_values (without): P = M * N
// into `value` (and `magnitude`), both rows x cols and zeroed, its rows split between `threads`
// threads, each element summed by one thread in the order of k, so that the bits are the same for
// any split. Its callers choose the threads (up to four from 2^24 terms, no more than the process's
// CPUs); the tests give it others.
void accumulate_product(const std::vector<float>& M, const std::vector<float>& N, int rows,
                        int inner, int cols, double* value, double* magnitude, int threads);

// reference_matmul's values alone, to the bit, without the magnitudes: the host loop of
// product_values.
std::vector<double> reference_values(const std::vector<float>& M, const std::vector<float>& N,
                                     int rows, int inner, int cols);

// The same reference computed on the GPU by a kit kernel (common/src/reference_device.cu), then
// checked on the host with verify_reference. Needs a usable GPU; throws kit::CudaError otherwise.
MatmulReference reference_matmul_on_device(const std::vector<float>& M, const std::vector<float>& N,
                                           int rows, int inner, int cols);

// Checks a reference against M and N in O(rows * cols + inner * cols) (Freivalds' method with
// a fixed positive vector, so the magnitudes are checked too); throws std::logic_error when a
// value or magnitude is off by more than rounding.
void verify_reference(const std::vector<float>& M, const std::vector<float>& N,
                      const MatmulReference& ref, int inner);

// The reference for a product: the host loop for a small one or where no GPU is usable, else
// reference_matmul_on_device (common/src/reference_device.cu says where the line is and why).
MatmulReference matmul_reference(const std::vector<float>& M, const std::vector<float>& N, int rows,
                                 int inner, int cols);

// The exact-as-double values of M * N, as matmul_reference computes them: what
// the failure diagnoses compare a wrong result against, so that explaining a mistake does not
// cost O(rows * inner * cols) of one CPU core (common/src/reference_device.cu).
std::vector<double> product_values(const std::vector<float>& M, const std::vector<float>& N,
                                   int rows, int inner, int cols);

// Throws std::invalid_argument unless M is rows x inner and N is inner x cols.
void require_matmul_shape(const std::vector<float>& M, const std::vector<float>& N, int rows,
                          int inner, int cols);

}  // namespace kit
