// The concurrent DPTree under the shared crash fixture, single-threaded: merges run inline on
// the writer (background_merge=0, one merge worker), so every capture happens on the one
// thread while its state is quiet; captures in 64-byte and 8-byte units, in every phase
// (log append and page allocation, merge start, range merge, flush, flip, GC, log release,
// §3.4 in-place update and delete, recovery). A quarter of the operations are removes, and
// with a small Front most hit keys only in the base tree: deletes in place, whose images
// must show the delete all-or-nothing, every earlier one kept (also across the lazy
// metadata rebuild and log replay after the restart), and merges that drop the tombstones.
// DPTREE_CRASH_SCALE multiplies the workload.
#include <gtest/gtest.h>

#include "dptree/cdptree.h"
#include "fixtures/crash_fixture.h"

namespace dptree::testing {
namespace {

std::map<std::string, std::string> small() {
  return {{"leaf_capacity", "8"},    {"log_partitions", "2"},     {"log_page_size", "1024"},
          {"merge_ratio", "0.5"},    {"min_merge_records", "16"}, {"psize", "2"},
          {"background_merge", "0"}, {"merge_threads", "1"},      {"recovery_threads", "1"}};
}

struct CrashParam {
  std::uint64_t seed;
  pm::Unit unit;
};

class CDPTreeCrash : public ::testing::TestWithParam<CrashParam> {};

TEST_P(CDPTreeCrash, EveryImageRecoversWithAcknowledgedOps) {
  CrashConfig c;
  c.index = "cdptree";
  c.options = small();
  c.pool_bytes = 1u << 20;
  c.seed = GetParam().seed;
  c.unit = GetParam().unit;
  c.ops = 500;
  c.continue_one_in = 2500;
  c.key_space = 200;
  c.phase = [] { return std::string(to_string(cdptree_current_phase())); };
  auto r = run_crash(c);
  ASSERT_FALSE(HasFailure());
  std::string counts;
  for (auto& [p, n] : r.per_phase) counts += " " + p + "=" + std::to_string(n);
  std::printf("images %zu (recovery %zu, continued %zu):%s\n", r.images, r.recovery_images,
              r.continued_images, counts.c_str());
  for (const char* p :
       {"log_append", "log_page", "merge_start", "merge_range", "flush", "version_flip",
        "garbage_collection", "log_release", "inplace_update", "inplace_delete", "recovery"})
    EXPECT_GT(r.per_phase[p], 0u) << "no crash captured in phase " << p;
  EXPECT_GT(r.recovery_images, 0u);
  EXPECT_GT(r.continued_images, 0u);
}

INSTANTIATE_TEST_SUITE_P(Images, CDPTreeCrash,
                         ::testing::Values(CrashParam{1, pm::Unit::line64},
                                           CrashParam{2, pm::Unit::word8}),
                         [](const auto& i) {
                           return std::string(i.param.unit == pm::Unit::word8 ? "word8_"
                                                                              : "line64_") +
                                  std::to_string(i.param.seed);
                         });

}  // namespace
}  // namespace dptree::testing
