// The kit's benchmark: the reference kernels of labs 02 to 05 and cuBLAS on square matrices,
// each checked against cuBLAS before it is timed (median of event-timed runs after warm-up).
// After each width it prints how long lab 05's dynamic-shared-memory kernel, and a plain kernel
// whose tile width is a run-time value, take relative to lab 04's static-tile kernel at the same
// tile (the goal: at most 1 / 0.9 of lab 05's reference at tile 16).
//
//   matmul_bench [--widths 1024,2048,4096,4000] [--csv FILE] [--warmup N] [--repeats N]
//   matmul_bench --profile KERNEL --width W     one launch of one kernel, for ncu
//
// KERNEL is one of the names the table prints (naive16, tiled32, cublas, ...).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kit/cublas_matmul.hpp"
#include "kit/cuda_check.hpp"
#include "kit/device_buffer.hpp"
#include "kit/gpu.hpp"
#include "kit/matrix.hpp"
#include "kit/poison.hpp"
#include "kit/timer.hpp"

// The reference libraries are the labs' reference files compiled with labNN renamed
// labNN_reference (cmake/KitLab.cmake); the headers are included the same way.
#define lab02 lab02_reference
#include "naive_matmul.h"
#undef lab02
#define lab03 lab03_reference
#include "tiled_matmul.h"
#undef lab03
#define lab04 lab04_reference
#include "boundary_matmul.h"
#undef lab04
#define lab05 lab05_reference
#include "dynamic_matmul.h"
#undef lab05

namespace {

// Not a lab's kernel: the most direct way to make the tile width a run-time choice (lab 05's
// README, section 8), timed beside lab 05's reference to measure what that README says it costs.
// The width is blockDim.x, so neither the k loop's bound nor a tile row's length is known when
// compiling: the loop is not unrolled and every offset is computed at run time.
__global__ void runtime_tile_kernel(const float* M, const float* N, float* P, int width) {
  extern __shared__ float shared[];
  const int tile = blockDim.x;
  float* Mds = shared;
  float* Nds = shared + tile * tile;
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * tile + ty;
  int col = blockIdx.x * tile + tx;
  float Pvalue = 0.0f;
  for (int ph = 0; ph < (width + tile - 1) / tile; ++ph) {
    int m_col = ph * tile + tx;
    int n_row = ph * tile + ty;
    Mds[ty * tile + tx] = (row < width && m_col < width) ? M[row * width + m_col] : 0.0f;
    Nds[ty * tile + tx] = (n_row < width && col < width) ? N[n_row * width + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < tile; ++k) {
      Pvalue += Mds[ty * tile + k] * Nds[k * tile + tx];
    }
    __syncthreads();
  }
  if (row < width && col < width) P[row * width + col] = Pvalue;
}

void launch_runtime_tile(const float* M, const float* N, float* P, int width, int tile) {
  dim3 block(tile, tile);
  dim3 grid((width + tile - 1) / tile, (width + tile - 1) / tile);
  runtime_tile_kernel<<<grid, block, 2 * tile * tile * sizeof(float)>>>(M, N, P, width);
  KIT_CHECK_LAUNCH();
}

struct Kernel {
  std::string name;  // as printed, in the CSV and on the command line
  std::string what;  // for the table
  int tile;          // block or tile width; 0 for cuBLAS
  std::function<bool(int)> supports;
  std::function<void(const float*, const float*, float*, int)> launch;
};

std::vector<Kernel> kernels(kit::CublasMatmul& cublas) {
  auto any = [](int) { return true; };
  auto multiple_of = [](int tile) { return [tile](int width) { return width % tile == 0; }; };
  std::vector<Kernel> list;
  for (int block : {16, 32}) {
    list.push_back({"naive" + std::to_string(block), "lab 02 naive", block, any,
                    [block](const float* M, const float* N, float* P, int w) {
                      lab02_reference::launch_naive_matmul(M, N, P, w, block);
                    }});
  }
  for (int tile : {16, 32}) {
    list.push_back({"tiled" + std::to_string(tile), "lab 03 tiled", tile, multiple_of(tile),
                    [tile](const float* M, const float* N, float* P, int w) {
                      lab03_reference::launch_tiled_matmul(M, N, P, w, tile);
                    }});
  }
  for (int tile : {16, 32}) {
    list.push_back({"boundary" + std::to_string(tile), "lab 04 boundary", tile, any,
                    [tile](const float* M, const float* N, float* P, int w) {
                      lab04_reference::launch_tiled_matmul(M, N, P, w, tile);
                    }});
  }
  // Strips one tile deep: the same work per phase as lab 04's kernel, so the ratio to it is
  // the cost of the dynamic buffer and the run-time strip depth alone.
  for (int tile : {16, 32}) {
    list.push_back({"dynamic" + std::to_string(tile), "lab 05 dynamic", tile, any,
                    [tile](const float* M, const float* N, float* P, int w) {
                      lab05_reference::launch_dynamic_matmul(M, N, P, w, w, w, tile, tile);
                    }});
  }
  for (int tile : {16, 32}) {
    list.push_back({"runtime" + std::to_string(tile), "run-time tile", tile, any,
                    [tile](const float* M, const float* N, float* P, int w) {
                      launch_runtime_tile(M, N, P, w, tile);
                    }});
  }
  list.push_back(
      {"cublas", "cuBLAS SGEMM", 0, any,
       [&cublas](const float* M, const float* N, float* P, int w) { cublas(M, N, P, w); }});
  return list;
}

struct Options {
  std::vector<int> widths{1024, 2048, 4096, 4000};
  std::string csv;
  int warmup = 3;
  int repeats = 11;
  std::string profile;  // a kernel name: profile mode
  int width = 2048;     // profile mode's width
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "matmul_bench: %s\n"
               "usage: matmul_bench [--widths 1024,2048,4096,4000] [--csv FILE] [--warmup N] "
               "[--repeats N]\n"
               "       matmul_bench --profile KERNEL --width W\n",
               problem.c_str());
  std::exit(2);
}

