// bm-btree (2-Tier-BM): the generic model and crash-simulation runs with pages small enough
// that the tree grows many levels, a buffer small enough that leaves are evicted constantly
// and a log small enough that checkpoints are frequent; and what the design promises: lines
// load one at a time, an insert in DRAM costs exactly its commit's two fences, a crash after a
// stolen line (a line of an operation in flight written back) is undone.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <ostream>
#include <string>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

using Options = std::map<std::string, std::string>;

// 256-byte pages: many levels from few keys, no mini pages (a page has 4 lines); 2048-byte
// pages: a mini page holds half a page.
Options small(const std::string& leaf, const std::string& dram_pct,
              const std::string& page = "256") {
  return {{"leaf", leaf}, {"page_bytes", page}, {"dram_pct", dram_pct}, {"log_pct", "1"}};
}

struct Case {
  std::string leaf, dram_pct, page = "256";
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.leaf << " leaves, dram_pct " << c.dram_pct << ", " << c.page << "-byte pages";
}

class BMBTreeModel : public ::testing::TestWithParam<Case> {};

// The counters are those of the last reopen's index (2,000 operations).
TEST_P(BMBTreeModel, ManySplitsEvictionsCheckpointsAndReopens) {
  auto c = model_config("bm-btree", 7, 30000, 3000, 3000, 7000);
  c.options = small(GetParam().leaf, GetParam().dram_pct, GetParam().page);
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  const bool mini = GetParam().page != "256";
  EXPECT_GT(r.extra["leaves"], mini ? 15 : 100);
  EXPECT_GE(r.extra["height"], mini ? 2 : 3);
  if (mini) {
    EXPECT_GT(r.extra["promotions"], 10);
  }
  if (!mini) {  // 2 KiB pages make a log of many operations
    EXPECT_GT(r.extra["checkpoints"], 3);
  }
  EXPECT_GE(r.reopens, 4u);
  if (GetParam().dram_pct != "100")
    EXPECT_GT(r.extra["evictions"], 100);
  else
    EXPECT_EQ(r.extra["evictions"], 0);
}

// One leaf frame: a split's new leaf is evicted as soon as it is unpinned, with the
// operation in flight, so the log is forced first (a steal).
TEST(BMBTree, SplitsStealWithOneLeafFrame) {
  auto c = model_config("bm-btree", 8, 6000, 1u << 30, 1000, 0);
  c.options = small("hash", "1");
  c.remove_weight = 5;
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["splits"], 100);
  EXPECT_GT(r.extra["steals"], 100);
  EXPECT_LE(r.extra["leaf_frames"], r.extra["leaf_budget"]);
}

TEST_P(BMBTreeModel, MostlyRemoves) {
  auto c = model_config("bm-btree", 9, 15000, 400, 500, 3000);
  c.options = small(GetParam().leaf, GetParam().dram_pct, GetParam().page);
  c.remove_weight = 45;
  run_model(c);
}

INSTANTIATE_TEST_SUITE_P(Leaves, BMBTreeModel,
                         ::testing::Values(Case{"hash", "1"}, Case{"hash", "30"},
                                           Case{"hash", "100"}, Case{"sorted", "1"},
                                           Case{"sorted", "100"}, Case{"hash", "1", "2048"},
                                           Case{"sorted", "1", "2048"}),
                         [](const auto& i) {
                           return i.param.leaf + "_" + i.param.dram_pct + "_" + i.param.page;
                         });

