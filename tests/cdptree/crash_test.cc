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

class CDPTreeCrash : public ::testing::TestWithParam<SeedUnit> {};

TEST_P(CDPTreeCrash, EveryImageRecoversWithAcknowledgedOps) {
  auto c = crash_config("cdptree", GetParam(),
                        [] { return std::string(to_string(cdptree_current_phase())); });
  c.options = small();
  c.ops = 500;
  c.continue_one_in = 2500;
  c.key_space = 200;
  expect_crashes_everywhere(
      c, {"log_append", "log_page", "merge_start", "merge_range", "flush", "version_flip",
          "garbage_collection", "log_release", "inplace_update", "inplace_delete", "recovery"});
}

INSTANTIATE_TEST_SUITE_P(Images, CDPTreeCrash,
                         ::testing::Values(SeedUnit{1, pm::Unit::line64},
                                           SeedUnit{2, pm::Unit::word8}),
                         seed_unit_name);

}  // namespace
}  // namespace dptree::testing
