// TIPS over the volatile B+-tree (`tips-btree`): the shared model fixture (inline and
// background replay, with reopens), the cost of a write (2 persist barriers), UNO skipping
// undo logging, adaptive scaling, recovery replaying the OLog, and clear errors.
#include <gtest/gtest.h>

#include <thread>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/tips.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

const std::map<std::string, std::string> kInline = {
    {"replay", "inline"},    {"replay_every", "50"}, {"partitions", "3"},     {"lanes", "2"},
    {"lane_records", "512"}, {"ulog_lines", "256"},  {"cache_entries", "300"}};

TEST(TipsModel, InlineReplayMatchesStdMapAcrossReopens) {
  ModelConfig c;
  c.index = "tips-btree";
  c.options = kInline;
  c.ops = 31000;  // ends 1000 ops after the last reopen
  c.reopen_every = 3000;
  auto r = run_model(c);
  EXPECT_GT(r.reopens, 5u);
  EXPECT_GT(r.extra["epochs"], 0.0);
}

TEST(TipsModel, BackgroundReplayMatchesStdMap) {
  ModelConfig c;
  c.index = "tips-btree";
  c.options = {{"partitions", "4"}, {"cache_entries", "200"}, {"max_writers", "2"}};
  c.ops = 20000;
  c.reopen_every = 5000;
  c.seed = 7;
  run_model(c);
}

TEST(TipsModel, LargeKeySpaceGrowsDeepTrees) {
  ModelConfig c;
  c.index = "tips-btree";
  c.options = kInline;
  c.options["replay_every"] = "400";
  c.pool_bytes = 32u << 20;
  c.ops = 40000;
  c.key_space = 1u << 30;
  c.remove_weight = 5;
  c.check_every = 10000;
  c.reopen_every = 20000;
  run_model(c);
}

// The frontend's cost: one OLog record line and one tail line, each persisted (2 barriers).
TEST(TipsCost, AWriteIsTwoPersistBarriers) {
  auto pool = pm::Pool::create_in_memory(8u << 20);
  auto idx =
      make_index("tips-btree", pool.get(), {{"replay", "inline"}, {"replay_every", "100000"}});
  for (Key k = 0; k < 10; ++k) idx->upsert(k, k);  // warm up
  pm::reset_counters();
  for (Key k = 0; k < 100; ++k) idx->upsert(k * 7, k);
  auto c = pm::counters();
  EXPECT_EQ(c.total().fences, 200u);
  EXPECT_EQ(c.total().lines, 200u);
  EXPECT_EQ(c[pm::Category::log].fences, 200u);
  // A refused conditional write logs nothing.
  pm::reset_counters();
  EXPECT_FALSE(idx->insert(7, 1));
  EXPECT_FALSE(idx->update(1u << 20, 1));
  EXPECT_FALSE(idx->remove(1u << 20));
  EXPECT_EQ(pm::counters().total().fences, 0u);
}

// UNO: repeated writes to the same leaf in one epoch undo-log each line once.
TEST(TipsUno, RepeatedLinesAreLoggedOncePerEpoch) {
  auto pool = pm::Pool::create_in_memory(8u << 20);
  auto idx = make_index("tips-btree", pool.get(),
                        {{"replay", "inline"}, {"replay_every", "1000"}, {"partitions", "1"}});
  for (Key k = 0; k < 40; ++k) idx->upsert(k, k);
  idx->stats();  // replays: builds the first leaf (a fresh block: nothing undo-logged)
  for (int round = 0; round < 3; ++round)
    for (Key k = 0; k < 40; ++k) idx->upsert(k, k + 100 * static_cast<Value>(round));
  auto s = idx->stats();  // one epoch of 120 updates to one leaf
  std::map<std::string, double> x(s.extra.begin(), s.extra.end());
  EXPECT_GT(x["undo_lines"], 0.0);
  EXPECT_LT(x["undo_lines"], 20.0) << "each line of the leaf at most once, not once per write";
  EXPECT_GT(x["undo_skipped_uno"], 100.0);
  for (Key k = 0; k < 40; ++k) EXPECT_EQ(idx->lookup(k), std::optional<Value>(k + 200));
}

