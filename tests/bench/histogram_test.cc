#include "bench/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "bench/random.h"

namespace dptree::bench {
namespace {

TEST(Histogram, BucketsTileTheValueRange) {
  for (std::size_t b = 0; b + 1 < Histogram::kBuckets; ++b) {
    ASSERT_LE(Histogram::bucket_low(b), Histogram::bucket_high(b));
    ASSERT_EQ(Histogram::bucket_high(b) + 1, Histogram::bucket_low(b + 1)) << "bucket " << b;
  }
  EXPECT_EQ(Histogram::bucket_high(Histogram::kBuckets - 1), ~std::uint64_t{0});
  Rng rng(1);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t v = rng.next() >> rng.below(64);
    const std::size_t b = Histogram::bucket_of(v);
    ASSERT_LE(Histogram::bucket_low(b), v);
    ASSERT_GE(Histogram::bucket_high(b), v);
    // Relative width at most 1/16 above the exact range.
    if (v >= 16) {
      ASSERT_LE(Histogram::bucket_high(b) - Histogram::bucket_low(b), v / 16);
    }
  }
}

TEST(Histogram, PercentilesMatchSortedTruthWithinOneBucket) {
  Rng rng(42);
  Histogram h;
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 200000; ++i) {
    // Log-normal-ish latencies: 100 ns .. ~1 ms with a long tail.
    const double x = 100 * std::exp(4 * rng.unit() * rng.unit() * 2);
    values.push_back(static_cast<std::uint64_t>(x));
    h.record(values.back());
  }
  std::sort(values.begin(), values.end());
  for (double p : {1.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100 * values.size()));
    const std::uint64_t truth = values[rank - 1];
    const std::uint64_t got = h.percentile(p);
    const auto bt = static_cast<long>(Histogram::bucket_of(truth));
    const auto bg = static_cast<long>(Histogram::bucket_of(got));
    EXPECT_LE(std::abs(bt - bg), 1) << "p" << p << ": truth " << truth << ", histogram " << got;
  }
  EXPECT_EQ(h.max(), values.back());
  EXPECT_EQ(h.min(), values.front());
  EXPECT_EQ(h.count(), values.size());
}

TEST(Histogram, SmallValuesAreExact) {
  Histogram h;
  for (std::uint64_t v = 1; v <= 10; ++v) h.record(v);
  EXPECT_EQ(h.percentile(50), 5u);
  EXPECT_EQ(h.percentile(90), 9u);
  EXPECT_EQ(h.percentile(100), 10u);
}

TEST(Histogram, MergeEqualsRecordingEverything) {
  Histogram a, b, all;
  Rng rng(3);
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t v = rng.below(1'000'000);
    (i % 2 ? a : b).record(v);
    all.record(v);
  }
  a.merge(b);
  for (double p : {50.0, 99.0, 99.99}) EXPECT_EQ(a.percentile(p), all.percentile(p));
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.max(), all.max());
}

TEST(Histogram, EmptyReportsZero) {
  Histogram h;
  EXPECT_EQ(h.percentile(99), 0u);
  EXPECT_EQ(h.max(), 0u);
}

}  // namespace
}  // namespace dptree::bench
