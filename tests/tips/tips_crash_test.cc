// TIPS under the crash simulator through the shared crash fixture: replay runs inline (on
// the writing thread, every few writes) so captures are deterministic; captures land while a
// write appends to its OLog, while replay applies records, while undo entries are written,
// in MLog allocations and frees, at commits, and inside recovery (rollback + OLog replay).
#include <gtest/gtest.h>

#include "dptree/tips.h"
#include "fixtures/crash_fixture.h"

namespace dptree::testing {
namespace {

struct Param {
  std::uint64_t seed;
  pm::Unit unit;
};

class TipsCrash : public ::testing::TestWithParam<Param> {};

TEST_P(TipsCrash, EveryImageRecoversWithAcknowledgedOps) {
  CrashConfig c;
  c.index = "tips-btree";
  c.options = {{"replay", "inline"},   {"replay_every", "12"}, {"partitions", "2"},
               {"lanes", "1"},         {"lane_records", "64"}, {"ulog_lines", "256"},
               {"mlog_entries", "64"}, {"cache_entries", "40"}};
  c.pool_bytes = 1u << 20;
  c.seed = GetParam().seed;
  c.unit = GetParam().unit;
  c.ops = 450;
  c.key_space = 400;
  c.recovery_crash_one_in = 90;
  c.phase = [] { return std::string(tips::current_phase()); };
  auto r = run_crash(c);
  ASSERT_FALSE(HasFailure());
  std::string counts;
  for (auto& [p, n] : r.per_phase) counts += " " + p + "=" + std::to_string(n);
  std::printf("images %zu (recovery %zu, continued %zu):%s\n", r.images, r.recovery_images,
              r.continued_images, counts.c_str());
  // Replay's own events are its ULog, MLog and commit events.
  for (const char* p : {"olog_append", "ulog", "mlog", "commit", "recovery"})
    EXPECT_GT(r.per_phase[p], 0u) << "no crash captured in phase " << p;
  EXPECT_GT(r.recovery_images, 0u);
  EXPECT_GT(r.continued_images, 0u);
}

INSTANTIATE_TEST_SUITE_P(Images, TipsCrash,
                         ::testing::Values(Param{1, pm::Unit::line64}, Param{2, pm::Unit::line64},
                                           Param{3, pm::Unit::word8}, Param{4, pm::Unit::word8}),
                         [](const auto& i) {
                           return std::string(i.param.unit == pm::Unit::word8 ? "word8_"
                                                                              : "line64_") +
                                  std::to_string(i.param.seed);
                         });

}  // namespace
}  // namespace dptree::testing
