#include "kit/poison.hpp"

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

std::string GuardedBuffer::damaged_guards() const {
  std::vector<std::uint32_t> bits(storage_.size());
  KIT_CUDA_CHECK(
      cudaMemcpy(bits.data(), storage_.data(), storage_.bytes(), cudaMemcpyDeviceToHost));
  long long before = 0, after = 0, first_before = 0, first_after = 0;
  for (std::size_t i = 0; i < guard_; ++i) {
    if (bits[i] != kSentinelBits) {
      if (before++ == 0) first_before = static_cast<long long>(guard_ - i);
    }
    if (bits[guard_ + count_ + i] != kSentinelBits) {
      if (after++ == 0) first_after = static_cast<long long>(i);
    }
  }
  if (before == 0 && after == 0) return "";
  std::ostringstream out;
  out << "memory outside the " << count_ << "-element buffer was written:";
  if (before > 0)
    out << " " << before << " element(s) before its start (up to " << first_before << " before it)";
  if (after > 0)
    out << " " << after << " element(s) past its end (the first at index " << count_ + first_after
        << ")";
  return out.str();
}

}  // namespace kit
