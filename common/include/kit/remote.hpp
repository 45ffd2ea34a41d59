// The judge and the worker (docs/design/engine.md, "Judge and worker"): a lab's tests (the judge)
// never load the student's code. The student's files are linked with the kit's server into a
// separate process, the worker, and each call of the lab's API that a test makes crosses to it:
// the judge sends the arguments, the worker makes the call and replies, the judge checks what
// came back. The judge owns the data: device buffers are its own allocations, which the worker
// maps through CUDA IPC handles for the length of a call, and host arrays travel in the messages.
// Nothing the worker prints or returns decides a score beyond the results the judge checks.
//
// Each call of a lab is described once, for both sides, as a struct with a name and an `args`
// template over a "wire" (labs/NN_slug/tests/calls.hpp):
//
//   struct LaunchNaive {
//     static constexpr const char* name = "lab02::launch_naive_matmul";
//     template <class Wire>
//     static void args(Wire& w, const float*& d_M, const float*& d_N, float*& d_P, int& width,
//                      int& block_size) {
//       w.device(d_M), w.device(d_N), w.device(d_P), w.value(width), w.value(block_size);
//     }
//   };
//
// The judge's side of the API is then `return kit::remote::call<LaunchNaive, R>(role, args...)`,
// the worker's `kit::remote::serve<LaunchNaive>(&lab02::launch_naive_matmul)`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kit/kernel_attributes.hpp"

namespace kit::remote {

// The worker broke the protocol, crashed or hung: the call it was serving did not happen. The
// next call starts a new worker.
class WorkerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bytes of one message at most, either way (a 4096 x 4096 float matrix is 64 MiB).
constexpr std::size_t kMessageLimit = std::size_t(256) << 20;
// Characters of an exception's text carried back from the worker.
constexpr std::size_t kTextLimit = 4096;

// ---- encoding: what both sides write and read --------------------------------------------

class Encoder {
 public:
  template <class T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "put() takes plain values");
    bytes(&value, sizeof value);
  }
  void bytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const char*>(data);
    buffer_.insert(buffer_.end(), p, p + n);
  }
  void text(const std::string& s) {
    put<std::uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  const std::vector<char>& buffer() const { return buffer_; }
  std::vector<char>& buffer() { return buffer_; }

 private:
  std::vector<char> buffer_;
};

// Reads what an Encoder wrote; every read is bounds-checked, so a short or forged message
// throws WorkerError (on the judge's side, a worker's reply is untrusted input).
class Decoder {
 public:
  Decoder(const char* data, std::size_t size) : p_(data), left_(size) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>, "get() takes plain values");
    T value;
    std::memcpy(&value, take(sizeof value), sizeof value);
    return value;
  }
  const char* take(std::size_t n) {
    if (n > left_) throw WorkerError("a message ended early: the other side broke the protocol");
    const char* at = p_;
    p_ += n;
    left_ -= n;
    return at;
  }
  std::string text(std::size_t limit = kMessageLimit) {
    const auto n = get<std::uint64_t>();
    if (n > limit) throw WorkerError("a text in a message is longer than allowed");
    return std::string(take(static_cast<std::size_t>(n)), static_cast<std::size_t>(n));
  }
  std::size_t left() const { return left_; }

 private:
  const char* p_;
  std::size_t left_;
};

// A struct crosses field by field: give it `template <class Wire> void fields(Wire&, T&)` in
// its lab's calls.hpp (found by argument-dependent lookup). Plain values cross as bytes.
struct ProbeWire {
  template <class T>
  void value(T&);
};
template <class T, class = void>
struct has_fields : std::false_type {};
template <class T>
struct has_fields<T, std::void_t<decltype(fields(std::declval<ProbeWire&>(), std::declval<T&>()))>>
    : std::true_type {};

