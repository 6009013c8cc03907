// Every persistent index of the registry killed for real (tests/fixtures/
// kill_fixture.h), with the writers and options of its registry entry's kill plan (small
// nodes and logs): children writing to one pool file die by SIGKILL, some while they recover
// and, for the two DPTrees, some inside merges (a merge every few hundred writes); the
// acknowledged writes must all be there after each kill, and the state accumulates over every
// kill. DPTREE_CRASH_SCALE multiplies the number of kills.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "dptree/registry.h"

#include "fixtures/kill_fixture.h"
#include "format/layout.h"

namespace dptree::testing {
namespace {

// A merge or its garbage collection was running when the kill came: the root's version
// word still carries in_merge, the GC bit or (the concurrent DPTree) its two-logs bit.
bool dptree_in_merge(const pm::Pool& pool) {
  const auto* root = pool.root<detail::Root>();
  constexpr std::uint64_t kTwoLogs = 4;  // cdptree's gv bit 2
  return root && (root->gv & (detail::kInMerge | detail::kInGc | kTwoLogs));
}

// Extra checks for an index, beyond the suite's: the two DPTrees must also be killed inside
// merges (their kill plans make merges frequent).
std::function<bool(const pm::Pool&)> in_merge_probe(const std::string& index) {
  if (index == "dptree" || index == "cdptree") return dptree_in_merge;
  return nullptr;
}

// Kills children of the plan's writers on `index`, then expects the planned kills and enough
// of them inside recoveries and (for an index with a merge probe) inside merges.
void expect_kills(const std::string& index, const TestPlan::Kill& plan) {
  KillConfig c;
  c.index = index;
  c.threads = plan.writers;
  c.options = plan.options;
  c.in_merge = in_merge_probe(index);
  auto r = run_kills(c);
  if (::testing::Test::HasFailure()) return;
  EXPECT_GE(r.kills, c.kills * crash_scale());
  EXPECT_GE(r.recovery_kills, 2u) << "too few kills landed while the child recovered";
  if (c.in_merge) {
    EXPECT_GE(r.merge_kills, 2u) << "too few kills landed inside a merge";
  }
}

// The persistent indexes of the registry with a kill plan (TestPlan::kill).
std::vector<std::string> killed() {
  std::vector<std::string> out;
  for (const IndexInfo& i : registered_indexes())
    if (i.persistent && i.tests.kill) out.push_back(i.name);
  return out;
}

class ProcessKill : public ::testing::TestWithParam<std::string> {};

TEST_P(ProcessKill, AcknowledgedWritesSurviveEveryKill) {
  expect_kills(GetParam(), *find_index(GetParam()).tests.kill);
}

INSTANTIATE_TEST_SUITE_P(Indexes, ProcessKill, ::testing::ValuesIn(killed()), [](const auto& p) {
  std::string s = p.param;
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
});

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
