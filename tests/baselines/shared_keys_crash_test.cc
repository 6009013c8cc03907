// Durable linearizability across threads (tests/fixtures/concurrent_crash_fixture.h, shared
// keys): three threads upsert and remove the same keys, 30% of their writes on four hot keys,
// while crashes land on whichever thread flushes or fences. Every concurrent persistent index:
// after recovery each key must hold what some order of its writes that respects real time
// leaves, with every write acknowledged before the crash in it. The per-thread check of the
// other concurrent crash tests gives each key a single writer, so it never sees two writers'
// records of one key ordered wrongly. ASan only, like those tests.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "fixtures/concurrent_crash_fixture.h"

namespace dptree::testing {
namespace {

struct Case {
  const char* index;
  std::map<std::string, std::string> options;
  std::size_t min_images;  // about half the fewest of three runs on 2 cores (cdptree: 38-737)
  bool lookups = true;     // ROART: writes only (SharedKeysCrashRoart.DISABLED_LookupsToo)
};

// Small nodes, pages and buffers, so splits, merges, replays and log turnover happen within
// the run; the concurrent DPTree merges in the background on two workers.
const Case kCases[] = {
    {"cdptree",
     {{"leaf_capacity", "8"},
      {"log_partitions", "4"},
      {"log_page_size", "1024"},
      {"merge_ratio", "0.3"},
      {"min_merge_records", "24"},
      {"merge_threads", "2"}},
     15},
    {"fptree", {{"leaf_capacity", "8"}}, 200},
    {"fastfair", {}, 140},
    {"lbtree", {}, 70},
    {"utree", {}, 200},
    {"cawbt", {}, 400},
    {"tips-btree",
     {{"replay", "background"},
      {"partitions", "2"},
      {"lane_records", "64"},
      {"ulog_lines", "256"},
      {"mlog_entries", "64"},
      {"cache_entries", "40"}},
     700},
    {"roart", {}, 600, false},
    {"pactree", {}, 80},
};

class SharedKeysCrash : public ::testing::TestWithParam<Case> {};

ConcurrentCrashConfig shared_config(const Case& k) {
  ConcurrentCrashConfig c;
  c.index = k.index;
  c.options = k.options;
  c.shared_keys = true;
  c.key_space = 200;
  c.ops_per_thread = 600;
  c.recovery_crash_one_in = 20;
  c.recovery_crash_max = 3;  // a crashed recovery can raise thousands of events (TIPS)
  c.continue_one_in = 20;
  c.shared_lookups = k.lookups;
  return c;
}

TEST_P(SharedKeysCrash, EveryImageIsDurablyLinearizable) {
  auto r = run_concurrent_crash(shared_config(GetParam()));
  ASSERT_FALSE(HasFailure());
  print_images(r);
  EXPECT_GE(r.images, GetParam().min_images);
  EXPECT_GT(r.mid_run_images, 0u) << "captures must land while threads write the same keys";
}

// ROART's readers take no lock (ROWEX) and a writer publishes a leaf with one pointer store
// that it then flushes: a lookup in between returns the new value (or misses a key being
// removed), and a crash before the flush loses that. So a lookup can acknowledge a state that
// recovery does not have, which durable linearizability forbids (the paper's design, as
// ported). The check finds it in about half the runs of this test: a lookup must meet a
// writer between its store and its flush, and a capture must land there. Disabled until
// ROART's readers wait for, or make durable, what they return; run it with
// --gtest_also_run_disabled_tests (docs/indexes.md, ROART).
TEST(SharedKeysCrashRoart, DISABLED_LookupsToo) {
  Case k{"roart", {}, 20};
  auto r = run_concurrent_crash(shared_config(k));
  ASSERT_FALSE(HasFailure());
  print_images(r);
}

INSTANTIATE_TEST_SUITE_P(Indexes, SharedKeysCrash, ::testing::ValuesIn(kCases),
                         [](const auto& info) {
                           std::string n = info.param.index;
                           for (auto& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace dptree::testing
