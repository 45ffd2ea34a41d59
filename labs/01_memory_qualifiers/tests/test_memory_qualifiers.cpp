// Lab 01's public tests of the code: each kernel's results on awkward sizes with poisoned outputs,
// and what the compiled program says about where its variables live (symbol sizes, static shared
// memory, local memory, the machine code).
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "calls.hpp"
#include "kit/cuda_check.hpp"
#include "kit/poison.hpp"
#include "kit/remote.hpp"
#include "kit/sanitizer.hpp"
#include "kit/sass.hpp"
#include "kit/synccheck.hpp"
#include "kit/testing.hpp"
#include "lab01_support.hpp"
#include "memory_qualifiers.h"

namespace {

// The symbol a lab function returned, or the end of the test saying what is missing.
const void* require_symbol(const void* symbol, const char* function, const char* declaration) {
  if (symbol == nullptr) {
    FAIL(function << "() returned no symbol\nhint: declare " << declaration
                  << " at file scope and return its address (README sections 3 and 4).");
  }
  return symbol;
}

const void* polynomial_symbol() {
  return require_symbol(lab01::polynomial_symbol(), "lab01::polynomial_symbol",
                        "__constant__ float polynomial_coefficients[kMaxCoefficients]");
}

// The symbols live in the student's worker: the copies and the size query run there, on the
// kit's side of it (tests/calls.hpp), and come back with CUDA's answer.
lab01_calls::SymbolState symbol_state(int symbol) {
  return kit::remote::call<lab01_calls::SymbolStateOf, lab01_calls::SymbolState>(
      kit::remote::Role::student, symbol);
}

std::vector<float> read_constant_array() {
  polynomial_symbol();
  std::vector<float> values(lab01::kMaxCoefficients);
  const std::uint64_t bytes = values.size() * sizeof(float);
  const int code = kit::remote::call<lab01_calls::ReadSymbol, int>(
      kit::remote::Role::student, int{lab01_calls::kPolynomial},
      reinterpret_cast<unsigned char*>(values.data()), bytes);
  kit::check_cuda(static_cast<cudaError_t>(code), "cudaMemcpyFromSymbol(polynomial_symbol())",
                  __FILE__, __LINE__);
  return values;
}

void write_constant_array(const std::vector<float>& values) {
  polynomial_symbol();
  const std::uint64_t bytes = values.size() * sizeof(float);
  const int code = kit::remote::call<lab01_calls::WriteSymbol, int>(
      kit::remote::Role::student, int{lab01_calls::kPolynomial},
      reinterpret_cast<const unsigned char*>(values.data()), bytes);
  kit::check_cuda(static_cast<cudaError_t>(code), "cudaMemcpyToSymbol(polynomial_symbol())",
                  __FILE__, __LINE__);
}

// Calls set_polynomial; a CUDA error in it ends the test with the failed call and, when the call
// is a plain cudaMemcpy, why that cannot reach a __constant__ array.
void set_polynomial(const std::vector<float>& c) {
  try {
    lab01::set_polynomial(c.data(), static_cast<int>(c.size()));
  } catch (const kit::CudaError& error) {
    const std::string what = error.what();
    if (what.find("cudaMemcpy(") != std::string::npos) {
      FAIL("set_polynomial failed: " << what
                                     << "\nhint: the failed call is a cudaMemcpy. In host code the "
                                        "name of a __constant__ array is not a device pointer, so "
                                        "cudaMemcpy cannot copy into it; cudaMemcpyToSymbol can "
                                        "(README section 3).");
    }
    FAIL("set_polynomial failed: " << what
                                   << "\nhint: README section 3 shows the call that copies host "
                                      "values into a __constant__ array.");
  }
}

// The machine code (SASS) of one of the student's kernels, read from the worker's executable,
// one entry per architecture it was built for; a SKIP, with the reason, where it cannot be read.
std::vector<kit::sass::Function> machine_code_of(const char* kernel) {
  const std::string cuobjdump =
      kit::sass::find_cuobjdump(KIT_CUOBJDUMP, KIT_CUDA_BIN_DIR, KIT_SOURCE_DIR);
  if (cuobjdump.empty()) {
    SKIP("cuobjdump was found neither where CMake looked ("
         << (std::string(KIT_CUOBJDUMP).empty() ? "nothing found" : KIT_CUOBJDUMP) << ") nor in "
         << KIT_CUDA_BIN_DIR << " nor in the kit's .venv nor on PATH; reading the machine code "
         << "needs it (it comes with the CUDA toolkit, or pip install nvidia-cuda-cuobjdump)");
  }
  kit::require_only_the_labs_kernels("README section 7");
  const kit::sass::Dump dump =
      kit::sass::disassemble(cuobjdump, kit::remote::worker_executable(kit::remote::Role::student),
                             kit::sass::mangled_prefix("lab01", kernel));
  if (!dump.error.empty()) FAIL("could not read your code's machine code: " << dump.error);
  if (dump.functions.empty()) {
    SKIP("your code's worker holds no machine code (SASS) for "
         << kernel
         << ", only code the driver compiles when it loads (PTX); build for a real architecture "
            "to check it");
  }
  return dump.functions;
}

// A machine-code test judges only a kernel that reads global memory and stores to it, or an
// empty kernel would pass: records a failure and returns false otherwise.
bool does_its_work(const kit::sass::Function& f, const char* kernel, const char* work,
                   int section) {
  const int loads = kit::sass::count_opcodes(f, {"LDG"});
  const int stores = kit::sass::count_opcodes(f, {"STG"});
  if (loads > 0 && stores > 0) return true;
  FAIL_CHECK(kernel << "'s machine code for " << f.arch << " has " << loads << " global loads and "
                    << stores
                    << " global stores, so there is nothing to judge\nhint: this test judges "
                       "only a kernel that "
                    << work << ": write the kernel first (README section " << section << ").");
  return false;
}

// Runs one mode of the probe (tools/lab01_probe.cu) under compute-sanitizer racecheck: a pass
// when it reports no hazard, else a failure quoting its report and the hint, which the report
// proves (a hazard is a shared-memory access by one thread not ordered after another's).
void check_no_race(const char* mode, const char* kernel, const char* correctness_test,
                   const char* hint) {
  const std::string tool = kit::require_compute_sanitizer(KIT_CUDA_BIN_DIR, "the race check");
  const std::string probe = KIT_BUILT_PATH(KIT_PROBE_PATH);
  kit::require_only_the_labs_kernels("README section 7");
  const std::string& racecheck = kit::sanitizer::kRacecheck;
  const kit::sanitizer::Run r = kit::sanitizer::run(tool, racecheck, probe, mode);
  if (r.exit_code == 0) {
    SUCCEED("racecheck found no hazard in " << kernel);
  } else if (r.exit_code == kit::sanitizer::kErrorsFound) {
    FAIL("racecheck found shared-memory hazards in " << kernel << ":\n"
                                                     << kit::sanitizer::race_lines(r.output)
                                                     << "hint: " << hint);
  } else if (r.exit_code == kit::sanitizer::kWrongResult) {
    FAIL("racecheck found no hazard, but some outputs of "
         << kernel << " were never written, so there was nothing to judge:\n"
         << kit::sanitizer::tail(r.output, 4) << "hint: make the " << correctness_test
         << " pass first.");
  } else {
    const std::string why = kit::sanitizer::unusable_reason(tool, racecheck, probe);
    if (!why.empty()) SKIP(why);
    FAIL("the probe failed under racecheck (exit code " << r.exit_code << "):\n"
                                                        << kit::sanitizer::tail(r.output, 10));
  }
}

std::vector<float> coefficients(int count, std::uint64_t seed) {
  return lab01_tests::random_values(count, seed);
}

}  // namespace

