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
  auto c = crash_config<StringKeys>("dptree", GetParam(),
                                    [] { return std::string(to_string(dptree_current_phase())); });
  c.options = small_string_options();
  c.pool_bytes = 2u << 20;
  c.ops = 350;
  c.key_space = 160;
  c.recovery_crash_one_in = 150;
  c.continue_one_in = 80;
  auto r = expect_crashes_everywhere(c, {"log_append", "merge_start", "upsert_merge", "flush",
                                         "version_flip", "garbage_collection", "recovery"});
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["merges"], 5);
}

// The same with the buffer merged in parts of 5 entries (the path a merge that does not fit
// takes): each part is a merge cycle that logs the entries it leaves in the buffer to the new
// version's log before its flip. Captures inside parts: in that log append, the leaves, the
// flip and the collection.
TEST_P(DPTreeStringCrash, MergingInPartsEveryImageRecovers) {
  struct Limit {
    Limit() { set_dptree_string_merge_part(5); }
    ~Limit() { set_dptree_string_merge_part(0); }
  } limit;
  StringCrashConfig c;
  c.index = "dptree";
  c.options = small_string_options();
  c.pool_bytes = 2u << 20;
  c.seed = GetParam().seed + 10;
  c.unit = GetParam().unit;
  c.ops = 160;
  c.key_space = 160;
  c.recovery_crash_one_in = 150;
  c.continue_one_in = 80;
  c.phase = [] {  // a recovery the simulator runs inside a part's flush is not part of it
    const DPTreePhase ph = dptree_current_phase();
    std::string p = to_string(ph);
    return dptree_string_merge_in_part() && ph != DPTreePhase::recovery ? p + "/part" : p;
  };
  auto r = run_string_crash(c);
  ASSERT_FALSE(HasFailure());
  print_images(r);
  expect_crashed_in({"log_append/part", "merge_start/part", "upsert_merge/part", "flush/part",
                     "version_flip/part", "garbage_collection/part", "recovery"},
                    r.per_phase);
  EXPECT_GT(r.recovery_images, 0u);
  EXPECT_GT(r.continued_images, 0u);
  EXPECT_GT(r.extra["merge_parts"], 10);
}

INSTANTIATE_TEST_SUITE_P(Units, DPTreeStringCrash,
                         ::testing::Values(SeedUnit{1, pm::Unit::line64},
                                           SeedUnit{2, pm::Unit::word8}),
                         seed_unit_name);

}  // namespace
}  // namespace dptree::testing
