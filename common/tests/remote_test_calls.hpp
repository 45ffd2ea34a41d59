// The calls of the kit's own test worker (remote_test_worker.cu), for test_remote.cpp: one of
// each kind of argument and result kit/remote.hpp carries, and the ways a worker can fail.
#pragma once

#include <functional>
#include <string>

#include "kit/remote.hpp"

namespace remote_test {

struct Shape {
  int rows = 0;
  int cols = 0;
  std::string label;
};
template <class Wire>
void fields(Wire& w, Shape& s) {
  w.value(s.rows), w.value(s.cols), w.value(s.label);
}

// Every call below is declared in the shape kit/remote.hpp asks for (a name and an args template),
// so Add, Hog and the others stay alike; a macro would hide each call's order on the wire.
struct Add {
  static constexpr const char* name = "test::add";
  template <class Wire>
  static void args(Wire& w, int& a, int& b) {
    w.value(a), w.value(b);
  }
};

// y = k * x for n elements.
struct Scale {
  static constexpr const char* name = "test::scale";
  template <class Wire>
  static void args(Wire& w, const float*& x, float*& y, int& n, float& k) {
    w.value(n), w.value(k);
    const std::size_t count = n > 0 ? static_cast<std::size_t>(n) : 0;
    w.host_in(x, count), w.host_out(y, count);
  }
};

// What a kernel reads from a static __shared__ array of n floats it never stored (n <= 1024).
struct StaleShared {
  static constexpr const char* name = "test::stale_shared";
  template <class Wire>
  static void args(Wire& w, float*& values, int& n) {
    w.value(n);
    w.host_out(values, n > 0 ? static_cast<std::size_t>(n) : 0);
  }
};

// Every SM's shared memory set to one value by a kernel of the test worker's own.
struct FillShared {
  static constexpr const char* name = "test::fill_shared";
  template <class Wire>
  static void args(Wire& w, float& value) {
    w.value(value);
  }
};

struct Describe {
  static constexpr const char* name = "test::describe";
  template <class Wire>
  static void args(Wire& w, Shape& shape) {
    w.value(shape);
  }
};

// Throws what `kind` names: "invalid_argument", "out_of_range", "runtime_error".
struct Throw {
  static constexpr const char* name = "test::throw";
  template <class Wire>
  static void args(Wire& w, std::string& kind) {
    w.value(kind);
  }
};

// The value of an environment variable in the worker ("" when unset).
struct Getenv {
  static constexpr const char* name = "test::getenv";
  template <class Wire>
  static void args(Wire& w, std::string& variable) {
    w.value(variable);
  }
};

// The address the worker received for a device pointer.
struct Address {
  static constexpr const char* name = "test::address";
  template <class Wire>
  static void args(Wire& w, const float*& d) {
    w.device(d);
  }
};

// How many cudaMalloc calls the worker has made: its own and the kit's, for staged arrays.
struct AllocationsMade {
  static constexpr const char* name = "test::allocations_made";
  template <class Wire>
  static void args(Wire&) {}
};

// How many of the worker's allocations are live now.
struct AllocationsHeld {
  static constexpr const char* name = "test::allocations_held";
  template <class Wire>
  static void args(Wire&) {}
};

// cudaFree(d): a launcher that frees a buffer it was given. Through a pointer to const, so that
// nothing is copied back from the memory it freed.
struct FreeIt {
  static constexpr const char* name = "test::free_it";
  template <class Wire>
  static void args(Wire& w, const float*& d) {
    w.device(d);
  }
};

// d[i] = value for n elements of device memory, past an array's end too (a stray write).
struct Fill {
  static constexpr const char* name = "test::fill";
  template <class Wire>
  static void args(Wire& w, float*& d, int& n, float& value) {
    w.device(d), w.value(n), w.value(value);
  }
};

// d[i] as the worker's device memory holds it, past an array's end too (a stray read).
struct ElementAt {
  static constexpr const char* name = "test::element_at";
  template <class Wire>
  static void args(Wire& w, const float*& d, int& i) {
    w.device(d), w.value(i);
  }
};

// d[i] = -d[i] for n elements of device memory, by a kernel.
struct Negate {
  static constexpr const char* name = "test::negate";
  template <class Wire>
  static void args(Wire& w, float*& d, int& n) {
    w.device(d), w.value(n);
  }
};

// f(x, 2) + f(x, 3), f being the judge's.
struct Ask {
  static constexpr const char* name = "test::ask";
  template <class Wire>
  static void args(Wire& w, std::function<int(int, int)>& f, int& x) {
    w.callback(f), w.value(x);
  }
};

// Takes `mib` MiB of device memory past the kit's count of cudaMalloc (cudaMallocAsync), keeps
// it, and returns after `seconds`.
struct Hog {
  static constexpr const char* name = "test::hog";
  template <class Wire>
  static void args(Wire& w, int& mib, int& seconds) {
    w.value(mib), w.value(seconds);
  }
};

// Reserves local memory (a kernel with 64 KiB of it a thread, on every SM), which no cudaMalloc
// counts, and returns after `seconds`.
struct LocalHog {
  static constexpr const char* name = "test::local_hog";
  template <class Wire>
  static void args(Wire& w, int& seconds) {
    w.value(seconds);
  }
};

struct Crash {  // std::abort()
  static constexpr const char* name = "test::crash";
  template <class Wire>
  static void args(Wire&) {}
};

struct Hang {  // never returns
  static constexpr const char* name = "test::hang";
  template <class Wire>
  static void args(Wire&) {}
};

struct Forge {  // writes a reply of its own, with an array the call never had, before the real one
  static constexpr const char* name = "test::forge";
  template <class Wire>
  static void args(Wire&) {}
};

// Sets a kernel's cudaFuncAttributeMaxDynamicSharedMemorySize to `bytes` and returns what the
// runtime answered, without checking it: a value past the device's limit fails and leaves the
// runtime's last error set, as a student's checked call that the device refused does.
struct SetAttribute {
  static constexpr const char* name = "test::set_attribute";
  template <class Wire>
  static void args(Wire& w, int& bytes) {
    w.value(bytes);
  }
};

// Launches a kernel that runs for `milliseconds` and throws at once, without waiting for it: a
// student's launcher that checks its arguments after the launch.
struct SpinThenThrow {
  static constexpr const char* name = "test::spin_then_throw";
  template <class Wire>
  static void args(Wire& w, int& milliseconds) {
    w.value(milliseconds);
  }
};

struct LastError {  // cudaGetLastError() in the worker, as a number
  static constexpr const char* name = "test::last_error";
  template <class Wire>
  static void args(Wire&) {}
};

struct Pid {  // the worker's process id, as it sees it
  static constexpr const char* name = "test::pid";
  template <class Wire>
  static void args(Wire&) {}
};

}  // namespace remote_test
