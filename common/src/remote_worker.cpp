// The worker's side of kit/remote.hpp: the main of every lab's worker executable. It serves
// the calls its lab registered (labs/NN_slug/worker.cpp), one at a time, on the descriptor the
// judge handed it, and ends when the judge closes the connection.
//
// Nothing here is trusted by the judge: the student's code shares this process and can change
// any of it. What this file does is make an honest worker useful (mapped buffers, exceptions
// carried back with their kind, a sticky CUDA error reported before the worker ends); the judge
// checks every result itself.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kit/cuda_check.hpp"
#include "kit/device_memory.hpp"
#include "kit/remote.hpp"
#include "remote_wire.hpp"

namespace kit::remote {
namespace {

std::map<std::string, Handler>& handlers() {
  static std::map<std::string, Handler> table;
  return table;
}

// Mapped judge allocations: opening one costs far more than a call's launch, and a test passes
// the same buffers many times. Keyed by the handle and the judge's serial number of the
// allocation: the driver can give a new allocation at a freed one's address the same handle,
// and a mapping of the freed one would take the call's writes where the judge never looks.
// Bounded, oldest closed first.
struct Mapping {
  std::string handle;
  std::uint64_t serial;
  void* base;
};
std::vector<Mapping>& mappings() {
  static std::vector<Mapping> open;
  return open;
}
constexpr std::size_t kMappingsKept = 32;

// The last call's device copies of staged arrays, kept for the next call: a test makes call after
// call of one shape, and a cudaMalloc and a cudaFree per matrix and call are trips into the
// driver, whose work for all the processes of a node is what bounds grading on several GPUs
// (bench/RESULTS.md, "Every GPU of a node"; what keeping them saved was not measured apart from
// the change it came with, "Starts outside the window"). A staged array takes a kept copy of its
// exact size, or allocates; whatever a call with staged arrays did not take is freed when it
// ends, so that between calls the worker holds at most one call's copies; and the judge drops
// them all after each test case (kit::remote::end_case), so that its counts of
// the worker's device memory see none of them. Every copy is written with the judge's bytes
// before the call, so nothing of an earlier call shows in it.
//
// Nor just past its end: each copy has a tail of kStagedTail bytes, zeroed before every call, so
// that a kernel that reads a little past an array (lab 04's load guard off by one) reads zeros,
// whatever earlier calls left in that memory. Such reads are judged by the guarded tests
// (kit::HostGuarded), whose bands lie within the array.
//
// The student's code shares this process and may free a copy or reset the device: a copy is kept
// and reused only while the kit's ledger still knows it as the allocation the worker made (its
// serial number, kit/device_memory.hpp) and the runtime still knows its address; any other is
// dropped without a cudaFree, which could free the student's own buffer at that address.
constexpr std::size_t kStagedTail = std::size_t(64) << 10;
std::vector<StagedCopy>& kept_copies() {
  static std::vector<StagedCopy> kept;
  return kept;
}

bool still_ours(const StagedCopy& copy) {
  if (copy.device == nullptr || allocation_serial(copy.device) != copy.serial) return false;
  cudaPointerAttributes attributes{};
  const bool known = cudaPointerGetAttributes(&attributes, copy.device) == cudaSuccess &&
                     attributes.type == cudaMemoryTypeDevice;
  (void)cudaGetLastError();  // a stale address's error is not the student's next call's
  return known;
}

void free_if_ours(const StagedCopy& copy) {
  if (still_ours(copy)) (void)cudaFree(copy.device);
  (void)cudaGetLastError();
}

StagedCopy staged_copy(std::size_t bytes) {
  std::vector<StagedCopy>& kept = kept_copies();
  for (auto copy = kept.begin(); copy != kept.end();) {
    if (copy->bytes != bytes) {
      ++copy;
    } else if (!still_ours(*copy)) {
      copy = kept.erase(copy);  // freed or gone with a reset: forgotten, not freed
    } else {
      const StagedCopy found = *copy;
      kept.erase(copy);
      return found;
    }
  }
  void* device = nullptr;
  KIT_CUDA_CHECK(cudaMalloc(&device, bytes + kStagedTail));
  return {device, bytes, allocation_serial(device)};
}

void drop_kept_copies() {
  std::vector<StagedCopy>& kept = kept_copies();
  for (const StagedCopy& copy : kept) free_if_ours(copy);
  kept.clear();
}

bool has_device() {
  static const bool found = [] {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  }();
  return found;
}

std::string cut(const std::string& text) {
  return text.size() <= kTextLimit ? text : text.substr(0, kTextLimit - 3) + "...";
}

std::vector<char> thrown(wire::Status status, const char* kind, const std::string& text,
                         int code = 0) {
  Encoder e;
  e.put(static_cast<std::uint8_t>(status));
  e.text(kind);
  e.text(cut(text));
  e.put(code);
  return std::move(e.buffer());
}

// Whether this process has made its CUDA context (the device's primary one, which the runtime
// uses), asked without making one: a call that never touched the device (lab 06's calculator,
// lab 05's configuration chooser) must not pay for a context after it (about 0.2 s on an H200).
bool has_context() {
  using PrimaryState = CUresult (*)(CUdevice, unsigned int*, int*);
  static const auto state =
      reinterpret_cast<PrimaryState>(driver_function("cuDevicePrimaryCtxGetState"));
  int device = 0;
  unsigned int flags = 0;
  int active = 1;
  if (state == nullptr || cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;  // cannot tell: check the device as if it had
  }
  return state(device, &flags, &active) != CUDA_SUCCESS || active != 0;
}

// Whether the device has done the work the case's calls gave it, asked without waiting on it, for
// up to a second: an event recorded on the legacy default stream, which every blocking stream's
// earlier work comes before (a student's own non-blocking streams are not asked: their work is
// waited for as before). A call that threw something other than a CUDA error skips the worker's
// wait for the device (serve_one), and one without staged arrays has none after it (~WorkerArgs),
// so a kernel it launched may still run at the case's end: for long, or for ever. A worker left
// so serves no further case: the next case's calls would queue behind that kernel, and fail or
// time out where a new worker's would not. Nor does its answer wait for that kernel (serve_one's
// check of the device after a call, or freeing the kept copies, would, up to the call's time
// limit). An error (a fault left behind) is no answer either: such a worker is replaced too.
bool device_work_done() {
  cudaEvent_t event = nullptr;
  if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess ||
      cudaEventRecord(event, cudaStreamLegacy) != cudaSuccess) {
    if (event != nullptr) (void)cudaEventDestroy(event);
    (void)cudaGetLastError();
    return false;
  }
  cudaError_t state = cudaEventQuery(event);
  for (int waited_ms = 0; state == cudaErrorNotReady && waited_ms < 1000; waited_ms += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    state = cudaEventQuery(event);
  }
  (void)cudaEventDestroy(event);  // released once it completes, if it has not
  (void)cudaGetLastError();
  return state == cudaSuccess;
}

// Set by end_case for the reply to its own call: serve_one then skips its wait for the device.
bool work_left_running = false;

// For the judge's kit::remote::end_case (common/src/worker_state.cpp says why).
bool end_case() {
  // The judge stops a worker left so; a worker without a context has nothing running.
  if (cuda_started() && has_device() && has_context() && !device_work_done()) {
    work_left_running = true;
    return false;
  }
  drop_kept_copies();
  if (cuda_started()) (void)cudaGetLastError();
  return settings_kept_since_start();
}
const bool end_case_served = serve<EndCase>(&end_case);

// After every call: the call's kernels finished, and any error they left, which the judge
// cannot see from its own context.
std::vector<char> device_error(const std::string& name) {
  if (!cuda_started() || !has_device() || !has_context()) return {};
  const cudaError_t code = cudaDeviceSynchronize();
  if (code == cudaSuccess) return {};
  const std::string text = name + ": the call's kernels failed: " + cudaGetErrorName(code) + " (" +
                           cudaGetErrorString(code) + ")";
  // Some errors end the context for good (an illegal address): a fresh worker serves the next call.
  (void)cudaGetLastError();
  const bool sticky = cudaDeviceSynchronize() != cudaSuccess;
  return thrown(sticky ? wire::Status::broken : wire::Status::threw, wire::kCuda,
                "kernel execution failed: " + text, static_cast<int>(code));
}

// The fill before each launch, on for one call's span (off again however the call ends).
class FillBeforeLaunches {
 public:
  explicit FillBeforeLaunches(bool on) { fill_before_launches(on); }
  ~FillBeforeLaunches() { fill_before_launches(false); }
  FillBeforeLaunches(const FillBeforeLaunches&) = delete;
  FillBeforeLaunches& operator=(const FillBeforeLaunches&) = delete;
};

std::vector<char> serve_one(const std::vector<char>& request) {
  Decoder d(request.data(), request.size());
  std::string name = d.text(256);
  // A call the judge is timing (kit::remote::TimedCalls): no fill of shared memory in its time.
  const bool timed = !name.empty() && name[0] == kTimedMark;
  if (timed) name.erase(0, 1);
  const auto found = handlers().find(name);
  if (found == handlers().end()) {
    return thrown(wire::Status::threw, wire::kOther, "this worker does not serve " + name);
  }
  WorkerArgs args(d);
  // Each kernel the call launches finds shared memory filled with the kit's value, never a 0 that
  // a diagnosis could take for a missing term (common/src/shared_poison.cu); a timed call's do not.
  const FillBeforeLaunches fill(!timed);
  try {
    found->second(args);
  } catch (const CudaError& e) {
    std::vector<char> failed = device_error(name);
    if (!failed.empty() && failed[0] == static_cast<char>(wire::Status::broken)) return failed;
    return thrown(wire::Status::threw, wire::kCuda, e.what(), static_cast<int>(e.code()));
  } catch (const std::invalid_argument& e) {
    return thrown(wire::Status::threw, wire::kInvalidArgument, e.what());
  } catch (const std::out_of_range& e) {
    return thrown(wire::Status::threw, wire::kOutOfRange, e.what());
  } catch (const std::exception& e) {
    return thrown(wire::Status::threw, wire::kOther, e.what());
  } catch (...) {
    return thrown(wire::Status::threw, wire::kOther,
                  name + " threw something that is not a std::exception");
  }
  // After end_case found work left running, its answer goes back now: the judge stops this worker.
  std::vector<char> failed =
      std::exchange(work_left_running, false) ? std::vector<char>{} : device_error(name);
  if (!failed.empty()) return failed;
  std::vector<char> reply{static_cast<char>(wire::Status::ok)};
  const std::vector<char>& payload = args.reply().buffer();
  reply.insert(reply.end(), payload.begin(), payload.end());
  return reply;
}

}  // namespace