// ---- Part 1: coefficients in constant memory ----

TEST_CASE("polynomial coefficients live in a constant array of kMaxCoefficients floats",
          "[lab01][resources][gpu]") {
  KIT_REQUIRE_GPU();
  polynomial_symbol();
  const lab01_calls::SymbolState state = symbol_state(lab01_calls::kPolynomial);
  const auto found = static_cast<cudaError_t>(state.size_error);
  const std::size_t bytes = state.size;
  if (found != cudaSuccess) {
    FAIL("cudaGetSymbolSize does not know the address polynomial_symbol() returned ("
         << cudaGetErrorName(found)
         << ")\nhint: return the address of the __constant__ array itself: "
            "return &polynomial_coefficients; (README section 3).");
  }
  CAPTURE(bytes);
  INFO("hint: the array holds kMaxCoefficients = " << lab01::kMaxCoefficients << " floats, "
                                                   << lab01::kMaxCoefficients * sizeof(float)
                                                   << " bytes (README section 3).");
  CHECK(bytes == lab01::kMaxCoefficients * sizeof(float));
}

TEST_CASE("set_polynomial copies the coefficients into the constant array",
          "[lab01][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int count = GENERATE(1, 5, lab01::kMaxCoefficients);
  CAPTURE(count);
  // A marker the coefficients cannot hold, so that what set_polynomial left alone shows.
  const std::vector<float> marker(lab01::kMaxCoefficients, -7.0f);
  write_constant_array(marker);
  const std::vector<float> c = coefficients(count, 100 + count);
  set_polynomial(c);
  const std::vector<float> held = read_constant_array();
  int arrived = 0;
  while (arrived < count && held[arrived] == c[arrived]) ++arrived;
  if (arrived == count) {
    for (int k = count; k < lab01::kMaxCoefficients; ++k) {
      INFO(
          "hint: set_polynomial wrote past the count coefficients it was given: copy count * "
          "sizeof(float) bytes (README section 3).");
      REQUIRE(held[k] == -7.0f);
    }
    SUCCEED("the constant array holds the coefficients");
    return;
  }
  bool untouched = true;
  for (float h : held) untouched = untouched && h == -7.0f;
  if (untouched) {
    FAIL(
        "after set_polynomial the constant array still holds the -7s the test had put there: "
        "nothing reached it\nhint: host code copies into a __constant__ array with "
        "cudaMemcpyToSymbol; a copy to anything else leaves the array as it was (README "
        "section 3).");
  }
  // Byte by byte: the first count bytes are the coefficients' and every later byte the marker's,
  // which is what a copy of count bytes leaves, even where it ends inside a float.
  const auto* held_bytes = reinterpret_cast<const unsigned char*>(held.data());
  const bool count_bytes =
      std::memcmp(held_bytes, c.data(), count) == 0 &&
      std::memcmp(held_bytes + count, reinterpret_cast<const unsigned char*>(marker.data()) + count,
                  held.size() * sizeof(float) - count) == 0;
  if (count_bytes) {
    FAIL("only the first " << count << " bytes of the " << count * sizeof(float)
                           << " the coefficients take arrived, the rest of the array is as it "
                              "was\nhint: that is count bytes: copy count * sizeof(float) bytes "
                              "(README section 3).");
  }
  FAIL("the constant array holds " << held[arrived] << " at index " << arrived << ", expected "
                                   << c[arrived]
                                   << "\nhint: copy the count coefficients in their order, from "
                                      "h_coefficients to the start of the array (README section "
                                      "3).");
}

