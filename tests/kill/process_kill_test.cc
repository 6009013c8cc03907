// Every persistent index of the DPTree paper's comparison killed for real (tests/fixtures/
// kill_fixture.h): children writing to one pool file die by SIGKILL, some while they recover
// and, for the two DPTrees, some inside merges (small buffers: a merge every few hundred
// writes); the acknowledged writes must all be there after each kill, and the state
// accumulates over every kill. DPTREE_CRASH_SCALE multiplies the number of kills.
#include <gtest/gtest.h>

#include "dptree/layout.h"
#include "fixtures/kill_fixture.h"

namespace dptree::testing {
namespace {

// A merge or its garbage collection was running when the kill came: the root's version
// word still carries in_merge, the GC bit or (the concurrent DPTree) its two-logs bit.
bool dptree_in_merge(const pm::Pool& pool) {
  const auto* root = pool.root<detail::Root>();
  constexpr std::uint64_t kTwoLogs = 4;  // cdptree's gv bit 2
  return root && (root->gv & (detail::kInMerge | detail::kInGc | kTwoLogs));
}

void expect_kills(const KillConfig& c) {
  auto r = run_kills(c);
  if (::testing::Test::HasFailure()) return;
  EXPECT_GE(r.kills, c.kills * crash_scale());
  EXPECT_GE(r.recovery_kills, 2u) << "too few kills landed while the child recovered";
  if (c.in_merge) {
    EXPECT_GE(r.merge_kills, 2u) << "too few kills landed inside a merge";
  }
}

TEST(ProcessKill, CDPTreeTwoWriters) {
  KillConfig c;
  c.index = "cdptree";
  c.threads = 2;  // background merges, 2 merge and 2 recovery workers
  c.options = {{"leaf_capacity", "8"}, {"log_partitions", "2"},     {"log_page_size", "1024"},
               {"merge_ratio", "0.3"}, {"min_merge_records", "16"}, {"psize", "2"}};
  c.in_merge = dptree_in_merge;
  expect_kills(c);
}

TEST(ProcessKill, DPTree) {
  KillConfig c;
  c.index = "dptree";
  c.options = {{"leaf_capacity", "8"},
               {"merge_ratio", "0.3"},
               {"min_merge_records", "16"},
               {"log_page_size", "1024"}};
  c.in_merge = dptree_in_merge;
  expect_kills(c);
}

TEST(ProcessKill, TipsTwoWriters) {
  KillConfig c;
  c.index = "tips-btree";
  c.threads = 2;
  c.options = {{"replay", "background"}, {"partitions", "2"},    {"lane_records", "64"},
               {"ulog_lines", "256"},    {"mlog_entries", "64"}, {"cache_entries", "40"}};
  expect_kills(c);
}

TEST(ProcessKill, FastFairTwoWriters) {
  KillConfig c;
  c.index = "fastfair";
  c.threads = 2;
  c.options = {{"node_bytes", "256"}};
  expect_kills(c);
}

TEST(ProcessKill, LBTreeTwoWriters) {
  KillConfig c;
  c.index = "lbtree";
  c.threads = 2;
  expect_kills(c);
}

}  // namespace
}  // namespace dptree::testing
