// The DRAM parts in front of the base tree (§2.1): the buffer tree against std::map through
// several fill-and-clear cycles (its arena reuses every node), and the blocked bloom filters:
// no false negative, and a false-positive rate near the one they were sized for.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>
#include <vector>

#include "st/bloom.h"
#include "st/buffer_tree.h"

namespace dptree::detail {
namespace {

void expect_same_order(const BufferTree& t, const std::map<u64, u64>& model, u64 from) {
  auto it = t.lower_bound(from);
  for (auto m = model.lower_bound(from); m != model.end(); ++m, it.next()) {
    ASSERT_TRUE(it.valid()) << "iteration ends early at " << m->first;
    ASSERT_EQ(it.key(), m->first);
    ASSERT_EQ(it.value(), m->second);
  }
  EXPECT_FALSE(it.valid()) << "iteration goes past the last key";
}

TEST(BufferTree, MatchesAMapThroughFillAndClearCycles) {
  BufferTree t;
  std::mt19937_64 rng(5);
  for (int cycle = 0; cycle < 4; ++cycle) {
    std::map<u64, u64> model;
    const std::size_t n = 5000 + 7000 * static_cast<std::size_t>(cycle % 2);
    for (std::size_t i = 0; i < n; ++i) {
      const u64 k = rng() % 20000, v = rng();
      EXPECT_EQ(t.upsert(k, v), model.count(k) == 0) << "upsert reports whether the key is new";
      model[k] = v;
    }
    ASSERT_EQ(t.size(), model.size());
    for (u64 k = 0; k < 20000; ++k) {
      const u64* p = t.find(k);
      auto m = model.find(k);
      ASSERT_EQ(p != nullptr, m != model.end()) << "key " << k;
      if (p) {
        ASSERT_EQ(*p, m->second);
      }
    }
    expect_same_order(t, model, 0);
    expect_same_order(t, model, 12345);
    expect_same_order(t, model, ~u64{0});
    const std::size_t held = t.dram_bytes();
    t.clear();
    EXPECT_TRUE(t.empty());
    EXPECT_EQ(t.find(model.begin()->first), nullptr);
    EXPECT_EQ(t.dram_bytes(), held) << "clear keeps the nodes for the next cycle";
  }
}

TEST(BufferTree, ExtremeKeysAndSequentialRuns) {
  BufferTree t;
  std::map<u64, u64> model;
  for (u64 k = 0; k < 3000; ++k) {  // ascending and descending runs split the rightmost node
    t.upsert(k, k);
    t.upsert(~u64{0} - k, k);
    model[k] = k;
    model[~u64{0} - k] = k;
  }
  expect_same_order(t, model, 0);
  ASSERT_NE(t.find(~u64{0}), nullptr);
  EXPECT_EQ(*t.find(~u64{0}), 0u);
}

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