TEST_CASE("polynomial kernel reads its coefficients from the constant array",
          "[lab01][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int n = 1000, count = 4;
  const std::vector<float> x = lab01_tests::random_values(n, 200);
  // The test writes the array itself, then changes it: the results must follow.
  std::vector<float> first = coefficients(count, 201), second = coefficients(count, 202);
  first.resize(lab01::kMaxCoefficients, 0.0f);
  second.resize(lab01::kMaxCoefficients, 0.0f);
  write_constant_array(first);
  const std::vector<float> y_first = lab01_tests::run_polynomial(x, count);
  write_constant_array(second);
  const std::vector<float> y_second = lab01_tests::run_polynomial(x, count);
  first.resize(count);
  second.resize(count);
  const std::string problem_first = lab01_tests::polynomial_problem(x, first, y_first);
  const std::string problem_second = lab01_tests::polynomial_problem(x, second, y_second);
  if (problem_first.empty() && problem_second.empty()) {
    SUCCEED("the results follow the constant array");
    return;
  }
  if (y_first == y_second && !lab01_tests::polynomial_problem(x, first, y_second).empty()) {
    FAIL("the values did not change when the test changed the constant array:\n"
         << problem_second
         << "\nhint: the kernel does not read polynomial_coefficients: evaluate the polynomial "
            "from the __constant__ array (README section 3).");
  }
  FAIL("with coefficients the test copied into the constant array itself:\n"
       << (problem_first.empty() ? problem_second : problem_first));
}