// The wire that moves values only: struct fields and results use it on both sides.
struct ValueOut {
  Encoder& e;
  template <class T>
  void value(T& v) {
    if constexpr (has_fields<T>::value) {
      fields(*this, v);
    } else {
      e.put(v);
    }
  }
  void value(std::string& s) { e.text(s); }
};
struct ValueIn {
  Decoder& d;
  template <class T>
  void value(T& v) {
    if constexpr (has_fields<T>::value) {
      fields(*this, v);
    } else {
      v = d.get<T>();
    }
  }
  void value(std::string& s) { s = d.text(kTextLimit); }
};
// The number of elements of a width x width matrix, 0 for a width below 1 (a call the lab must
// refuse still crosses, with no data).
inline std::size_t square(int width) {
  return width > 0 ? static_cast<std::size_t>(width) * static_cast<std::size_t>(width) : 0;
}
inline std::size_t product(int rows, int cols) {
  return rows > 0 && cols > 0 ? static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) : 0;
}

// ---- the judge's side ---------------------------------------------------------------------

// Which worker serves a call: the student's code, or the lab's reference (the speed tests time
// both the same way, each in a worker of its own).
enum class Role { student, reference };

// A device pointer of the judge, as the worker can map it: the allocation's IPC handle and the
// offset into it. Defined in src/remote_judge.cpp, which alone needs CUDA's headers.
struct DeviceRef {
  unsigned char handle[64];
  std::uint64_t offset;
  std::uint64_t size;    // bytes from the allocation's start to its end
  std::uint64_t serial;  // kit::allocation_serial: tells a new allocation from an old one
};
// False when `pointer` is not the judge's device memory (a test passes a host array to a launch
// that must refuse it before touching it): the worker then gets the bare address, as the
// student's code would in one process, and fails as it would there if it uses it.
bool export_device_pointer(const void* pointer, DeviceRef& ref);

// Host memory of the judge that a call hands the worker as device memory: the worker copies it
// into device memory of its own before the call and, for a pointer to non-const, back after it.
// All of a call's device work then happens in the worker's CUDA context; with the judge's
// buffers, each call switched the GPU between the judge's context (its copies in and out) and the
// worker's (bench/RESULTS.md, "Where a split test's time goes"). The judge checks what comes back
// as it checks any result. Staged while a StagedArrays lives.
struct StagedArray {
  void* data;
  std::size_t bytes;
};
class StagedArrays {
 public:
  explicit StagedArrays(std::initializer_list<StagedArray> arrays);
  ~StagedArrays();
  StagedArrays(const StagedArrays&) = delete;
  StagedArrays& operator=(const StagedArrays&) = delete;

 private:
  std::vector<StagedArray> arrays_;
};
// A vector's elements as a staged array. A const vector only for a parameter that is a pointer to
// const: the worker sends back only what a pointer to non-const may have written.
template <class T>
StagedArray staged(std::vector<T>& v) {
  return {v.data(), v.size() * sizeof(T)};
}
template <class T>
StagedArray staged(const std::vector<T>& v) {
  return {const_cast<T*>(v.data()), v.size() * sizeof(T)};
}
// The staged array `pointer` lies in, if any.
bool find_staged(const void* pointer, StagedArray& found);

// Runs one of a call's callbacks on the judge's side: decodes its arguments, encodes its result.
using Callback = std::function<void(Decoder&, Encoder&)>;

