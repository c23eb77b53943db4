// Histogram: a lock-free log-linear histogram of non-negative values
// (latencies in ns, batch sizes), safe to record from many threads.
//
// Buckets: values below 16 are exact; above, each power of two is split in
// 8 sub-buckets, so a percentile is within 12.5% of the true value.  Counts
// are relaxed atomics: a concurrent reader sees each count atomically but
// not a consistent cut across buckets, which is fine for statistics.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace walfs {

class Histogram {
 public:
  Histogram() = default;
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Record(std::int64_t value);
  void Merge(const Histogram& other);
  void Reset();

  std::uint64_t Count() const { return count_.load(std::memory_order_relaxed); }
  std::int64_t Max() const { return max_.load(std::memory_order_relaxed); }
  std::uint64_t Sum() const { return sum_.load(std::memory_order_relaxed); }
  double Mean() const;
  // The value at quantile q in [0, 1] (upper bound of its bucket, clamped to Max()).
  std::int64_t Percentile(double q) const;

 private:
  static constexpr int kSubBits = 3;                     // 8 sub-buckets per octave
  static constexpr int kLinear = 16;                     // exact below this
  static constexpr int kBuckets = kLinear + (64 - 4) * (1 << kSubBits);

  static int BucketOf(std::uint64_t v);
  static std::uint64_t BucketUpper(int b);

  std::array<std::atomic<std::uint64_t>, kBuckets> buckets_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_{0};
  std::atomic<std::int64_t> max_{0};
};

}  // namespace walfs
