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

// P(Binomial(n, 1/2) = i), in logs so that n in the thousands does not overflow.
double binomial_half_pmf(std::size_t n, std::size_t i) {
  return std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) -
                  static_cast<double>(n) * std::log(2.0));
}

}  // namespace

MedianInterval median_interval(std::vector<double> v, double confidence) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  if (n == 0) return {};
  const double tail = (1 - confidence) / 2;
  // The largest k (1-based rank) with P(X <= k - 1) <= tail: then the true median lies below
  // the k-th smallest value with probability at most `tail`, and likewise above the k-th largest.
  // `cdf` is P(X <= k), summed as k grows.
  std::size_t k = 0;
  double cdf = binomial_half_pmf(n, 0);
  while (k + 1 <= n / 2 && cdf <= tail) cdf += binomial_half_pmf(n, ++k);
  if (k == 0) return {v.front(), v.back(), false};
  return {v[k - 1], v[n - k], true};
}

}  // namespace dptree::bench