// Encodes a call's arguments; remembers the host arrays the worker may write, to copy them back.
class JudgeArgs {
 public:
  explicit JudgeArgs(Encoder& e) : e_(e) {}
  template <class T>
  void value(T& v) {
    ValueOut{e_}.value(v);
  }
  template <class T>
  void device(T*& pointer) {
    DeviceRef ref{};
    StagedArray staged{};
    if (pointer == nullptr) {
      e_.put<std::uint8_t>(0);
    } else if (find_staged(pointer, staged)) {
      constexpr bool back = !std::is_const_v<T>;
      e_.put<std::uint8_t>(3);
      e_.put<std::uint64_t>(static_cast<std::uint64_t>(reinterpret_cast<const char*>(pointer) -
                                                       static_cast<const char*>(staged.data)));
      e_.put<std::uint8_t>(back);
      e_.put<std::uint64_t>(staged.bytes);
      e_.bytes(staged.data, staged.bytes);
      if (back) outs_.push_back({staged.data, staged.bytes});
    } else if (export_device_pointer(pointer, ref)) {
      e_.put<std::uint8_t>(1);
      e_.put(ref);
      device_ = true;
    } else {
      e_.put<std::uint8_t>(2);
      e_.put(reinterpret_cast<std::uint64_t>(pointer));
    }
  }
  // `count` elements the worker reads.
  template <class T>
  void host_in(T*& pointer, std::size_t count) {
    static_assert(std::is_trivially_copyable_v<T>);
    e_.put<std::uint8_t>(pointer != nullptr);
    if (pointer == nullptr) return;
    e_.put<std::uint64_t>(count * sizeof(T));
    e_.bytes(pointer, count * sizeof(T));
  }
  // `count` elements the worker may write: their values go over and come back.
  template <class T>
  void host_out(T*& pointer, std::size_t count) {
    static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>);
    e_.put<std::uint8_t>(pointer != nullptr);
    if (pointer == nullptr) return;
    e_.put<std::uint64_t>(count * sizeof(T));
    e_.bytes(pointer, count * sizeof(T));
    outs_.push_back({pointer, count * sizeof(T)});
  }
  struct Out {
    void* data;
    std::size_t bytes;
  };
  // A function of the judge's that the worker's code may call during the call (an occupancy
  // query, say): the worker gets a stand-in that sends its arguments back here.
  template <class R, class... P>
  void callback(std::function<R(P...)>& function) {
    e_.put<std::uint32_t>(static_cast<std::uint32_t>(callbacks_.size()));
    callbacks_.push_back([&function](Decoder& d, Encoder& out) {
      std::tuple<std::decay_t<P>...> arguments;
      std::apply([&d](auto&... a) { (ValueIn{d}.value(a), ...); }, arguments);
      auto result = std::apply(function, arguments);
      ValueOut{out}.value(result);
    });
  }
  const std::vector<Out>& outs() const { return outs_; }
  bool has_device_memory() const { return device_; }
  const std::vector<Callback>& callbacks() const { return callbacks_; }

 private:
  Encoder& e_;
  std::vector<Out> outs_;
  std::vector<Callback> callbacks_;
  bool device_ = false;
};

// Sends one request and returns the reply's payload (host arrays, then the result), or throws
// what the worker's call threw: std::invalid_argument, std::out_of_range, kit::CudaError,
// std::runtime_error; WorkerError when the worker died, hung or broke the protocol.
// With `device_memory`, the judge's own device work is finished first: its stream is not
// ordered with the worker's, and a poison or fill still queued would land after the call.
std::vector<char> exchange(Role role, const std::string& name, std::vector<char> arguments,
                           bool device_memory, const std::vector<Callback>& callbacks = {});

// Ends the worker of `role` (the next call starts a new one).
void stop_worker(Role role);

// Where a test case's parts begin and end (its GENERATE values and sections run one after
// another): `first_part` for the case's first. Once a call ended the student's worker in a part
// that failed (its code faulted and left a sticky CUDA error, crashed, hung, or held too much
// device memory), every call of the student's role in the case's later parts throws WorkerError
// at once, naming that first trouble, instead of starting a worker for each part: the case has
// failed already, and a new worker for every size of a kernel that faults at each cost a judge
// most of its time (bench/RESULTS.md, "A faulting kernel's later sizes"). A part that passed all
// the same (a diagnosis of the kit's that caught the trouble) refuses nothing later, nor does a
// failure to start one (no worker executable, socket or process: the kit's trouble; a worker
// whose sandbox started but could not run it ends like a crash, exit code 126 or 127).
// FreshWorkers, which every test program of the kit links, calls both; a program without it refuses
// nothing.
void begin_case_part(bool first_part);
void end_case_part(bool part_failed);

