// The bloom filters in front of the buffer tree (§2.1; the tree itself is btree.h's, tested in
// tests/bench/btree_test.cc): no false negative, and a false-positive rate near the one they
// were sized for.
#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include "engine/bloom.h"

namespace dptree::detail {
namespace {

template <class Filter>
double false_positive_rate(const Filter& f, std::size_t added) {
  std::size_t fp = 0;
  const std::size_t probes = 200000;
  for (u64 k = 0; k < probes; ++k) fp += f.may_contain(k * 2 + 1 + 2 * added);  // never added
  return static_cast<double>(fp) / probes;
}

TEST(Bloom, NoFalseNegativesAndTheRateItWasSizedFor) {
  for (double rate : {0.01, 0.03, 0.1}) {
    const std::size_t n = 50000;
    Bloom b;
    b.reset(n, rate);
    ConcurrentBloom cb(n, rate);
    for (u64 i = 0; i < n; ++i) {
      b.add(i * 2);
      cb.add(i * 2);
    }
    for (u64 i = 0; i < n; ++i) {
      ASSERT_TRUE(b.may_contain(i * 2)) << "false negative at " << i * 2;
      ASSERT_TRUE(b.may_contain_hashed(hash_key(i * 2)));
      ASSERT_TRUE(cb.may_contain(i * 2));
    }
    const double got = false_positive_rate(b, n);
    EXPECT_LT(got, rate * 1.5) << "sized for " << rate;
    EXPECT_GT(got, rate / 10) << "a filter far below its rate is larger than it needs to be";
    EXPECT_EQ(false_positive_rate(cb, n), got) << "both filters set the same bits";
  }
}

TEST(Bloom, ConcurrentAddsAreAllSeen) {
  ConcurrentBloom cb(40000, 0.03);
  std::vector<std::thread> ts;
  for (u64 t = 0; t < 4; ++t)
    ts.emplace_back([&cb, t] {
      for (u64 i = 0; i < 10000; ++i) cb.add(i * 4 + t);
    });
  for (auto& th : ts) th.join();
  for (u64 k = 0; k < 40000; ++k) ASSERT_TRUE(cb.may_contain(k)) << k;
}

}  // namespace
}  // namespace dptree::detail
