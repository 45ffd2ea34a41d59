#include "kit/cublas_matmul.hpp"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "kit/cuda_check.hpp"

namespace kit {
namespace {

// cuBLAS is opened here, on first use, instead of being linked: only a student kit's speed
// test and the staff benchmark use it, and loading it (with cuBLASLt, over 500 MB of library)
// at the start of every test process made each of them slower on a busy grading machine.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
};

template <typename F>
void find(void* library, const char* name, F& function) {
  function = reinterpret_cast<F>(dlsym(library, name));
  if (function == nullptr) {
    throw std::runtime_error(std::string("kit problem: cuBLAS has no ") + name +
                             "; the kit expects cuBLAS " + std::to_string(CUBLAS_VER_MAJOR));
  }
}

const Cublas& cublas() {
  static const Cublas loaded = [] {
    // The library the kit was built against (KIT_CUBLAS_LIBRARY, from CMake), else the one the
    // dynamic loader finds by its soname.
    const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* library = dlopen(KIT_CUBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      throw std::runtime_error("kit problem: cuBLAS could not be loaded from " KIT_CUBLAS_LIBRARY
                               " nor as " +
                               soname + " (" + dlerror() +
                               "); the speed test of a student kit times against it, so "
                               "install the CUDA toolkit's cuBLAS or add its folder to "
                               "LD_LIBRARY_PATH");
    }
    Cublas c;
    find(library, "cublasCreate_v2", c.create);
    find(library, "cublasDestroy_v2", c.destroy);
    find(library, "cublasSetMathMode", c.set_math_mode);
    find(library, "cublasSgemm_v2", c.sgemm);
    return c;  // the library stays open for the life of the process
  }();
  return loaded;
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: cuBLAS status " +
                             std::to_string(static_cast<int>(status)));
  }
}

}  // namespace

CublasMatmul::CublasMatmul() {
  cublasHandle_t handle = nullptr;
  check_cublas(cublas().create(&handle), "cublasCreate");
  handle_ = handle;
  // Plain FP32 so the yardstick does the same arithmetic as the labs' kernels.
  check_cublas(cublas().set_math_mode(handle, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
}

CublasMatmul::~CublasMatmul() { cublas().destroy(static_cast<cublasHandle_t>(handle_)); }

void CublasMatmul::operator()(const float* d_M, const float* d_N, float* d_P, int width) {
  const float one = 1.0f, zero = 0.0f;
  // cuBLAS is column-major: a row-major P = M * N is the column-major P^T = N^T * M^T.
  check_cublas(cublas().sgemm(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_N, CUBLAS_OP_N, width,
                              width, width, &one, d_N, width, d_M, width, &zero, d_P, width),
               "cublasSgemm");
  KIT_CHECK_LAUNCH();
}

}  // namespace kit