TEST_CASE("polynomial values match the host reference when n is not a multiple of the block",
          "[lab01][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int n = GENERATE(1, 255, 257, 1000, 100003);
  const int count = GENERATE(1, 3, lab01::kMaxCoefficients);
  CAPTURE(n, count);
  const std::vector<float> c = coefficients(count, 300 + count);
  set_polynomial(c);
  const std::vector<float> x = lab01_tests::random_values(n, 310 + n);
  const std::string problem =
      lab01_tests::polynomial_problem(x, c, lab01_tests::run_polynomial(x, count));
  if (!problem.empty()) FAIL_CHECK(problem);
}

TEST_CASE("polynomial kernel writes nothing past the end of y", "[lab01][safety][gpu]") {
  KIT_REQUIRE_GPU();
  const int n = GENERATE(1, 300, 1000);
  CAPTURE(n);
  const std::vector<float> c = coefficients(3, 400);
  set_polynomial(c);
  const std::vector<float> x = lab01_tests::random_values(n, 401 + n);
  // y with its sentinel bands, staged whole for the worker's call (kit::HostGuarded).
  kit::HostGuarded y_guarded(x.size());
  y_guarded.poison_data();
  {
    const kit::remote::StagedArrays arrays(
        {kit::remote::staged(x), {y_guarded.storage(), y_guarded.storage_bytes()}});
    lab01::launch_evaluate_polynomial(x.data(), y_guarded.data(), n, 3);
  }
  if (!kit::fully_written(y_guarded.values())) return;
  const std::string damage = y_guarded.damaged_guards();
  INFO(damage);
  INFO(
      "hint: threads with i >= n have no element: they must return before they store (README "
      "section 3).");
  CHECK(damage.empty());
}

TEST_CASE("polynomial kernel shares no variable between its threads under racecheck",
          "[lab01][safety][alone][gpu]") {
  KIT_REQUIRE_GPU();
  check_no_race("polynomial", "evaluate_polynomial_kernel", "polynomial correctness tests",
                "threads of a block wrote and read the same __shared__ variable. A value each "
                "thread needs for itself, such as the running value of Horner's rule, belongs in "
                "an automatic variable, a register, not in __shared__ memory (README section 3).");
}

TEST_CASE("polynomial kernel machine code reads only x from global memory", "[lab01][resources]") {
  for (const kit::sass::Function& f : machine_code_of("evaluate_polynomial_kernel")) {
    CAPTURE(f.arch);
    if (!does_its_work(f, "evaluate_polynomial_kernel", "reads x and stores y", 3)) continue;
    const int global_loads = kit::sass::count_opcodes(f, {"LDG"});
    INFO("evaluate_polynomial_kernel's machine code for "
         << f.arch << " loads from global memory " << global_loads
         << " times (LDG) where reading x[i] takes one load\nhint: a __constant__ array is read "
            "through the constant cache (LDC), so the other loads read something that lives in "
            "global memory, such as coefficients declared __device__ instead of __constant__ "
            "(README section 3).");
    CHECK(global_loads == 1);
  }
}

// ---- Part 2: the counter ----

TEST_CASE("counter is one unsigned int in global memory", "[lab01][resources][gpu]") {
  KIT_REQUIRE_GPU();
  require_symbol(lab01::counter_symbol(), "lab01::counter_symbol",
                 "__device__ unsigned int counter");
  const lab01_calls::SymbolState state = symbol_state(lab01_calls::kCounter);
  const auto found = static_cast<cudaError_t>(state.size_error);
  const std::size_t bytes = state.size;
  if (found != cudaSuccess) {
    FAIL("cudaGetSymbolSize does not know the address counter_symbol() returned ("
         << cudaGetErrorName(found)
         << ")\nhint: return the address of the __device__ variable itself: return &counter; "
            "(README section 4).");
  }
  CAPTURE(bytes);
  INFO("hint: the counter is one unsigned int, " << sizeof(unsigned int)
                                                 << " bytes (README section 4).");
  CHECK(bytes == sizeof(unsigned int));
}

