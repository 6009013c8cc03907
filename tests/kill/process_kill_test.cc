// Every persistent index of the registry with a kill plan killed for real (process_kill_suite.h),
// and the check that every persistent index has a plan or says why not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "format/layout.h"

#include "kill/process_kill_suite.h"

namespace dptree::testing {
namespace {

// A merge or its garbage collection was running when the kill came: the root's version
// word still carries in_merge, the GC bit or (the concurrent DPTree) its two-logs bit.
bool dptree_in_merge(const pm::Pool& pool) {
  const auto* root = pool.root<detail::Root>();
  constexpr std::uint64_t kTwoLogs = 4;  // cdptree's gv bit 2
  return root && (root->gv & (detail::kInMerge | detail::kInGc | kTwoLogs));
}

// The two DPTrees' kills must also land inside merges (process_kill_suite.h).
const bool kMergeProbes = [] {
  merge_probes()["dptree"] = dptree_in_merge;
  merge_probes()["cdptree"] = dptree_in_merge;
  return true;
}();

// The persistent indexes of the registry with a kill plan (TestPlan::kill).
std::vector<std::string> killed() {
  std::vector<std::string> out;
  for (const IndexInfo& i : registered_indexes())
    if (i.persistent && i.tests.kill) out.push_back(i.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Indexes, ProcessKill, ::testing::ValuesIn(killed()), IndexParamName());

// The two DPTrees' kills are held to landing inside merges too: their probes are in place.
TEST(ProcessKillPlans, TheDPTreesHaveMergeProbes) {
  EXPECT_TRUE(in_merge_probe("dptree"));
  EXPECT_TRUE(in_merge_probe("cdptree"));
  EXPECT_FALSE(in_merge_probe("fastfair"));
}

// An index without a kill plan goes untested here, so its entry must say why.
TEST(ProcessKillPlans, EveryPersistentIndexIsKilledOrSaysWhyNot) {
  for (const IndexInfo& i : registered_indexes()) {
    if (i.persistent && !i.tests.kill) {
      EXPECT_FALSE(i.tests.why_untested.empty())
          << i.name << ": give its registry entry a kill plan (TestPlan::kill) or a why_untested";
    }
  }
}

}  // namespace
}  // namespace dptree::testing
