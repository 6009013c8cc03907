// The median and its order-statistic confidence interval (bench/order_stats.h), against
// values worked out by hand from the binomial distribution.
#include "bench/order_stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace dptree::bench {
namespace {

std::vector<double> one_to(int n) {  // n, n-1, ..., 1: unsorted on purpose
  std::vector<double> v;
  for (int i = n; i >= 1; --i) v.push_back(i);
  return v;
}

TEST(OrderStats, MedianOfOddEvenAndEmpty) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({}), 0);
}

// n = 20: P(X <= 5) = 0.0207 and P(X <= 6) = 0.0577 for X ~ Binomial(20, 1/2), so the 95%
// interval runs from the 6th smallest to the 6th largest value (ranks 6 and 15).
TEST(OrderStats, TwentyValuesGiveRanksSixAndFifteen) {
  const MedianInterval i = median_interval(one_to(20));
  EXPECT_TRUE(i.exact);
  EXPECT_EQ(i.low, 6);
  EXPECT_EQ(i.high, 15);
}

// n = 6 is the first count where even the extremes reach 95% (P(X = 0) = 1/64 <= 0.025);
// at n = 5 (1/32 > 0.025) no interval does, and the range is given as not exact.
TEST(OrderStats, TooFewValuesGiveTheRangeNotExact) {
  MedianInterval i = median_interval(one_to(6));
  EXPECT_TRUE(i.exact);
  EXPECT_EQ(i.low, 1);
  EXPECT_EQ(i.high, 6);
  i = median_interval(one_to(5));
  EXPECT_FALSE(i.exact);
  EXPECT_EQ(i.low, 1);
  EXPECT_EQ(i.high, 5);
  EXPECT_FALSE(median_interval({}).exact);
}

// A lower confidence narrows the interval: n = 20 at 80% (P(X <= 6) = 0.0577 <= 0.1,
// P(X <= 7) = 0.1316 > 0.1) gives ranks 7 and 14.
TEST(OrderStats, LowerConfidenceNarrowsTheInterval) {
  const MedianInterval i = median_interval(one_to(20), 0.80);
  EXPECT_EQ(i.low, 7);
  EXPECT_EQ(i.high, 14);
}

// Large counts do not overflow: n = 1,000 gives about median +- 1.96 sqrt(n) / 2 ranks
// (ranks 469 and 532 by the exact sum).
TEST(OrderStats, ThousandValuesStayNearTheNormalApproximation) {
  const MedianInterval i = median_interval(one_to(1000));
  EXPECT_TRUE(i.exact);
  EXPECT_EQ(i.low, 469);
  EXPECT_EQ(i.high, 532);
}

}  // namespace
}  // namespace dptree::bench