TEST_CASE("counter is exact for any grid and block size", "[lab01][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  // Every size and block first, then one diagnosis from all the runs: the most telling pattern
  // (a count that keeps the previous one, lost increments) may show in a later configuration.
  std::string wrong, keeps_previous, lost, short_grid;
  int failures = 0;
  unsigned int previous = 0;
  for (int n : {1, 1000, 65539, 1 << 20}) {
    const std::vector<float> x = lab01_tests::random_values(n, 500 + n);
    const kit::remote::StagedArrays arrays({kit::remote::staged(x)});
    const float threshold = 0.0f;
    const unsigned int want = lab01_tests::host_count_above(x, threshold);
    for (int block : {32, 100, 256, 1024}) {
      unsigned int got[3];
      for (unsigned int& count : got) {
        lab01::reset_counter();
        lab01::launch_count_above(x.data(), n, threshold, block);
        count = lab01::read_counter();
      }
      const bool stable = got[1] == got[0] && got[2] == got[0];
      const unsigned int before = previous;
      previous = got[2];
      if (stable && got[0] == want) continue;
      ++failures;
      std::ostringstream seen;
      seen << "n = " << n << ", blocks of " << block << ": counted " << got[0] << ", " << got[1]
           << " and " << got[2] << " in three runs, expected " << want;
      if (wrong.empty()) wrong = seen.str();
      const int covered = n / block * block;
      if ((before > 0 && got[0] == want + before) ||
          (want > 0 && got[1] == got[0] + want && got[2] == got[1] + want)) {
        if (keeps_previous.empty()) keeps_previous = seen.str();
      } else if (!stable && got[0] < want && got[1] < want && got[2] < want) {
        if (lost.empty()) lost = seen.str();
      } else if (stable && covered < n &&
                 got[0] == lab01_tests::host_count_above(x, threshold, 0, covered)) {
        if (short_grid.empty())
          short_grid =
              seen.str() + " (the count of the first " + std::to_string(covered) + " elements)";
      }
    }
  }
  if (failures == 0) {
    SUCCEED("every count was exact");
    return;
  }
  INFO(failures << " of 16 sizes and blocks counted wrong");
  if (!keeps_previous.empty()) {
    FAIL(keeps_previous << "\nhint: each count includes the one before it: reset_counter did "
                           "not set the counter to 0 (README section 4).");
  }
  if (!lost.empty()) {
    FAIL(lost << "\nhint: every run counted too few, and a different number each time: "
                 "increments were lost. Threads that add to one variable at the same time "
                 "overwrite each other's read-modify-write unless it is one atomic operation, "
                 "atomicAdd (README section 4).");
  }
  if (!short_grid.empty()) {
    FAIL(short_grid << "\nhint: the elements past the last whole block were not counted: the "
                       "grid has one block too few; round the number of blocks up (README "
                       "section 4).");
  }
  FAIL(wrong << "\nhint: the kit cannot tell why from the runs; README section 4 shows what "
                "each thread adds to the counter and how.");
}

TEST_CASE("counter keeps its value across launches until it is reset",
          "[lab01][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int n = 5000;
  const std::vector<float> x = lab01_tests::random_values(n, 600);
  const kit::remote::StagedArrays arrays({kit::remote::staged(x)});
  const unsigned int once = lab01_tests::host_count_above(x, 0.25f);
  lab01::reset_counter();
  lab01::launch_count_above(x.data(), n, 0.25f, 128);
  {
    INFO(
        "this test judges only a counter that counts one launch right: make 'counter is exact "
        "for any grid and block size' pass first.");
    REQUIRE(lab01::read_counter() == once);
  }
  lab01::launch_count_above(x.data(), n, 0.25f, 128);
  {
    INFO(
        "hint: a __device__ variable lives as long as the program: a second launch adds to what "
        "the first counted (README section 4). Only reset_counter sets it to 0.");
    CHECK(lab01::read_counter() == 2 * once);
  }
  lab01::reset_counter();
  INFO("hint: reset_counter must set the counter to 0 (README section 4).");
  CHECK(lab01::read_counter() == 0u);
}

// ---- Part 3: the block sums ----

TEST_CASE("block sums match the host reference when n is not a multiple of the block",
          "[lab01][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int n = GENERATE(1, 255, 256, 1000, 100003);
  CAPTURE(n);
  const std::vector<float> x = lab01_tests::random_values(n, 700 + n);
  const std::string problem = lab01_tests::with_sum_map(
      lab01_tests::block_sums_problem(x, lab01_tests::run_block_sums(x)), n);
  if (!problem.empty()) FAIL_CHECK(problem);
}

