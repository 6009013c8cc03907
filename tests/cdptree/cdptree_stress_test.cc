// The concurrent DPTree under several threads (oversubscribed on purpose; run under TSan
// too): the shared stress fixture with merges running all the time (small R and trigger, a
// background merge with parallel workers), and the metadata rebuild after a restart
// synchronised by the lock bit of each leaf's restart counter (§3.2).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "dptree/cdptree.h"
#include "dptree/pm/pool.h"
#include "dptree/testing/phases.h"
#include "fixtures/stats_watch.h"
#include "fixtures/stress_fixture.h"

namespace dptree::testing {
namespace {

std::map<std::string, std::string> busy() {
  return {{"leaf_capacity", "16"}, {"log_partitions", "4"},     {"log_page_size", "1024"},
          {"merge_ratio", "0.05"}, {"min_merge_records", "32"}, {"psize", "4"},
          {"merge_threads", "2"},  {"recovery_threads", "2"}};
}

class CDPTreeStress : public ::testing::TestWithParam<unsigned> {};

TEST_P(CDPTreeStress, ReadsAreFreshAndTheFinalStateIsAWriteOrder) {
  StressConfig c;
  c.index = "cdptree";
  c.options = busy();
  c.pool_bytes = 32u << 20;
  c.threads = GetParam();
  c.ops_per_thread = 60000 / GetParam();
  c.key_space = 3000;
  c.seed = GetParam();
  // With merges back to back, removes rarely find nomerge: the in-place path is asserted
  // in the test below, where merges are rare. stats() races with the workers.
  c.during = watch_during({}, std::chrono::milliseconds(2));
  auto r = run_stress(c);
  EXPECT_EQ(r.failures, 0u);
  EXPECT_GE(r.live_extra["merges"], 2) << "merges must run during the stress";
}

INSTANTIATE_TEST_SUITE_P(Threads, CDPTreeStress, ::testing::Values(2u, 4u, 8u));

// split=thirds while merges run all the time: pairs of leaves rewritten by the parallel merge
// workers while readers and writers go on. Whether a merge meets a leaf that must split beside
// one it may take from depends on the threads' interleaving (about one process in six made no
// pair split in a run): runs go on, each with a new seed, until one has made pair splits, so
// that the rounds asserted correct include a pair split's.
TEST(CDPTreeStress, SplitInThirdsUnderReadersAndWriters) {
  const std::size_t pairs_before = dptree_pair_splits_total();
  for (unsigned round = 0; round < 6 && dptree_pair_splits_total() == pairs_before; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    StressConfig c;
    c.index = "cdptree";
    c.options = busy();
    c.options["split"] = "thirds";
    c.pool_bytes = 32u << 20;
    c.threads = 4;
    c.ops_per_thread = 15000;
    c.key_space = 3000;
    c.seed = 14 + round;
    c.during = watch_during({}, std::chrono::milliseconds(2));
    auto r = run_stress(c);
    EXPECT_EQ(r.failures, 0u);
    EXPECT_GE(r.live_extra["merges"], 2) << "merges must run during the stress";
  }
  EXPECT_GT(dptree_pair_splits_total(), pairs_before) << "no leaf split with its neighbour";
}

// merge_steps: the writers run each merge a step at a time between their writes (whichever
// writer finds a step due and the step lock free), while the other threads read, scan and write.
TEST(CDPTreeStress, MergesInStepsByTheWriters) {
  StressConfig c;
  c.index = "cdptree";
  c.options = busy();
  c.options["background_merge"] = "0";
  c.options["merge_steps"] = "1";
  c.pool_bytes = 32u << 20;
  c.threads = 4;
  c.ops_per_thread = 15000;
  c.key_space = 3000;
  c.seed = 31;
  c.during = watch_during({}, std::chrono::milliseconds(2));
  auto r = run_stress(c);
  EXPECT_EQ(r.failures, 0u);
  EXPECT_GE(r.live_extra["merges"], 2) << "merges must run during the stress";
  EXPECT_GT(r.live_extra["merge_steps_run"], 3 * r.live_extra["merges"])
      << "the merges must run in steps";
}

TEST(CDPTreeStress, ForcedMergesFromAnotherThread) {
  StressConfig c;
  c.index = "cdptree";
  c.options = busy();
  c.options["min_merge_records"] = "100000";  // only the forced merges below
  c.options["inplace_update"] = "1";
  c.pool_bytes = 32u << 20;
  c.threads = 3;
  c.ops_per_thread = 6000;
  c.key_space = 2000;
  // Index::drain from a fourth thread: it waits for a running merge and merges the Front,
  // while the writers go on.
  c.during = [](Index& idx) { idx.drain(); };
  auto r = run_stress(c);
  EXPECT_EQ(r.failures, 0u);
  EXPECT_GE(r.during_calls, 1u);
  EXPECT_GE(r.live_extra["merges"], 1) << "the forced merges ran";
}

// §3.4 under concurrency: merges far apart (R = 0.9), so removes of base-only keys find
// nomerge and take the in-place path while other threads read and write the same keys.
TEST(CDPTreeStress, RemovesInPlaceBetweenMerges) {
  StressConfig c;
  c.index = "cdptree";
  c.options = busy();
  c.options["merge_ratio"] = "0.9";
  c.options["min_merge_records"] = "400";
  c.pool_bytes = 32u << 20;
  c.threads = 2;
  c.ops_per_thread = 8000;
  // 10,000 preloaded keys, all merged into the base before the threads start: the run's
  // 7,200 writes stay below the next merge's threshold (R x base), so removes find no merge
  // running whatever the scheduler does (a merge running through the whole run on a loaded
  // machine made some runs see no in-place delete).
  c.key_space = 20000;
  c.drain_after_preload = true;
  c.during = watch_during({}, std::chrono::milliseconds(2));
  auto r = run_stress(c);
  EXPECT_EQ(r.failures, 0u);
  EXPECT_GE(r.live_extra["merges"], 1);
  EXPECT_GT(r.live_extra["inplace_deletes"], 0)
      << "removes must take the in-place path between merges";
}

// Leaves of `cap` slots and a small log, so that a few thousand keys make many leaves.
CDPTreeOptions small_leaves(std::size_t cap) {
  CDPTreeOptions o;
  o.leaf_capacity = cap;
  o.log_partitions = 4;
  o.log_page_size = 1024;
  return o;
}

// After a restart every leaf's partially persistent metadata is stale; many readers touch
// the same leaves at once and each leaf is rebuilt exactly once, under its lock bit.
TEST(CDPTreeLockBit, MetadataRebuiltOnceUnderConcurrentReaders) {
  auto pool = pm::Pool::create_in_memory(16u << 20);
  CDPTreeOptions o = small_leaves(16);
  o.background_merge = false;
  o.merge_threads = 2;
  const Key n = 3000;
  {
    auto t = CDPTree::create(*pool, o);
    for (Key k = 0; k < n; ++k) t->upsert(k, k + 1);
    t->merge();
  }
  auto t = CDPTree::open(*pool, o);
  const std::size_t leaves = t->stats().leaves;
  ASSERT_GT(leaves, 100u);
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 6; ++i)
    ts.emplace_back([&, i] {
      for (Key k = 0; k < n; ++k) {
        Key key = (k * 7 + static_cast<Key>(i) * 13) % n;
        if (t->lookup(key) != std::optional<Value>(key + 1)) bad.fetch_add(1);
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(bad.load(), 0);
  auto s = t->stats();
  EXPECT_EQ(s.lazy_rebuilds, leaves);
  EXPECT_TRUE(t->check().ok);
}

// An open with two recovery threads over a directory of several blocks: the owner
// directory's slots are checked and the leaves' max keys read on both threads at once
// (engine/validate.cc, cdptree/base.cc); every key is found and the tree checks clean.
TEST(CDPTreeRecovery, OpenChecksTheDirectoryAndReadsTheLeavesOnTwoThreads) {
  auto pool = pm::Pool::create_in_memory(32u << 20);
  CDPTreeOptions o = small_leaves(8);
  o.recovery_threads = 2;
  const Key n = 12000;
  {
    auto t = CDPTree::create(*pool, o);
    for (Key k = 0; k < n; ++k) t->upsert(k * 3, k + 1);
    t->wait_for_merge();  // merge() starts none while one runs
    t->merge();
    ASSERT_GT(t->stats().leaves, 2 * 511u) << "the directory must span several blocks";
  }
  auto t = CDPTree::open(*pool, o);
  for (Key k = 0; k < n; ++k) ASSERT_EQ(t->lookup(k * 3), std::optional<Value>(k + 1)) << k;
  EXPECT_TRUE(t->check().ok);
}

}  // namespace
}  // namespace dptree::testing