TEST(BMBTree, RefusesBadInput) {
  pm::set_mode(pm::Mode::dram);
  EXPECT_TRUE(find_index("bm-btree").persistent);
  EXPECT_FALSE(find_index("bm-btree").concurrent);  // the benchmark refuses --threads > 1
  auto pool = pm::Pool::create_in_memory(1 << 20);
  EXPECT_THROW(make_index("bm-btree", nullptr, {}), Error);
  for (const Options& bad :
       {Options{{"no_such_option", "1"}}, Options{{"dram_pct", "0"}}, Options{{"dram_pct", "101"}},
        Options{{"dram_pct", "x"}}, Options{{"page_bytes", "1000"}}, Options{{"page_bytes", "128"}},
        Options{{"leaf", "btree"}}, Options{{"log_pct", "0"}}})
    EXPECT_THROW(make_index("bm-btree", pool.get(), bad), Error) << bad.begin()->first;
  // A pool keeps its page size and leaf layout: other values are refused, not reinterpreted.
  make_index("bm-btree", pool.get(), {{"page_bytes", "512"}})->upsert(1, 2);
  EXPECT_THROW(make_index("bm-btree", pool.get(), {{"page_bytes", "1024"}}), Error);
  EXPECT_THROW(make_index("bm-btree", pool.get(), {{"leaf", "sorted"}}), Error);
  auto idx = make_index("bm-btree", pool.get(), {{"dram_pct", "5"}});
  EXPECT_EQ(idx->lookup(1), Value{2});
  idx.reset();
  // A pool whose root belongs to another index is refused.
  auto other = pm::Pool::create_in_memory(1 << 20);
  make_index("utree", other.get(), {}).reset();
  EXPECT_THROW(make_index("bm-btree", other.get(), {}), Error);
}

// Cache-line-grained pages: a lookup in a cold 16 KiB leaf loads the header line, the
// bitmap word's line and the slot's line, not the page.
TEST(BMBTree, LookupLoadsLinesNotPages) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(16 << 20);
  auto idx = make_index("bm-btree", pool.get(), {});
  for (Key k = 0; k < 20000; ++k) idx->upsert(k * 7919, k);
  idx.reset();  // a clean close; reopened, every frame is cold
  idx = make_index("bm-btree", pool.get(), {});
  const double before = extra_stat(*idx, "lines_loaded");
  EXPECT_EQ(idx->lookup(7919 * 123), Value{123});
  const double loaded = extra_stat(*idx, "lines_loaded") - before;
  const double height = extra_stat(*idx, "height");
  EXPECT_GE(height, 2);
  // Per inner page: header plus at most log2(keys) + 1 lines of keys and one of children.
  EXPECT_LE(loaded, (height - 1) * 12 + 4);
  EXPECT_GE(loaded, 3);
}

// Pointer swizzling: once a path is cached, a descent reaches each child through the frame
// pointer its cached parent keeps, not through the page table.
TEST(BMBTree, LookupsFollowSwizzledPointers) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(16 << 20);
  auto idx = make_index("bm-btree", pool.get(), {{"page_bytes", "1024"}});
  for (Key k = 0; k < 20000; ++k) idx->upsert(k * 7919, k);
  auto stat = [&](const std::string& name) { return extra_stat(*idx, name); };
  const double height = stat("height");
  ASSERT_GE(height, 3);
  for (Key k = 0; k < 1000; ++k) EXPECT_EQ(idx->lookup(k * 7919), Value{k});
  const double before = stat("swizzle_hits");
  for (Key k = 0; k < 1000; ++k) EXPECT_EQ(idx->lookup(k * 7919), Value{k});
  EXPECT_EQ(stat("swizzle_hits") - before, 1000 * (height - 1));  // every level, every time
  EXPECT_TRUE(idx->check().ok);
}

// Mini pages: a cold leaf is cached in a 16-line frame, so the same DRAM holds more leaves
// and a few lookups per leaf evict fewer frames (many per leaf fill its mini page, which is
// then promoted to a full frame).
TEST(BMBTree, MiniPagesHoldMoreLeaves) {
  pm::set_mode(pm::Mode::dram);
  NamedStats got[2];
  for (int mini = 0; mini < 2; ++mini) {
    auto pool = pm::Pool::create_in_memory(32 << 20);
    Options o{{"dram_pct", "10"}, {"mini_pages", mini ? "1" : "0"}};
    auto idx = make_index("bm-btree", pool.get(), o);
    for (Key k = 0; k < 100000; ++k) idx->upsert(k * 7919, k);
    idx.reset();  // cold frames
    idx = make_index("bm-btree", pool.get(), o);
    for (Key k = 0; k < 400; ++k) EXPECT_EQ(idx->lookup(k * 7919 * 211), Value{k * 211});
    got[mini] = NamedStats(idx->stats().extra);
    EXPECT_TRUE(idx->check().ok);
  }
  EXPECT_EQ(got[0]["mini_frames"], 0);
  EXPECT_GT(got[1]["mini_frames"], got[0]["leaf_frames"]);
  EXPECT_EQ(got[1]["promotions"], 0);  // lookups touch a few lines of a leaf
  EXPECT_LT(got[1]["evictions"], got[0]["evictions"]);
}