TEST_CASE("block sum kernel keeps its partial sums in shared memory", "[lab01][resources][gpu]") {
  KIT_REQUIRE_GPU();
  const std::vector<float> x = lab01_tests::random_values(1000, 800);
  {
    INFO(
        "this test judges only a kernel whose sums are right: make the block sum correctness "
        "test pass first.");
    const std::string problem = lab01_tests::block_sums_problem(x, lab01_tests::run_block_sums(x));
    if (!problem.empty()) FAIL(problem);
  }
  kit::require_only_the_labs_kernels("README section 7");
  const std::size_t bytes = lab01_tests::block_sums_attributes().static_shared_bytes;
  const std::size_t one_per_thread = lab01::kThreadsPerBlock * sizeof(float);
  CAPTURE(bytes, one_per_thread);
  if (bytes == 0) {
    FAIL(
        "block_sums_kernel declares no __shared__ memory\nhint: keep the partial sums in a "
        "__shared__ array declared inside the kernel, one float per thread (README section 5).");
  }
  INFO("hint: one float per thread of the block, " << one_per_thread
                                                   << " bytes, is all the tree needs (README "
                                                      "section 5).");
  CHECK(bytes <= 2 * one_per_thread);
}

TEST_CASE("block sum kernel has no shared-memory race under racecheck",
          "[lab01][safety][alone][gpu]") {
  KIT_REQUIRE_GPU();
  check_no_race("block-sums", "block_sums_kernel", "block sum correctness test",
                "a thread read a partial sum that another thread stores, with no "
                "__syncthreads() between the store and the read (README section 5).");
}

// ---- Part 4: the private array ----

TEST_CASE("block sum kernel lets every thread reach each barrier under synccheck",
          "[lab01][safety][alone][gpu]") {
  KIT_REQUIRE_GPU();
  const std::string tool = kit::require_compute_sanitizer(KIT_CUDA_BIN_DIR, "the barrier check");
  kit::require_only_the_labs_kernels("README section 7");
  kit::synccheck::check_barriers_reached(tool, KIT_BUILT_PATH(KIT_PROBE_PATH), {"block-sums"},
                                         "block_sums_kernel", {"memory_qualifiers.cu"},
                                         "README sections 5 and 11");
}

TEST_CASE("chunk histograms match the host reference when n is not a multiple of the chunk",
          "[lab01][correctness][gpu]") {
  KIT_REQUIRE_GPU();
  const int n = GENERATE(1, 31, 33, 1000, 100003);
  CAPTURE(n);
  const std::vector<float> x = lab01_tests::unit_values(n, 900 + n);
  const std::string problem = lab01_tests::histograms_problem(
      x, lab01_tests::run_histograms(x, lab01::launch_chunk_histograms));
  if (!problem.empty()) FAIL_CHECK(problem);
}

TEST_CASE("chunk histogram kernel uses no local memory", "[lab01][resources][gpu]") {
  KIT_REQUIRE_GPU();
  const std::vector<float> x = lab01_tests::unit_values(1000, 1000);
  {
    INFO(
        "this test judges only a kernel whose counts are right: make the chunk histogram "
        "correctness test pass first.");
    const std::string problem = lab01_tests::histograms_problem(
        x, lab01_tests::run_histograms(x, lab01::launch_chunk_histograms));
    if (!problem.empty()) FAIL(problem);
  }
  kit::require_only_the_labs_kernels("README section 7");
  const kit::KernelAttributes attributes = lab01_tests::chunk_histograms_attributes();
  CAPTURE(attributes.local_bytes_per_thread, attributes.registers_per_thread);
  INFO("hint: chunk_histograms_kernel has "
       << attributes.local_bytes_per_thread
       << " bytes of local memory per thread: some array of "
          "it lives in local memory. An array stays in "
          "registers only when every index is a number the "
          "compiler knows after unrolling (README section 6).");
  CHECK(attributes.local_bytes_per_thread == 0u);
}

TEST_CASE("chunk histogram machine code has no local loads or stores", "[lab01][resources]") {
  for (const kit::sass::Function& f : machine_code_of("chunk_histograms_kernel")) {
    CAPTURE(f.arch);
    if (!does_its_work(f, "chunk_histograms_kernel", "reads x and stores the counts", 6)) continue;
    const int local = kit::sass::count_opcodes(f, {"LDL", "STL"});
    INFO("chunk_histograms_kernel's machine code for "
         << f.arch << " has " << local
         << " local loads and stores (LDL, STL)\nhint: some array of the kernel lives in local "
            "memory. An array stays in registers only when every index is a number the compiler "
            "knows after unrolling (README section 6).");
    CHECK(local == 0);
  }
}