// The kit's own call at a test case's end, which every worker serves: it frees the device copies
// of staged arrays that the worker keeps from one call to the next (common/src/remote_worker.cpp
// says why it keeps them), takes back the runtime's last error, and answers whether the worker may
// serve another case (settings_kept_since_start, below, and the device done with the case's work:
// common/src/remote_worker.cpp, device_work_done).
struct EndCase {
  static constexpr const char* name = "kit::end_case";
  template <class Wire>
  static void args(Wire&) {}
};

template <class Call, class R = void, class... A>
R call(Role role, A... arguments) {
  Encoder e;
  JudgeArgs wire(e);
  Call::args(wire, arguments...);
  const std::vector<char> reply =
      exchange(role, Call::name, std::move(e.buffer()), wire.has_device_memory(), wire.callbacks());
  try {
    Decoder d(reply.data(), reply.size());
    for (const JudgeArgs::Out& out : wire.outs()) {
      if (d.get<std::uint64_t>() != out.bytes) {
        throw WorkerError("a reply's array has the wrong size");
      }
      std::memcpy(out.data, d.take(out.bytes), out.bytes);
    }
    if constexpr (!std::is_void_v<R>) {
      R result{};
      ValueIn{d}.value(result);
      if (d.left() != 0) throw WorkerError("a reply is longer than its call's results");
      return result;
    } else {
      if (d.left() != 0) throw WorkerError("a reply is longer than its call's results");
    }
  } catch (const WorkerError&) {
    stop_worker(role);  // out of step with its calls: a new worker serves the next one
    throw;
  }
}

// Whether this process is a judge whose lab calls go to a worker (set as its calls register): the
// timer then times each call by the host clock from request to verified reply, since the
// worker's kernels run in its own CUDA context, where the judge's events cannot see them.
bool calls_are_remote();
void mark_calls_remote();

// While one lives, the judge's calls are being timed (kit::time_on_device): each goes out with
// kTimedMark before its name, and the worker then leaves shared memory as it is, so that the
// fill (fill_before_launches) is not part of any student's or reference's time.
class TimedCalls {
 public:
  TimedCalls();
  ~TimedCalls();
  TimedCalls(const TimedCalls&) = delete;
  TimedCalls& operator=(const TimedCalls&) = delete;
};
bool calls_are_timed();
constexpr char kTimedMark = '!';

// Whether CUDA has started in this process (the driver's cuInit), asked without starting it: a
// process where it has not has no context and no device memory. Asking the runtime instead would
// start it and make a context: 0.1-0.3 s on an H200, far more while the grader's other test
// processes make theirs; and a process that can open every GPU's node starts CUDA on each.
bool cuda_started();

// A CUDA driver function (CUDA 12's ABI), reached through the runtime so that nothing links
// libcuda (CI has no driver): nullptr where there is none. Starts the runtime: ask cuda_started
// first where a context is not wanted.
void* driver_function(const char* name);

// The worker's process id as this process sees it (0 when none is running), for reading its
// use of the device from outside it (kit::remote::worker_device_memory).
long worker_pid(Role role);

// At a test case's end (FreshWorkers, before it counts the worker's device memory, so that the
// count holds only what the student's code keeps): the worker of `role`, where one runs, drops its
// kept copies and its last error; true when it may serve the next case as a new worker would
// (none running: true). Starts no worker; throws as call() does.
bool end_case(Role role);

// Whether every running worker waits for its next call, none left mid-call by an exception that
// did not end it (FreshWorkers keeps only such workers for the next test case).
bool workers_in_step();

