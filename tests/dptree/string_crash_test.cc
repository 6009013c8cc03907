// DPTree over string keys under the crash simulator (the generic fixture over the mixed string
// key space, fixtures/key_kinds.h) with small leaves, so that merges of every kind happen: a
// capture at every fence and one in 8 flushes, 64-byte and 8-byte units, recoveries crashed at
// their events, recovered images that keep working. Every image passes check() (leaf key
// bytes reached exactly once, no leaked block, the log decodes) and holds every acknowledged
// write. Asserts captures in every phase of the string form's merge and in recovery.
// DPTREE_CRASH_SCALE multiplies the workload.
#include <gtest/gtest.h>

#include <string>

#include "dptree/testing/phases.h"
#include "fixtures/crash_fixture.h"
#include "string_keys.h"

namespace dptree::testing {
namespace {

class DPTreeStringCrash : public ::testing::TestWithParam<SeedUnit> {};

TEST_P(DPTreeStringCrash, EveryImageRecoversWithAcknowledgedOps) {
  StringCrashConfig c;
  c.index = "dptree";
  c.options = small_string_options();
  c.pool_bytes = 2u << 20;
  c.seed = GetParam().seed;
  c.unit = GetParam().unit;
  c.ops = 350;
  c.key_space = 160;
  c.recovery_crash_one_in = 150;
  c.continue_one_in = 80;
  c.phase = [] { return std::string(to_string(dptree_current_phase())); };
  auto r = run_string_crash(c);
  ASSERT_FALSE(HasFailure());
  print_images(r);
  expect_crashed_in({"log_append", "merge_start", "upsert_merge", "flush", "version_flip",
                     "garbage_collection", "recovery"},
                    r.per_phase);
  EXPECT_GT(r.recovery_images, 0u);
  EXPECT_GT(r.continued_images, 0u);
  EXPECT_GT(r.extra["merges"], 5);
}

INSTANTIATE_TEST_SUITE_P(Units, DPTreeStringCrash,
                         ::testing::Values(SeedUnit{1, pm::Unit::line64},
                                           SeedUnit{2, pm::Unit::word8}),
                         seed_unit_name);

}  // namespace
}  // namespace dptree::testing
