// Medians of repeated measurements and how far each can be trusted: the distribution-free
// confidence interval of a median from order statistics (the sign test's interval), used where
// rounds of a noisy machine are summarised, as by `dptree harness`.
#pragma once

#include <cstddef>
#include <vector>

namespace dptree::bench {

// The median of `v` (the mean of the two middle values for an even count); 0 when empty.
double median(std::vector<double> v);

// An interval [low, high] that holds the true median with at least `confidence` whatever the
// distribution: the k-th smallest and k-th largest values, with k the largest rank such that
// P(Binomial(n, 1/2) < k) <= (1 - confidence) / 2. With too few values for any such k (n < 6 at
// 95%) it is the whole range and `exact` is false.
struct MedianInterval {
  double low = 0, high = 0;
  bool exact = false;  // the interval reaches `confidence`; false: only the range
};
MedianInterval median_interval(std::vector<double> v, double confidence = 0.95);

}  // namespace dptree::bench
