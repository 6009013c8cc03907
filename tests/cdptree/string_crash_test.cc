// The concurrent DPTree over string keys under the crash simulator (the generic fixture over
// the mixed string key space, fixtures/key_kinds.h), one workload thread with inline merges
// so that every capture is on it: a capture at every fence and one in 8 flushes, 64-byte and
// 8-byte units, recoveries crashed at their events, recovered images that keep working.
// Every image passes check() (leaf key bytes reached exactly once, no leaked block, every
// shard's log replays to its entries) and holds every acknowledged write. Asserts captures in
// every phase of the string form's merge (the Front turned Middle with two logs live, leaf
// rewrites, linking, flip, garbage collection, log release) and in recovery.
// DPTREE_CRASH_SCALE multiplies the workload.
#include <gtest/gtest.h>

#include <string>

#include "dptree/testing/phases.h"
#include "fixtures/crash_fixture.h"

namespace dptree::testing {
namespace {

class CDPTreeStringCrash : public ::testing::TestWithParam<SeedUnit> {};

TEST_P(CDPTreeStringCrash, EveryImageRecoversWithAcknowledgedOps) {
  auto c = crash_config<StringKeys>("cdptree", GetParam(),
                                    [] { return std::string(to_string(cdptree_current_phase())); });
  c.options = {{"leaf_capacity", "16"},  {"log_partitions", "2"},     {"log_page_size", "2048"},
               {"merge_ratio", "0.1"},   {"min_merge_records", "16"}, {"background_merge", "0"},
               {"recovery_threads", "1"}};
  c.pool_bytes = 512u << 10;
  c.ops = 260;
  c.key_space = 160;
  c.recovery_crash_one_in = 100;
  c.continue_one_in = 120;
  auto r = expect_crashes_everywhere(
      c, {"log_append", "merge_start", "merge_range", "flush", "version_flip", "garbage_collection",
          "log_release", "recovery"});
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["merges"], 5);
}

INSTANTIATE_TEST_SUITE_P(Units, CDPTreeStringCrash,
                         ::testing::Values(SeedUnit{1, pm::Unit::line64},
                                           SeedUnit{2, pm::Unit::word8}),
                         seed_unit_name);

}  // namespace
}  // namespace dptree::testing