// Device memory the driver reports for the student's worker (NVML, per process), in bytes;
// -1 with `why` filled when it cannot be read here, or when NVML lists neither this process nor
// the worker (a worker without a CUDA context, beside a judge without one, holds nothing).
long long worker_device_memory(std::string* why = nullptr);
// The same for process `pid` and the processes below it.
long long process_device_memory(long pid, std::string* why = nullptr);
// Whether process `pid` or one below it holds a device file of the GPU's driver open
// (/dev/nvidiactl, /dev/nvidia0, /dev/nvidia-uvm..., WSL's /dev/dxg): through a descriptor, or
// with `read_maps`, a mapping too. A process's device memory lives only while it does, so one
// that holds none has none. Unknown (nullopt) when a descriptor list, a map or a list of children
// cannot be read (a process that ended, one that made itself unreadable). Without `read_maps` it
// takes no lock of the process's memory (kit::remote::stop_worker on a worker that may be wedged).
std::optional<bool> holds_gpu_open(long pid, bool read_maps = true);

// The most device memory the driver may report for a student's worker before the judge stops
// it: a test's limit for its own buffers (kit::device_memory_limit) and 1 GiB for the context,
// its kernels and their local memory. The worker's own count of its cudaMallocs is its code's to
// change; this one is the driver's.
std::size_t worker_device_memory_cap();

// The executable of the worker of `role`: KIT_WORKER or KIT_REFERENCE_WORKER, else the lab's build.
std::string worker_executable(Role role);

// The shared memory the system reserves for every block on a GPU of compute capability `cc`
// (80 for 8.0), in bytes, as cudaDevAttrReservedSharedMemoryPerBlock reports it, without CUDA.
long long reserved_shared_bytes_per_block(int cc);

// What the compiler gave a kernel of the student's worker (registers, static shared, local and
// constant memory) on this GPU's architecture, read from the worker's executable with cuobjdump;
// `mangled_prefix` names it (kit::sass::mangled_template_prefix). Throws std::runtime_error when
// there is no such kernel or no cuobjdump.
KernelAttributes worker_kernel_attributes(const std::string& mangled_prefix);

// The functions (kernels, and device functions the compiler kept apart) of the student's worker
// that the reference's worker has no function of that name for (kit::sass::function_identifier:
// parameter types and template arguments aside), sorted. The kit's own code is in both, so what
// remains is the student's beyond the lab's kernels: work a test that reads a kernel by name
// would not see. Throws std::runtime_error when cuobjdump cannot read either worker.
std::vector<std::string> worker_functions_beyond_the_labs();

// The worker executable a lab's build names for each role (registered by the lab's judge-side
// calls at static initialisation); KIT_WORKER and KIT_REFERENCE_WORKER, where set, win.
bool set_default_worker_path(Role role, const char* path);
std::string default_worker_path(Role role);

// A lab's tests/calls_judge.cpp is compiled once per role (cmake/KitLab.cmake's
// kit_add_lab_calls), naming the role and its worker: this registers the worker and gives the
// role its calls go to.
inline Role judge_role(Role role, const char* worker) {
  set_default_worker_path(role, worker);
  return role;
}

// ---- the worker's side --------------------------------------------------------------------

// Sends a callback's arguments to the judge and returns its encoded result; throws
// std::runtime_error with the judge's text when the judge's function threw.
std::vector<char> call_back(std::vector<char> request);

// The worker's device copy of a staged array (kept between calls: common/src/remote_worker.cpp).
struct StagedCopy {
  void* device;
  std::size_t bytes;     // the array's, without the copy's zeroed tail
  std::uint64_t serial;  // the kit's ledger's number for the allocation (kit/device_memory.hpp)
};

