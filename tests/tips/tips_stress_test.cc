// TIPS under concurrency through the shared stress fixture: readers, writers and background
// replay (with adaptive writers and cache eviction) at once, every read checked for
// staleness against the writes acknowledged before it began (durable linearizability), then
// closed, reopened and compared. Also run under ThreadSanitizer (label `concurrency`).
#include <gtest/gtest.h>

#include "fixtures/stats_watch.h"
#include "fixtures/stress_fixture.h"

namespace dptree::testing {
namespace {

TEST(TipsStress, BackgroundReplayWithReadersAndWriters) {
  StressConfig c;
  c.index = "tips-btree";
  // A small cache and short lanes: eviction, back-pressure and lane wrap-around all happen.
  c.options = {{"partitions", "4"},
               {"max_writers", "2"},
               {"cache_entries", "256"},
               {"lane_records", "256"},
               {"lanes", "2"}};
  c.threads = 4;
  c.ops_per_thread = 6000;
  c.key_space = 2000;
  // stats() forces replay rounds from one more thread; it also shows what the live index did
  // (the fixture's own figures come from the reopened index).
  StatsWatch replayed{"replayed_records"}, rounds{"replay_rounds"};
  c.during = watch_during({&replayed, &rounds});
  auto r = run_stress(c);
  EXPECT_EQ(r.failures, 0u);
  EXPECT_GT(rounds.last.load(), 10.0);
  EXPECT_GT(replayed.last.load(), 1000.0);
}

TEST(TipsStress, InlineReplayWithReadersAndWriters) {
  StressConfig c;
  c.index = "tips-btree";
  c.options = {
      {"replay", "inline"}, {"replay_every", "64"}, {"partitions", "3"}, {"cache_entries", "128"}};
  c.threads = 4;
  c.ops_per_thread = 5000;
  c.key_space = 1500;
  c.seed = 3;
  auto r = run_stress(c);
  EXPECT_EQ(r.failures, 0u);
}

}  // namespace
}  // namespace dptree::testing
