// Every persistent index of the registry killed for real (tests/fixtures/
// kill_fixture.h): children writing to one pool file die by SIGKILL, some while they recover
// and, for the two DPTrees, some inside merges (small buffers: a merge every few hundred
// writes); the acknowledged writes must all be there after each kill, and the state
// accumulates over every kill. DPTREE_CRASH_SCALE multiplies the number of kills.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "dptree/registry.h"

#include "fixtures/kill_fixture.h"
#include "format/layout.h"

namespace dptree::testing {
namespace {

// A merge or its garbage collection was running when the kill came: the root's version
// word still carries in_merge, the GC bit or (the concurrent DPTree) its two-logs bit.
bool dptree_in_merge(const pm::Pool& pool) {
  const auto* root = pool.root<detail::Root>();
  constexpr std::uint64_t kTwoLogs = 4;  // cdptree's gv bit 2
  return root && (root->gv & (detail::kInMerge | detail::kInGc | kTwoLogs));
}

using Options = std::map<std::string, std::string>;

// The indexes this file kills, one test each below; the last test checks that it is every
// persistent index of the registry.
const std::set<std::string> kKilled = {"dptree", "cdptree", "fastfair", "fptree",
                                       "lbtree", "utree",   "cawbt",    "wort",
                                       "roart",  "pactree", "bm-btree", "tips-btree"};

// Kills children of `threads` writers on `index`, then expects the planned kills and enough
// of them inside recoveries and (with `in_merge`) inside merges.
void expect_kills(const std::string& index, unsigned threads, Options options,
                  std::function<bool(const pm::Pool&)> in_merge = nullptr) {
  ASSERT_TRUE(kKilled.contains(index)) << index << ": add it to kKilled";
  KillConfig c;
  c.index = index;
  c.threads = threads;
  c.options = std::move(options);
  c.in_merge = std::move(in_merge);
  auto r = run_kills(c);
  if (::testing::Test::HasFailure()) return;
  EXPECT_GE(r.kills, c.kills * crash_scale());
  EXPECT_GE(r.recovery_kills, 2u) << "too few kills landed while the child recovered";
  if (c.in_merge) {
    EXPECT_GE(r.merge_kills, 2u) << "too few kills landed inside a merge";
  }
}

// Two writers: background merges, 2 merge and 2 recovery workers.
TEST(ProcessKill, CDPTreeTwoWriters) {
  expect_kills("cdptree", 2,
               {{"leaf_capacity", "8"},
                {"log_partitions", "2"},
                {"log_page_size", "1024"},
                {"merge_ratio", "0.3"},
                {"min_merge_records", "16"},
                {"psize", "2"}},
               dptree_in_merge);
}

TEST(ProcessKill, DPTree) {
  expect_kills("dptree", 1,
               {{"leaf_capacity", "8"},
                {"merge_ratio", "0.3"},
                {"min_merge_records", "16"},
                {"log_page_size", "1024"}},
               dptree_in_merge);
}

// Background replay, short lanes and a tiny cache (as in the concurrent crash test).
TEST(ProcessKill, TipsTwoWriters) {
  expect_kills("tips-btree", 2,
               {{"replay", "background"},
                {"partitions", "2"},
                {"lane_records", "64"},
                {"ulog_lines", "256"},
                {"mlog_entries", "64"},
                {"cache_entries", "40"}});
}

TEST(ProcessKill, FastFairTwoWriters) {
  expect_kills("fastfair", 2, {{"node_bytes", "256"}});
}

TEST(ProcessKill, LBTreeTwoWriters) {
  expect_kills("lbtree", 2, {});
}

TEST(ProcessKill, RoartTwoWriters) {
  expect_kills("roart", 2, {});
}

TEST(ProcessKill, PacTreeTwoWriters) {
  expect_kills("pactree", 2, {});
}

// WORT is single-threaded: one writer.
TEST(ProcessKill, Wort) {
  expect_kills("wort", 1, {});
}

// 2-Tier-BM is single-threaded: one writer; small pages, one page of leaves in DRAM and a
// small log, so kills land in evictions, steals and checkpoints.
TEST(ProcessKill, BMBTree) {
  expect_kills("bm-btree", 1, {{"page_bytes", "256"}, {"dram_pct", "1"}, {"log_pct", "1"}});
}

TEST(ProcessKill, FPTreeTwoWriters) {
  expect_kills("fptree", 2, {{"leaf_capacity", "8"}});
}

TEST(ProcessKill, UTreeTwoWriters) {
  expect_kills("utree", 2, {{"leaf_slots", "16"}});
}

TEST(ProcessKill, CawbtTwoWriters) {
  expect_kills("cawbt", 2, {});
}

TEST(ProcessKill, EveryPersistentIndexOfTheRegistry) {
  for (const IndexInfo& i : registered_indexes()) {
    if (!i.persistent) continue;
    EXPECT_TRUE(kKilled.contains(i.name))
        << i.name << ": give it a test in tests/kill/process_kill_test.cc";
  }
}

}  // namespace
}  // namespace dptree::testing
