// LB+-Tree-specific tests (the generic model and crash runs are in generic_peers_test.cc): entry
// moving and splits happen, what 8-byte units break, and its inner nodes against std::map.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "baselines/lbtree/inner_nodes.h"

#include "baselines/broken_images.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
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

// Ascending keys all go to the newest leaf. A split hands it the upper seven entries in slots
// 7-13 and the new key in slot 6, so its line 0 is free: three line-0 inserts, one entry move
// (the fourth insert, into line 1, takes two line-0 entries along), two more line-0 inserts,
// and the next split. One move per split, and each split flushes the new leaf and the sibling
// pointer under one fence before its commit's: 9 fences and 13 lines (3 + 2 + 2 line-0 and
// move lines, the new leaf's 4, the sibling pointer's and the commit's) per 7 inserts. A new leaf
// whose line 0 held moved entries would need a move on its first insert. In `pmem` mode on a CPU
// with clwb the inserts issue their persists inline and charge them up front: the same counts.
class LBTreeModes : public ::testing::TestWithParam<pm::Mode> {};
INSTANTIATE_TEST_SUITE_P(Modes, LBTreeModes, ::testing::Values(pm::Mode::dram, pm::Mode::pmem),
                         [](const auto& p) { return std::string(pm::to_string(p.param)); });

TEST_P(LBTreeModes, SplitLeavesTheNewLeafsLine0Free) {
  PmModeScope mode(GetParam());
  auto pool = pm::Pool::create_in_memory(64 << 20);
  IndexConfig cfg;
  cfg.pool = pool.get();
  cfg.threads = 1;
  auto idx = find_index("lbtree").create(cfg);
  constexpr Key kWarm = 700, kKeys = 7700;
  for (Key k = 1; k <= kWarm; ++k) idx->upsert(k, k);
  const double splits0 = extra_stat(*idx, "splits"), moves0 = extra_stat(*idx, "entry_moves");
  pm::reset_counters();
  for (Key k = kWarm + 1; k <= kKeys; ++k) idx->upsert(k, k);
  const double splits = extra_stat(*idx, "splits") - splits0;
  EXPECT_EQ(splits, (kKeys - kWarm) / 7);
  EXPECT_EQ(extra_stat(*idx, "entry_moves") - moves0, splits);
  EXPECT_EQ(pm::counters().total().fences, (kKeys - kWarm) / 7 * 9);
  EXPECT_EQ(pm::counters().total().lines, (kKeys - kWarm) / 7 * 13);
  for (Key k = 1; k <= kKeys; ++k) ASSERT_EQ(idx->lookup(k), std::optional<Value>(k)) << k;
  const auto report = idx->check();
  EXPECT_TRUE(report.ok) << (report.ok ? "" : report.problems.front());
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
// a std::map's floor does, through random and then ascending inserts (recovery's order). Every
// other new key goes in along the path of its own descent, as a leaf split's separator does.
TEST(LBInnerNodes, RouteAsAFloorInStdMap) {
  baselines::LBInnerNodes t;
  std::mt19937_64 rng(11);
  for (int round = 0; round < 2; ++round) {
    t.reset(7);
    std::map<Key, std::uint64_t> m{{0, 7}};
    EXPECT_FALSE(t.insert(0, 8)) << "the leftmost range starts at 0";
    for (std::uint64_t i = 1; i <= 20000; ++i) {
      const Key k = round == 0 ? rng() % 1000000 + 1 : i * 3;
      if (i % 2 == 0 && !m.contains(k)) {
        baselines::LBInnerNodes::Path path;
        ASSERT_EQ(t.find(k, path), std::prev(m.upper_bound(k))->second) << "key " << k;
        t.insert_along(path, k, i);
        m.emplace(k, i);
        continue;
      }
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
