// Latency histogram with logarithmic buckets: values below 16 have a bucket each, above that
// every power of two is cut into 16 sub-buckets, so a bucket is at most 1/16 (6.25%) of its
// values wide. Fixed size (976 counters), no allocation while recording; threads record into
// their own histogram and the runner merges them.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace dptree::bench {

class Histogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr std::size_t kSub = std::size_t{1} << kSubBits;
  static constexpr std::size_t kBuckets = (64 - kSubBits + 1) * kSub;

  static std::size_t bucket_of(std::uint64_t v) {
    if (v < kSub) return static_cast<std::size_t>(v);
    const int e = 63 - std::countl_zero(v);  // >= kSubBits
    const std::uint64_t sub = (v >> (e - kSubBits)) & (kSub - 1);
    return static_cast<std::size_t>(e - kSubBits + 1) * kSub + static_cast<std::size_t>(sub);
  }
  // Smallest and largest value of bucket b.
  static std::uint64_t bucket_low(std::size_t b) {
    if (b < kSub) return b;
    const int e = static_cast<int>(b / kSub) + kSubBits - 1;
    return (kSub + b % kSub) << (e - kSubBits);
  }
  static std::uint64_t bucket_high(std::size_t b) {
    if (b < kSub) return b;
    const int e = static_cast<int>(b / kSub) + kSubBits - 1;
    return bucket_low(b) + ((std::uint64_t{1} << (e - kSubBits)) - 1);
  }

  void record(std::uint64_t v) {
    ++counts_[bucket_of(v)];
    ++count_;
    if (v > max_) max_ = v;
    if (v < min_) min_ = v;
  }
  void merge(const Histogram& o);

  std::uint64_t count() const { return count_; }
  std::uint64_t max() const { return count_ ? max_ : 0; }
  std::uint64_t min() const { return count_ ? min_ : 0; }
  // The value at percentile p (0 < p <= 100): the smallest recorded value such that p% of
  // the values are <= it, up to the bucket width (the bucket's middle, clamped to min/max).
  // 0 when empty.
  std::uint64_t percentile(double p) const;

 private:
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
};

}  // namespace dptree::bench
