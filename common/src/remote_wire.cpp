#include "remote_wire.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace kit::remote::wire {
namespace {

// A socket's write with MSG_NOSIGNAL: to a peer that is gone (a worker that died between calls,
// a judge that ended) it fails with EPIPE instead of raising SIGPIPE, which ended the judge and
// every test case left in it. Any other descriptor, written as ever.
ssize_t write_some(int fd, const char* data, std::size_t n) {
  const ssize_t done = ::send(fd, data, n, MSG_NOSIGNAL);
  return done < 0 && errno == ENOTSOCK ? ::write(fd, data, n) : done;
}

bool write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t done = write_some(fd, data, n);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) return false;
    data += done;
    n -= static_cast<std::size_t>(done);
  }
  return true;
}

// "" when n bytes were read; "closed" when the connection ended before the first byte.
std::string read_all(int fd, char* data, std::size_t n, int timeout_ms, bool first) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::size_t got = 0;
  while (got < n) {
    if (timeout_ms >= 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, left > 0 ? static_cast<int>(left) : 0);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) return "timeout";
      if (ready < 0) return std::string("poll failed: ") + std::strerror(errno);
    }
    const ssize_t done = ::read(fd, data + got, n - got);
    if (done < 0 && errno == EINTR) continue;
    if (done == 0) return first && got == 0 ? "closed" : "the connection ended inside a message";
    if (done < 0) return std::string("read failed: ") + std::strerror(errno);
    got += static_cast<std::size_t>(done);
  }
  return "";
}

}  // namespace

bool send_frame(int fd, const std::vector<char>& payload) {
  const std::uint64_t size = payload.size();
  return write_all(fd, reinterpret_cast<const char*>(&size), sizeof size) &&
         write_all(fd, payload.data(), payload.size());
}

std::string receive_frame(int fd, std::vector<char>& payload, std::size_t limit, int timeout_ms) {
  std::uint64_t size = 0;
  std::string why = read_all(fd, reinterpret_cast<char*>(&size), sizeof size, timeout_ms, true);
  if (!why.empty()) return why;
  if (size > limit) return "a message of " + std::to_string(size) + " bytes is over the limit";
  payload.resize(static_cast<std::size_t>(size));
  return read_all(fd, payload.data(), payload.size(), timeout_ms, false);
}

}  // namespace kit::remote::wire
