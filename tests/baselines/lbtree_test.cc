// LB+-Tree-specific tests (the generic model and crash runs are in generic_peers_test.cc): entry
// moving and splits happen, what 8-byte units break, and its inner nodes against std::map.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "baselines/lbtree/inner_nodes.h"

#include "baselines/broken_images.h"
#include "dptree/error.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

TEST(LBTree, EntryMovingAndSplits) {
  ModelConfig c;
  c.index = "lbtree";
  c.ops = 20000;
  c.key_space = 3000;
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["entry_moves"], 100);
  EXPECT_GT(r.extra["splits"], 100);
}

// IndexConfig::threads = 1: no inner or leaf lock is taken; the same model holds.
TEST(LBTree, OneThreadConfiguration) {
  // Three reopens: the one-thread index recovers too.
  ModelConfig c = model_config("lbtree", 2, 20000, 3000, ModelConfig{}.check_every, 6000);
  c.threads = 1;
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(r.reopens, 3u);
  EXPECT_GT(r.records, 1000u);
}

// The line-0 insert writes entry, fingerprint and bitmap into one line and flushes it once:
// if only 8-byte words reach PM whole, the bitmap can land without the entry.
TEST(LBTree, Line0InsertNeedsWholeLines) {
  EXPECT_GT(broken_in_8_byte_units("lbtree", 43), 0u)
      << "expected a torn line-0 insert to break an image";
}

// The inner nodes route every key to the child of the greatest range start at or below it, as
// a std::map's floor does, through random and then ascending inserts (recovery's order).
TEST(LBInnerNodes, RouteAsAFloorInStdMap) {
  baselines::LBInnerNodes t;
  std::mt19937_64 rng(11);
  for (int round = 0; round < 2; ++round) {
    t.reset(7);
    std::map<Key, std::uint64_t> m{{0, 7}};
    EXPECT_FALSE(t.insert(0, 8)) << "the leftmost range starts at 0";
    for (std::uint64_t i = 1; i <= 20000; ++i) {
      const Key k = round == 0 ? rng() % 1000000 + 1 : i * 3;
      EXPECT_EQ(t.insert(k, i), m.emplace(k, i).second) << "key " << k;
    }
    ASSERT_TRUE(t.check().empty()) << t.check().front();
    EXPECT_GT(t.height(), 3u);
    for (int i = 0; i < 20000; ++i) {
      const Key k = rng() % 1100000;
      ASSERT_EQ(t.find(k), std::prev(m.upper_bound(k))->second) << "key " << k;
    }
    EXPECT_EQ(t.find(~Key{0}), m.rbegin()->second);
    std::vector<std::pair<Key, std::uint64_t>> all;
    t.for_each([&](Key k, std::uint64_t c) { all.emplace_back(k, c); });
    EXPECT_EQ(all, (std::vector<std::pair<Key, std::uint64_t>>(m.begin(), m.end())));
  }
}

}  // namespace
}  // namespace dptree::testing
