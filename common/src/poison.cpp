#include "kit/poison.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <sstream>

namespace kit {

bool is_poison(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits == kPoisonBits;
}

float poison_value() {
  float value;
  std::memcpy(&value, &kPoisonBits, sizeof value);
  return value;
}

void poison(float* d_data, std::size_t count) {
  static_assert(kPoisonBits == 0xFFFFFFFFu, "poison() relies on cudaMemset writing 0xFF bytes");
  KIT_CUDA_CHECK(cudaMemset(d_data, 0xFF, count * sizeof(float)));
}

GuardedBuffer::GuardedBuffer(std::size_t count, std::size_t guard)
    : count_(count), guard_(guard), storage_(count + 2 * guard) {
  std::vector<std::uint32_t> sentinels(storage_.size(), kSentinelBits);
  KIT_CUDA_CHECK(
      cudaMemcpy(storage_.data(), sentinels.data(), storage_.bytes(), cudaMemcpyHostToDevice));
}

void GuardedBuffer::copy_from_host(const float* h_src) {
  KIT_CUDA_CHECK(cudaMemcpy(data(), h_src, count_ * sizeof(float), cudaMemcpyHostToDevice));
}

void GuardedBuffer::copy_to_host(float* h_dst) const {
  KIT_CUDA_CHECK(
      cudaMemcpy(h_dst, storage_.data() + guard_, count_ * sizeof(float), cudaMemcpyDeviceToHost));
}

namespace {

// What changed in the bands of a guarded storage of count data floats between guard-wide bands.
std::string describe_damage(const std::uint32_t* bits, std::size_t count, std::size_t guard) {
  long long before = 0, after = 0, first_before = 0, first_after = 0;
  for (std::size_t i = 0; i < guard; ++i) {
    if (bits[i] != kSentinelBits) {
      if (before++ == 0) first_before = static_cast<long long>(guard - i);
    }
    if (bits[guard + count + i] != kSentinelBits) {
      if (after++ == 0) first_after = static_cast<long long>(i);
    }
  }
  if (before == 0 && after == 0) return "";
  std::ostringstream out;
  out << "memory outside the " << count << "-element buffer was written:";
  if (before > 0)
    out << " " << before << " element(s) before its start (up to " << first_before << " before it)";
  if (after > 0)
    out << " " << after << " element(s) past its end (the first at index " << count + first_after
        << ")";
  return out.str();
}

float sentinel_value() {
  float value;
  std::memcpy(&value, &kSentinelBits, sizeof value);
  return value;
}

}  // namespace

std::string GuardedBuffer::damaged_guards() const {
  std::vector<std::uint32_t> bits(storage_.size());
  KIT_CUDA_CHECK(
      cudaMemcpy(bits.data(), storage_.data(), storage_.bytes(), cudaMemcpyDeviceToHost));
  return describe_damage(bits.data(), count_, guard_);
}

HostGuarded::HostGuarded(std::size_t count, std::size_t guard)
    : count_(count), guard_(guard), storage_(count + 2 * guard, sentinel_value()) {}

void HostGuarded::copy_from_host(const float* h_src) {
  std::memcpy(data(), h_src, count_ * sizeof(float));
}

void HostGuarded::poison_data() { std::fill(data(), data() + count_, poison_value()); }

std::vector<float> HostGuarded::values() const {
  const auto first = storage_.begin() + static_cast<std::ptrdiff_t>(guard_);
  return std::vector<float>(first, first + static_cast<std::ptrdiff_t>(count_));
}

std::string HostGuarded::damaged_guards() const {
  std::vector<std::uint32_t> bits(storage_.size());
  std::memcpy(bits.data(), storage_.data(), storage_bytes());
  return describe_damage(bits.data(), count_, guard_);
}

}  // namespace kit
