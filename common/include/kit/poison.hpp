// Poison and guard bands: making unwritten output and out-of-bounds accesses visible.
//
// The output is filled with kPoisonBits before a launch; an element that still holds that
// exact bit pattern afterwards was never written (a computed NaN has other bits).
// A guarded buffer has sentinel bands on both sides of the data: a write out of bounds
// changes a sentinel, and a read out of bounds of an input returns NaN and poisons the result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kit/device_buffer.hpp"

namespace kit {

constexpr std::uint32_t kPoisonBits = 0xFFFFFFFFu;    // a NaN; what cudaMemset(0xFF) writes
constexpr std::uint32_t kSentinelBits = 0x7FC0FFEEu;  // a quiet NaN with a payload

bool is_poison(float value);

// The float whose bits are kPoisonBits, for poisoning host arrays.
float poison_value();

// Fills a device float buffer with kPoisonBits.
void poison(float* d_data, std::size_t count);

// A device float buffer with `guard` sentinel floats before and after `count` data floats.
class GuardedBuffer {
 public:
  GuardedBuffer(std::size_t count, std::size_t guard = 1024);

  float* data() { return storage_.data() + guard_; }
  std::size_t size() const { return count_; }

  void copy_from_host(const float* h_src);
  void copy_to_host(float* h_dst) const;
  void poison_data() { poison(data(), count_); }

  // Empty when every sentinel is intact; otherwise says how many changed and where.
  std::string damaged_guards() const;

 private:
  std::size_t count_;
  std::size_t guard_;
  DeviceBuffer<float> storage_;
};

// The same layout in host memory, for a judge that hands its worker host arrays to stage
// (kit::remote::StagedArrays): the worker copies the whole storage, bands included, into device
// memory of its own, and back for an output, so a stray access meets the same sentinels.
class HostGuarded {
 public:
  HostGuarded(std::size_t count, std::size_t guard = 1024);

  float* data() { return storage_.data() + guard_; }
  float* storage() { return storage_.data(); }
  std::size_t storage_bytes() const { return storage_.size() * sizeof(float); }
  std::size_t size() const { return count_; }

  void copy_from_host(const float* h_src);
  void poison_data();
  std::vector<float> values() const;

  // As GuardedBuffer::damaged_guards.
  std::string damaged_guards() const;

 private:
  std::size_t count_;
  std::size_t guard_;
  std::vector<float> storage_;
};

}  // namespace kit