// Decodes a call's arguments into the worker's own memory: device pointers mapped from the
// judge's handles, host arrays in buffers that live until the reply is sent. It mirrors JudgeArgs,
// method for method: each decode stands under the same name as the encode it must match.
class WorkerArgs {
 public:
  explicit WorkerArgs(Decoder& d) : d_(d) {}
  template <class T>
  void value(T& v) {
    ValueIn{d_}.value(v);
  }
  template <class T>
  void device(T*& pointer) {
    const auto kind = d_.get<std::uint8_t>();
    if (kind == 0) {
      pointer = nullptr;
    } else if (kind == 1) {
      pointer = static_cast<T*>(import_device_pointer(d_.get<DeviceRef>()));
    } else if (kind == 3) {
      pointer = static_cast<T*>(staged_array());
    } else {
      pointer = reinterpret_cast<T*>(d_.get<std::uint64_t>());
    }
  }
  template <class T>
  void host_in(T*& pointer, std::size_t count) {
    pointer = static_cast<T*>(host_array(count * sizeof(std::remove_const_t<T>), false));
  }
  template <class T>
  void host_out(T*& pointer, std::size_t count) {
    pointer = static_cast<T*>(host_array(count * sizeof(T), true));
  }
  template <class R, class... P>
  void callback(std::function<R(P...)>& function) {
    const auto index = d_.get<std::uint32_t>();
    function = [index](P... arguments) -> R {
      Encoder e;
      e.put<std::uint32_t>(index);
      (ValueOut{e}.value(arguments), ...);
      const std::vector<char> answer = call_back(std::move(e.buffer()));
      Decoder d(answer.data(), answer.size());
      R result{};
      ValueIn{d}.value(result);
      return result;
    };
  }
  // The reply: every host_out array and staged array to non-const as the call left it, in the
  // order of the call's arguments, then the result.
  Encoder& reply() { return reply_; }
  void write_outs();

  WorkerArgs(const WorkerArgs&) = delete;
  WorkerArgs& operator=(const WorkerArgs&) = delete;
  ~WorkerArgs();

 private:
  static void* import_device_pointer(const DeviceRef& ref);
  void* host_array(std::size_t bytes, bool out);
  void* staged_array();
  Decoder& d_;
  Encoder reply_;
  std::vector<std::vector<char>> arrays_;
  std::vector<StagedCopy> staged_;  // this call's device copies of the judge's staged arrays
  struct Out {
    bool staged;
    std::size_t index;  // into staged_ or arrays_
  };
  std::vector<Out> outs_;
};

using Handler = std::function<void(WorkerArgs&)>;
// Registers a call the worker serves (the lab's serve.cpp, at static initialisation).
bool add_handler(const std::string& name, Handler handler);

// What shared memory holds when a kernel of the student's code starts
// (common/src/shared_poison.cu): finite, so that a read of a slot no thread stored is told from a
// read past the end of an input (the guard bands' NaN), and no whole number, so that no term map
// reads it as a code.
constexpr float kStaleShared = 1.0009765625f;  // 1 + 2^-10

// While on, every kernel the worker's process launches (the student's, through the runtime's
// launch calls, which the worker's link wraps) is preceded, in its own stream, by a kernel that
// fills every SM's shared memory with kStaleShared. The worker turns it on for each call it
// serves, except the judge's timed calls.
void fill_before_launches(bool on);
// Every SM's shared memory set to `value`, now (what precedes each launch, with kStaleShared); a
// failure is left unreported, the calls then running as they would without it.
void fill_shared_memory(float value);

// Whether the student's code in this worker has set none of the CUDA settings that outlive a call
// (a kernel's attributes or cache preference, the device's limits or cache preference), which a
// new worker starts without (common/src/worker_state.cpp): such a worker serves no further test
// case. While a KitsOwnSettings lives on a thread, that thread's settings are the kit's own.
bool settings_kept_since_start();
class KitsOwnSettings {
 public:
  KitsOwnSettings();
  ~KitsOwnSettings();
  KitsOwnSettings(const KitsOwnSettings&) = delete;
  KitsOwnSettings& operator=(const KitsOwnSettings&) = delete;
};

template <class Call, class R, class... P>
bool serve(R (*function)(P...)) {
  return add_handler(Call::name, [function](WorkerArgs& w) {
    std::tuple<std::decay_t<P>...> arguments;
    std::apply([&w](auto&... a) { Call::args(w, a...); }, arguments);
    if constexpr (std::is_void_v<R>) {
      std::apply(function, arguments);
      w.write_outs();
    } else {
      auto result = std::apply(function, arguments);
      w.write_outs();
      ValueOut{w.reply()}.value(result);
    }
  });
}

}  // namespace kit::remote