// Writes acknowledged but never replayed come back from the OLog: the durable image taken
// right after the writes (no replay yet) recovers them all.
TEST(TipsRecovery, RecoveryReplaysTheOLog) {
  struct SimMode {
    SimMode() { pm::set_mode(pm::Mode::sim); }
    ~SimMode() { pm::set_mode(pm::Mode::dram); }
  } sim;
  auto pool = pm::Pool::create_in_memory(8u << 20);
  const std::map<std::string, std::string> o = {{"replay", "inline"}, {"replay_every", "300"}};
  auto idx = make_index("tips-btree", pool.get(), o);
  std::map<Key, Value> model;
  for (Key k = 0; k < 500; ++k) {
    idx->upsert(k, k * 3);
    model[k] = k * 3;
  }
  for (Key k = 0; k < 500; k += 5) {
    EXPECT_TRUE(idx->remove(k));
    model.erase(k);
  }
  // Only the durable image: what survives a power failure now (the cache is lost).
  auto img = pool->sim()->capture(pm::CaptureOptions{1, 0.0, 0.0, pm::Unit::line64});
  auto pool2 = pm::Pool::open_image(std::move(img));
  auto rec = make_index("tips-btree", pool2.get(), o);
  expect_same_contents(*rec, model, "after recovery");
  expect_check_ok(*rec, "after recovery");
}

TEST(TipsScaling, WritersFollowTheWriteRatio) {
  EXPECT_EQ(tips::writers_for_ratio(0.0, 4), 1u);
  EXPECT_EQ(tips::writers_for_ratio(0.05, 4), 1u);
  EXPECT_EQ(tips::writers_for_ratio(0.5, 4), 2u);
  EXPECT_EQ(tips::writers_for_ratio(1.0, 4), 4u);
  EXPECT_EQ(tips::writers_for_ratio(1.0, 1), 1u);
  // A write-only run uses more than one writer on average.
  auto pool = pm::Pool::create_in_memory(32u << 20);
  auto idx = make_index("tips-btree", pool.get(), {{"partitions", "4"}, {"max_writers", "2"}});
  for (Key k = 0; k < 20000; ++k) idx->upsert(k * 2654435761u, k);
  auto s = idx->stats();
  std::map<std::string, double> x(s.extra.begin(), s.extra.end());
  EXPECT_GT(x["writers_mean"], 1.0);
  EXPECT_EQ(s.records, 20000u);
}

TEST(TipsErrors, BadOptionsAndMisuseAreRefusedClearly) {
  auto pool = pm::Pool::create_in_memory(8u << 20);
  auto expect_error = [&](const std::map<std::string, std::string>& o, const char* says) {
    try {
      make_index("tips-btree", pool.get(), o);
      ADD_FAILURE() << "accepted " << o.begin()->first;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  expect_error({{"bogus", "1"}}, "unknown tips option 'bogus': use partitions, lanes");
  expect_error({{"partitions", "0"}}, "partitions=0 is out of range: use 1..64");
  expect_error({{"ulog_lines", "abc"}}, "ulog_lines='abc' is not a whole number: use 256..2^20");
  expect_error({{"replay", "sometimes"}},
               "replay='sometimes' is unknown: use background or inline");
  EXPECT_THROW(find_index("tips-btree").create(IndexConfig{}), Error);
  // Outside a replay the hooks refuse to run.
  EXPECT_THROW(tips::alloc(64), Error);
  EXPECT_THROW(tips::will_write(pool.get(), 8), Error);
  // A pool holding another index is refused, and left alone.
  auto other = pm::Pool::create_in_memory(8u << 20);
  make_index("dptree", other.get(), {});
  try {
    make_index("tips-btree", other.get(), {});
    ADD_FAILURE() << "opened a DPTree pool";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not TIPS"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dptree::testing
