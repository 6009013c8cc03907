// A full pool in the middle of a merge (§2.3) needs no reopen: the merge is undone online,
// the tree stays consistent and usable with every acknowledged write, deletes free space,
// and later writes succeed or fail cleanly with Error(pool_full).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "dptree/dptree.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "fixtures/tree_expect.h"
#include "small_options.h"

namespace dptree {
namespace {

using testing::expect_contents;
using testing::expect_pool_full;
using testing::is_pool_full;

// Small leaves and a 1 MiB pool: the pool fills within a few thousand writes.
DPTreeOptions small(SplitMode split = SplitMode::rebuild) {
  auto o = small_options(32, 0.2, 64);
  o.split = split;
  return o;
}

// The contents, then the size and check().
void expect_matches(const DPTreeCore& t, const std::map<Key, Value>& model) {
  const bool failed_before = ::testing::Test::HasFatalFailure();
  expect_contents(t, model);
  if (!failed_before && ::testing::Test::HasFatalFailure()) return;  // its ASSERTs end here
  EXPECT_EQ(t.size(), model.size());
  auto r = t.check();
  EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
}

// Inserts until a write itself is refused; merges fail before that (the write that triggers
// a failing merge succeeds: it is in the log and the buffer). Then checks the undone state.
void fill_until_refused(DPTreeCore& tree, std::map<Key, Value>& model, std::vector<Key>& order,
                        std::mt19937_64& rng) {
  DPTreeCore* t = &tree;
  bool refused = false;
  for (int i = 0; i < 1000000 && !refused; ++i) {
    Key k = rng();
    try {
      t->upsert(k, static_cast<Value>(i));
      model[k] = static_cast<Value>(i);
      order.push_back(k);
    } catch (const Error& e) {
      ASSERT_TRUE(is_pool_full(e)) << e.what();
      refused = true;
      ASSERT_FALSE(t->lookup(k).has_value()) << "a refused write left nothing behind";
    }
  }
  ASSERT_TRUE(refused);
  auto s = t->stats();
  EXPECT_GT(s.failed_merges, 0u);
  EXPECT_GT(s.undone_leaves, 0u) << "some merge failed in its middle, after creating leaves";
  EXPECT_GT(s.merges, 0u);
  EXPECT_GT(s.buffer_entries, 64u) << "the writes of the failed merges wait in the buffer";
  expect_matches(*t, model);
  // An explicit merge reports pool_full and changes nothing.
  expect_pool_full([&] { t->merge(); }, "merge was undone", "merge succeeded in a full pool");
  expect_matches(*t, model);

  // While the merge is blocked, new values are refused cleanly (nothing logged).
  expect_pool_full([&] { t->upsert(12345, 1); }, "remove keys",
                   "a write was taken while the merge is blocked");
  expect_matches(*t, model);
}

// Both splits, several seeds: no pool state may leave the tree unable to merge once writes
// are removed (the merge needs no PM block before its first new leaf, layout.h kInGc).
class DPTreePoolFull : public ::testing::TestWithParam<std::tuple<SplitMode, std::uint64_t>> {};

TEST_P(DPTreePoolFull, MergeIsUndoneAndTheTreeKeepsWorking) {
  const auto [split, seed] = GetParam();
  auto pool = pm::Pool::create_in_memory(1 << 20);
  auto t = DPTree<>::create(*pool, small(split));
  std::map<Key, Value> model;
  std::mt19937_64 rng(seed);
  std::vector<Key> order;  // keys in the order they were written
  fill_until_refused(*t, model, order, rng);
  if (HasFatalFailure()) return;
  if (split == SplitMode::keep_last) {
    EXPECT_GT(t->stats().kept_splits, 100u);
  }

  // Deletes free space: remove keys in rounds (a remove whose log record finds no page fails
  // cleanly and changes nothing) and retry the merge after each round, until one fits.
  // Newest first, as a bulk load rolled back would: the removes cancel the writes waiting in
  // the buffer (the merge then needs no new leaves for them), then empty base leaves, which
  // the merge consolidates away. (Removing random keys instead does not help while the
  // buffer's new keys still need more leaves than the pool has: see docs/dptree.md.)
  std::vector<Key> keys(order.rbegin(), order.rend());
  std::size_t next = 0, removed = 0;
  bool merged = false;
  for (int round = 0; round < 50 && !merged; ++round) {
    for (int i = 0; i < 200 && next < keys.size(); ++i, ++next) {
      try {
        ASSERT_TRUE(t->remove(keys[next]));
        model.erase(keys[next]);
        ++removed;
      } catch (const Error& e) {
        ASSERT_TRUE(is_pool_full(e)) << e.what();
        ASSERT_TRUE(t->lookup(keys[next]).has_value());
        break;
      }
    }
    try {
      t->merge();
      merged = true;
    } catch (const Error& e) {
      ASSERT_TRUE(is_pool_full(e)) << e.what();
    }
    expect_matches(*t, model);
  }
  ASSERT_TRUE(merged) << "no merge fit after " << removed << " removes";
  EXPECT_GT(removed, 0u);
  EXPECT_EQ(t->stats().buffer_entries, 0u);
  expect_matches(*t, model);
  // With merges fitting again, removing half the keys (in key order) frees whole leaves.
  auto st = t->stats();
  std::vector<Key> low;
  for (auto& [k, v] : model)
    if (low.size() < model.size() / 2) low.push_back(k);
  for (Key k : low) {
    ASSERT_TRUE(t->remove(k));
    model.erase(k);
  }
  t->merge();
  EXPECT_LT(t->stats().leaves, st.leaves * 2 / 3) << "emptied leaves were consolidated away";
  EXPECT_GT(t->stats().leaves_freed, st.leaves_freed + st.leaves / 3);
  EXPECT_LT(t->stats().pm_bytes, st.pm_bytes);
  expect_matches(*t, model);
  // More writes: they succeed now (space was freed), or fail cleanly.
  std::size_t ok = 0;
  for (int i = 0; i < 5000; ++i) {
    Key k = rng();
    try {
      t->upsert(k, static_cast<Value>(i));
      model[k] = static_cast<Value>(i);
      ++ok;
    } catch (const Error& e) {
      ASSERT_TRUE(is_pool_full(e)) << e.what();
    }
  }
  EXPECT_GT(ok, 1000u);
  expect_matches(*t, model);
  // And the pool reopens (recovers) to the same contents.
  t.reset();
  t = DPTree<>::open(*pool, small(split));
  expect_matches(*t, model);
}

INSTANTIATE_TEST_SUITE_P(SplitsAndSeeds, DPTreePoolFull,
                         ::testing::Combine(::testing::Values(SplitMode::rebuild,
                                                              SplitMode::keep_last),
                                            ::testing::Range<std::uint64_t>(1, 9)));

// The same undo with split=keep_last: merges that kept old leaves (their version nv changed
// in place) and failed are undone, the tree matches the model, and it reopens to it.
TEST(DPTreePoolFull, KeepLastMergeIsUndone) {
  for (std::uint64_t seed : {7, 8}) {
    auto pool = pm::Pool::create_in_memory(1 << 20);
    auto t = DPTree<>::create(*pool, small(SplitMode::keep_last));
    std::map<Key, Value> model;
    std::mt19937_64 rng(seed);
    std::vector<Key> order;
    fill_until_refused(*t, model, order, rng);
    if (HasFatalFailure()) return;
    EXPECT_GT(t->stats().kept_splits, 100u);
    t.reset();
    t = DPTree<>::open(*pool, small(SplitMode::keep_last));
    expect_matches(*t, model);
  }
}

}  // namespace
}  // namespace dptree
