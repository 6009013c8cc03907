// The latency histogram (histogram.h): merging threads' histograms and reading percentiles.
#include "bench/histogram.h"

#include <algorithm>
#include <cmath>

namespace dptree::bench {

void Histogram::merge(const Histogram& o) {
  for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
  count_ += o.count_;
  max_ = std::max(max_, o.max_);
  min_ = std::min(min_, o.min_);
}

std::uint64_t Histogram::percentile(double p) const {
  if (count_ == 0) return 0;
  // The rank (1-based) of the wanted value in sorted order.
  auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < kBuckets; ++b) {
    seen += counts_[b];
    if (seen >= rank) {
      const std::uint64_t lo = bucket_low(b), hi = bucket_high(b);
      return std::clamp(lo + (hi - lo) / 2, min(), max());
    }
  }
  return max();
}

}  // namespace dptree::bench