// With the whole tree in DRAM and a log that does not fill, an insert writes nothing to the
// pages in PM and costs its commit's two fences: records, then the tail.
TEST(BMBTree, InsertInDramCostsTheCommitsTwoFences) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(64 << 20);
  IndexConfig cfg;
  cfg.pool = pool.get();
  cfg.expected_records = 2000000;  // sizes the log: no checkpoint in this test
  auto idx = find_index("bm-btree").create(cfg);
  for (Key k = 0; k < 1000; ++k) idx->upsert(k * 31, k);
  pm::reset_counters();
  for (Key k = 1000; k < 11000; ++k) idx->upsert(k * 31, k);
  auto c = pm::counters();
  EXPECT_EQ(c.total().fences, 2 * 10000u);
  EXPECT_EQ(c[pm::Category::node].lines, 0u);  // nothing evicted, no checkpoint
  EXPECT_GE(c[pm::Category::log].lines, 2 * 10000u);
  EXPECT_EQ(extra_stat(*idx, "checkpoints"), 0);
  EXPECT_EQ(extra_stat(*idx, "evictions"), 0);
}

// Crash images in 64-byte and 8-byte units, with recoveries crashed too. One leaf frame:
// leaves are evicted inside operations (a split's two leaves), so some images are captured
// after a line of the operation in flight reached PM, and recovery must undo it.
struct CrashCase {
  std::string leaf;
  pm::Unit unit;
  std::uint64_t seed;
  std::string page = "256";
};
void PrintTo(const CrashCase& c, std::ostream* os) {
  *os << c.leaf << " leaves, seed " << c.seed << ", " << c.page << "-byte pages";
}

class BMBTreeCrash : public ::testing::TestWithParam<CrashCase> {};

TEST_P(BMBTreeCrash, ImagesRecoverWithAcknowledgedOps) {
  const Index* running = nullptr;
  CrashConfig c;
  c.index = "bm-btree";
  c.options = small(GetParam().leaf, "1", GetParam().page);
  c.pool_bytes = 1 << 20;
  c.seed = GetParam().seed;
  c.unit = GetParam().unit;
  c.ops = 500;
  c.key_space = 600;
  c.flush_one_in = 4;
  c.recovery_crash_one_in = 100;
  c.after_op = [&](const Index& i) { running = &i; };
  c.phase = [&]() -> std::string {
    return running && extra_stat(*running, "op_stolen") > 0 ? "after_steal" : "any";
  };
  auto r = expect_crashes_everywhere(c, {"after_steal", "any"});
  ASSERT_FALSE(HasFailure());
  EXPECT_GE(r.images, 2000u);
  if (GetParam().page == "256") {
    EXPECT_GT(r.extra["checkpoints"], 2);
  }
}

INSTANTIATE_TEST_SUITE_P(Units, BMBTreeCrash,
                         ::testing::Values(CrashCase{"hash", pm::Unit::line64, 1},
                                           CrashCase{"hash", pm::Unit::word8, 2},
                                           CrashCase{"sorted", pm::Unit::word8, 3},
                                           CrashCase{"hash", pm::Unit::line64, 4, "2048"}),
                         [](const auto& i) {
                           return i.param.leaf +
                                  (i.param.unit == pm::Unit::word8 ? "_word8_" : "_line64_") +
                                  i.param.page;
                         });

}  // namespace
}  // namespace dptree::testing