bool add_handler(const std::string& name, Handler handler) {
  handlers()[name] = std::move(handler);
  return true;
}

std::vector<char> call_back(std::vector<char> request) {
  request.insert(request.begin(), static_cast<char>(wire::Status::callback));
  std::vector<char> answer;
  if (!wire::send_frame(wire::kWorkerFd, request) ||
      !wire::receive_frame(wire::kWorkerFd, answer, kMessageLimit, -1).empty() || answer.empty()) {
    std::_Exit(0);  // the judge has gone: nothing is left to serve
  }
  if (answer[0] != static_cast<char>(wire::Status::ok)) {
    Decoder d(answer.data() + 1, answer.size() - 1);
    throw std::runtime_error(d.text(kTextLimit));
  }
  return std::vector<char>(answer.begin() + 1, answer.end());
}

void* WorkerArgs::import_device_pointer(const DeviceRef& ref) {
  const std::string key(reinterpret_cast<const char*>(ref.handle), sizeof ref.handle);
  std::vector<Mapping>& open = mappings();
  if (ref.offset > ref.size) {
    throw std::invalid_argument("a device pointer's offset is past its allocation");
  }
  for (auto m = open.begin(); m != open.end(); ++m) {
    if (m->handle != key) continue;
    if (m->serial == ref.serial) return static_cast<char*>(m->base) + ref.offset;
    (void)cudaIpcCloseMemHandle(m->base);  // a freed allocation's: the handle is reused
    open.erase(m);
    break;
  }
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, ref.handle, sizeof handle);
  void* base = nullptr;
  KIT_CUDA_CHECK(cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess));
  if (open.size() >= kMappingsKept) {
    (void)cudaIpcCloseMemHandle(open.front().base);
    open.erase(open.begin());
  }
  open.push_back({key, ref.serial, base});
  return static_cast<char*>(base) + ref.offset;
}

