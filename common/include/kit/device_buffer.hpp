// An owning, move-only device allocation, so that every early return and exception frees
// what was allocated (lab 02 checks that the host code leaks nothing).
#pragma once

#include <cstddef>
#include <utility>

#include "kit/cuda_check.hpp"

namespace kit {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) KIT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
  }
  ~DeviceBuffer() { release(); }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  void copy_from_host(const T* h_src) {
    KIT_CUDA_CHECK(cudaMemcpy(data_, h_src, bytes(), cudaMemcpyHostToDevice));
  }
  void copy_to_host(T* h_dst) const {
    KIT_CUDA_CHECK(cudaMemcpy(h_dst, data_, bytes(), cudaMemcpyDeviceToHost));
  }

 private:
  void release() noexcept {
    // Not checked: a destructor must not throw, and after a sticky error cudaFree fails too.
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace kit