int positive(const std::string& text, const char* what) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 1 || value > 65536) {
    usage(std::string(what) + " must be a whole number from 1 to 65536, got '" + text + "'");
  }
  return static_cast<int>(value);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--widths") {
      o.widths.clear();
      std::istringstream list(value());
      std::string item;
      while (std::getline(list, item, ',')) o.widths.push_back(positive(item, "a width"));
    } else if (arg == "--csv") {
      o.csv = value();
    } else if (arg == "--warmup") {
      o.warmup = positive(value(), "--warmup");
    } else if (arg == "--repeats") {
      o.repeats = positive(value(), "--repeats");
    } else if (arg == "--profile") {
      o.profile = value();
    } else if (arg == "--width") {
      o.width = positive(value(), "--width");
    } else {
      usage("unknown argument '" + arg + "'");
    }
  }
  return o;
}

struct Inputs {
  int width;
  kit::DeviceBuffer<float> M, N, P, expected;
  explicit Inputs(int w)
      : width(w),
        M(static_cast<std::size_t>(w) * w),
        N(static_cast<std::size_t>(w) * w),
        P(static_cast<std::size_t>(w) * w),
        expected(static_cast<std::size_t>(w) * w) {
    const std::vector<float> h_M = kit::random_matrix(w, w, 20261122 + w);
    const std::vector<float> h_N = kit::random_matrix(w, w, 20261123 + w);
    M.copy_from_host(h_M.data());
    N.copy_from_host(h_N.data());
  }
};

// Normwise relative difference ||got - want|| / ||want||; infinity if got holds NaN or poison.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

int profile(const Options& o, const std::vector<Kernel>& list) {
  for (const Kernel& k : list) {
    if (k.name != o.profile) continue;
    if (!k.supports(o.width)) usage(k.name + " does not run at width " + std::to_string(o.width));
    Inputs in(o.width);
    k.launch(in.M.data(), in.N.data(), in.P.data(), o.width);
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    std::printf("profiled %s once at width %d\n", k.name.c_str(), o.width);
    return 0;
  }
  std::string names;
  for (const Kernel& k : list) names += " " + k.name;
  usage("no kernel named '" + o.profile + "'; the kernels are:" + names);
}

