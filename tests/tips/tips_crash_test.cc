// TIPS under the crash simulator through the shared crash fixture: replay runs inline (on
// the writing thread, every few writes) so captures are deterministic; captures land while a
// write appends to its OLog, while replay applies records, while undo entries are written,
// in MLog allocations and frees, at commits, and inside recovery (rollback + OLog replay).
#include <gtest/gtest.h>

#include "dptree/testing/phases.h"
#include "dptree/tips.h"
#include "fixtures/crash_fixture.h"

namespace dptree::testing {
namespace {

class TipsCrash : public ::testing::TestWithParam<SeedUnit> {};

TEST_P(TipsCrash, EveryImageRecoversWithAcknowledgedOps) {
  auto c =
      crash_config("tips-btree", GetParam(), [] { return std::string(tips::current_phase()); });
  c.options = {{"replay", "inline"},   {"replay_every", "12"}, {"partitions", "2"},
               {"lanes", "1"},         {"lane_records", "64"}, {"ulog_lines", "256"},
               {"mlog_entries", "64"}, {"cache_entries", "40"}};
  c.ops = 450;
  c.key_space = 400;
  c.recovery_crash_one_in = 90;
  // Replay's own events are its ULog, MLog and commit events.
  expect_crashes_everywhere(c, {"olog_append", "ulog", "mlog", "commit", "recovery"});
}

INSTANTIATE_TEST_SUITE_P(Images, TipsCrash,
                         ::testing::Values(SeedUnit{1, pm::Unit::line64},
                                           SeedUnit{2, pm::Unit::line64},
                                           SeedUnit{3, pm::Unit::word8},
                                           SeedUnit{4, pm::Unit::word8}),
                         seed_unit_name);

}  // namespace
}  // namespace dptree::testing