void* WorkerArgs::host_array(std::size_t bytes, bool out) {
  if (d_.get<std::uint8_t>() == 0) return nullptr;
  if (d_.get<std::uint64_t>() != bytes) {
    throw std::invalid_argument(
        "a host array's size differs from what the call's description says");
  }
  const char* data = d_.take(bytes);
  arrays_.emplace_back(data, data + bytes);
  if (out) outs_.push_back({false, arrays_.size() - 1});
  return arrays_.back().data();
}

void* WorkerArgs::staged_array() {
  const auto offset = d_.get<std::uint64_t>();
  const bool back = d_.get<std::uint8_t>() != 0;
  const auto bytes = d_.get<std::uint64_t>();
  if (offset > bytes) throw std::invalid_argument("a staged array's offset is past its end");
  const char* data = d_.take(bytes);
  staged_.push_back(staged_copy(bytes));
  void* const device = staged_.back().device;
  KIT_CUDA_CHECK(cudaMemcpy(device, data, bytes, cudaMemcpyHostToDevice));
  KIT_CUDA_CHECK(cudaMemset(static_cast<char*>(device) + bytes, 0, kStagedTail));
  // From pageable memory cudaMemcpy may return before the data has landed, and the call's
  // kernels may run on a stream not ordered with the default one (cudaStreamNonBlocking): the
  // copy finishes before the student's code runs, or it could read an input half copied or find
  // the poison of P landing over what it wrote.
  KIT_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  if (back) outs_.push_back({true, staged_.size() - 1});
  return static_cast<char*>(device) + offset;
}

