// The frames both sides of kit/remote.hpp exchange over their socket: an 8-byte length, then the
// payload. Private to common/src.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kit::remote::wire {

// A reply's first byte.
enum class Status : std::uint8_t {
  ok = 0,        // the call returned: its host arrays and result follow
  threw = 1,     // the call threw: the exception's kind and text follow
  broken = 2,    // as threw, and the worker ends after this reply (a sticky CUDA error)
  callback = 3,  // not a reply: the worker calls one of the call's callbacks, and waits
};

// The kinds of exception that cross, by the name the judge rethrows them as.
inline const char* const kInvalidArgument = "invalid_argument";
inline const char* const kOutOfRange = "out_of_range";
inline const char* const kCuda = "cuda";
inline const char* const kOther = "runtime_error";

// The file descriptor a worker reads requests from and writes replies to.
constexpr int kWorkerFd = 3;

// Writes one frame; false when the other side has gone.
bool send_frame(int fd, const std::vector<char>& payload);

// Reads one frame of at most `limit` bytes into `payload`. Returns "" on success, else why not
// ("closed" when the other side closed the connection before a frame began). A timeout below 0
// waits for ever.
std::string receive_frame(int fd, std::vector<char>& payload, std::size_t limit, int timeout_ms);

}  // namespace kit::remote::wire
