// Order statistics of repeated measurements (order_stats.h).
#include "bench/order_stats.h"

#include <algorithm>
#include <cmath>

namespace dptree::bench {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

namespace {

// P(Binomial(n, 1/2) <= j), summed in logs so that n in the thousands does not overflow.
double binomial_half_cdf(std::size_t n, std::size_t j) {
  double sum = 0;
  for (std::size_t i = 0; i <= j; ++i)
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) -
                    static_cast<double>(n) * std::log(2.0));
  return sum;
}

}  // namespace

MedianInterval median_interval(std::vector<double> v, double confidence) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  if (n == 0) return {};
  const double tail = (1 - confidence) / 2;
  // The largest k (1-based rank) with P(X <= k - 1) <= tail: then the true median lies below
  // the k-th smallest value with probability at most `tail`, and likewise above the k-th largest.
  std::size_t k = 0;
  while (k + 1 <= n / 2 && binomial_half_cdf(n, k) <= tail) ++k;
  if (k == 0) return {v.front(), v.back(), false};
  return {v[k - 1], v[n - k], true};
}

}  // namespace dptree::bench