int benchmark(const Options& o, const std::vector<Kernel>& list, const std::string& device) {
  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    if (!csv) usage("cannot write " + o.csv);
    csv << "device,width,kernel,lab,tile,median_ms,min_ms,max_ms,gflops,rel_error\n";
  }
  bool all_verified = true;
  std::printf(
      "%s; median of %d runs after %d warm-up runs; every kernel checked against cuBLAS "
      "first\n\n",
      device.c_str(), o.repeats, o.warmup);
  std::printf("%6s  %-11s %-16s %5s  %10s  %10s  %9s\n", "width", "kernel", "", "tile", "median ms",
              "GFLOP/s", "rel. err");
  for (int width : o.widths) {
    Inputs in(width);
    const std::size_t count = static_cast<std::size_t>(width) * width;
    std::vector<float> want(count), got(count);
    const Kernel& cublas = list.back();
    cublas.launch(in.M.data(), in.N.data(), in.expected.data(), width);
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    in.expected.copy_to_host(want.data());
    std::map<std::string, double> median_ms;  // this width's timed kernels, by name
    for (const Kernel& k : list) {
      if (!k.supports(width)) {
        std::printf("%6d  %-11s %-16s %5d  %10s  (width not a multiple of the tile)\n", width,
                    k.name.c_str(), k.what.c_str(), k.tile, "n/a");
        continue;
      }
      // Check first: a wrong kernel is reported, never timed.
      kit::poison(in.P.data(), count);
      k.launch(in.M.data(), in.N.data(), in.P.data(), width);
      KIT_CUDA_CHECK(cudaDeviceSynchronize());
      in.P.copy_to_host(got.data());
      const double error = relative_error(got, want);
      if (!(error < 1e-4)) {
        all_verified = false;
        std::printf("%6d  %-11s %-16s %5d  WRONG: relative error %.3g against cuBLAS; not timed\n",
                    width, k.name.c_str(), k.what.c_str(), k.tile, error);
        continue;
      }
      const kit::Timing t =
          kit::time_on_device([&] { k.launch(in.M.data(), in.N.data(), in.P.data(), width); },
                              kit::TimingOptions{o.warmup, o.repeats});
      median_ms[k.name] = t.median_ms;
      const double gflops = 2.0 * width * double(width) * width / (t.median_ms * 1e-3) / 1e9;
      std::printf("%6d  %-11s %-16s %5d  %10.3f  %10.1f  %9.2e\n", width, k.name.c_str(),
                  k.what.c_str(), k.tile, t.median_ms, gflops, error);
      if (csv) {
        csv << '"' << device << "\"," << width << ',' << k.name << ',' << k.what << ',' << k.tile
            << ',' << t.median_ms << ',' << t.min_ms << ',' << t.max_ms << ',' << gflops << ','
            << error << '\n';
      }
    }
    for (const char* kind : {"dynamic", "runtime"}) {
      for (int tile : {16, 32}) {
        const std::string dynamic = kind + std::to_string(tile);
        const std::string fixed = "boundary" + std::to_string(tile);
        if (median_ms.count(dynamic) == 0 || median_ms.count(fixed) == 0) continue;
        std::printf(
            "%6d  static vs %s, tile %d: %s takes %.3f times the time of %s "
            "(%.1f %% of its speed)\n",
            width, kind, tile, dynamic.c_str(), median_ms[dynamic] / median_ms[fixed],
            fixed.c_str(), 100.0 * median_ms[fixed] / median_ms[dynamic]);
      }
    }
    std::printf("\n");
  }
  if (!o.csv.empty()) std::printf("wrote %s\n", o.csv.c_str());
  return all_verified ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    const kit::GpuStatus& gpu = kit::gpu_status();
    if (!gpu.usable) {
      std::fprintf(stderr, "matmul_bench: no usable GPU: %s\n", gpu.reason.c_str());
      return 2;
    }
    kit::CublasMatmul cublas;
    const std::vector<Kernel> list = kernels(cublas);
    if (!o.profile.empty()) return profile(o, list);
    const std::string device = gpu.name + " (sm_" + std::to_string(gpu.cc_major) +
                               std::to_string(gpu.cc_minor) + ", " + std::to_string(gpu.sm_count) +
                               " SMs)";
    return benchmark(o, list, device);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "matmul_bench: %s\n", error.what());
    return 1;
  }
}