void WorkerArgs::write_outs() {
  bool synchronised = false;
  for (const Out& out : outs_) {
    if (!out.staged) {
      reply_.put<std::uint64_t>(arrays_[out.index].size());
      reply_.bytes(arrays_[out.index].data(), arrays_[out.index].size());
      continue;
    }
    // The call's kernels may run on any stream: all of them done before the copy back.
    if (!synchronised) KIT_CUDA_CHECK(cudaDeviceSynchronize());
    synchronised = true;
    const StagedCopy& s = staged_[out.index];
    std::vector<char> bytes(s.bytes);
    KIT_CUDA_CHECK(cudaMemcpy(bytes.data(), s.device, s.bytes, cudaMemcpyDeviceToHost));
    reply_.put<std::uint64_t>(s.bytes);
    reply_.bytes(bytes.data(), bytes.size());
  }
}

WorkerArgs::~WorkerArgs() {
  if (staged_.empty()) return;  // a call of other arguments leaves the kept copies as they are
  // Whatever the call left running is done before its copies serve another call: after a call
  // that threw something other than a CUDA error nothing has waited for the device yet (the reply
  // is made by now; an error found here shows at the next call, as a sticky one does). Not
  // checked: after a sticky error cudaFree fails too, and the worker is replaced anyway.
  (void)cudaDeviceSynchronize();
  drop_kept_copies();
  std::vector<StagedCopy>& kept = kept_copies();
  for (const StagedCopy& copy : staged_) {
    if (still_ours(copy)) kept.push_back(copy);
  }
}

}  // namespace kit::remote

int main() {
  using namespace kit::remote;
  // Every module of the worker loaded with its context, before any call: loaded lazily, at a
  // kernel's first launch, the load came between the fill of shared memory and that kernel and
  // took the fill away, while other processes used the device (bench/RESULTS.md, "Shared memory
  // and barriers"). No CUDA call has been made yet, so the runtime still reads this.
  ::setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  std::vector<char> request;
  for (;;) {
    const std::string why = wire::receive_frame(wire::kWorkerFd, request, kMessageLimit, -1);
    if (why == "closed") return 0;
    if (!why.empty()) {
      std::fprintf(stderr, "kit worker: %s\n", why.c_str());
      return 1;
    }
    std::vector<char> reply;
    try {
      reply = serve_one(request);
    } catch (const std::exception& e) {  // a request this worker could not decode
      std::vector<char> failed{static_cast<char>(wire::Status::threw)};
      Encoder e2;
      e2.text(wire::kOther);
      e2.text(std::string("the worker could not read the request: ") + e.what());
      e2.put(0);
      failed.insert(failed.end(), e2.buffer().begin(), e2.buffer().end());
      reply = std::move(failed);
    }
    if (!wire::send_frame(wire::kWorkerFd, reply)) return 0;
    if (!reply.empty() && reply[0] == static_cast<char>(wire::Status::broken)) return 0;
  }
}
