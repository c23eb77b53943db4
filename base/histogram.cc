#include "base/histogram.h"

#include <algorithm>
#include <bit>

namespace walfs {

int Histogram::BucketOf(std::uint64_t v) {
  if (v < kLinear) return static_cast<int>(v);
  const int msb = 63 - std::countl_zero(v);              // >= 4
  const int sub = static_cast<int>((v >> (msb - kSubBits)) & ((1 << kSubBits) - 1));
  return kLinear + (msb - 4) * (1 << kSubBits) + sub;
}

std::uint64_t Histogram::BucketUpper(int b) {
  if (b < kLinear) return static_cast<std::uint64_t>(b);
  const int octave = (b - kLinear) >> kSubBits;
  const int sub = (b - kLinear) & ((1 << kSubBits) - 1);
  const int msb = octave + 4;
  const std::uint64_t base = std::uint64_t{1} << msb;
  const std::uint64_t step = base >> kSubBits;
  return base + step * static_cast<std::uint64_t>(sub + 1) - 1;
}

void Histogram::Record(std::int64_t value) {
  const std::uint64_t v = value < 0 ? 0 : static_cast<std::uint64_t>(value);
  buckets_[BucketOf(v)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  std::int64_t m = max_.load(std::memory_order_relaxed);
  while (static_cast<std::int64_t>(v) > m &&
         !max_.compare_exchange_weak(m, static_cast<std::int64_t>(v),
                                     std::memory_order_relaxed)) {
  }
}

void Histogram::Merge(const Histogram& other) {
  for (int b = 0; b < kBuckets; ++b)
    buckets_[b].fetch_add(other.buckets_[b].load(std::memory_order_relaxed),
                          std::memory_order_relaxed);
  count_.fetch_add(other.Count(), std::memory_order_relaxed);
  sum_.fetch_add(other.sum_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  std::int64_t m = max_.load(std::memory_order_relaxed);
  const std::int64_t om = other.Max();
  while (om > m && !max_.compare_exchange_weak(m, om, std::memory_order_relaxed)) {
  }
}

void Histogram::Reset() {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  max_.store(0, std::memory_order_relaxed);
}

double Histogram::Mean() const {
  const std::uint64_t n = Count();
  return n == 0 ? 0.0 : static_cast<double>(sum_.load(std::memory_order_relaxed)) / n;
}

std::int64_t Histogram::Percentile(double q) const {
  const std::uint64_t n = Count();
  if (n == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const auto rank = static_cast<std::uint64_t>(q * static_cast<double>(n - 1)) + 1;
  std::uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[b].load(std::memory_order_relaxed);
    if (seen >= rank)
      return std::min(static_cast<std::int64_t>(BucketUpper(b)), Max());
  }
  return Max();
}

}  // namespace walfs
