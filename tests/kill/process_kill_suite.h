// The process-kill suite, parameterized by index name (tests/fixtures/kill_fixture.h), with the
// writers and options of the index's registry entry's kill plan (small nodes and logs):
// children writing to one pool file die by SIGKILL, some while they recover and, for the two
// DPTrees, some inside merges (a merge every few hundred writes); the acknowledged writes must
// all be there after each kill, and the state accumulates over every kill. DPTREE_CRASH_SCALE
// multiplies the number of kills. The children are forks of the test binary, so they know the
// indexes it registered: process_kill_test.cc instantiates the suite for every built-in index
// with a kill plan, and a test binary that registers an index of its own for that one.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "dptree/registry.h"
#include "fixtures/kill_fixture.h"
#include "fixtures/param_name.h"
#include "format/layout.h"

namespace dptree::testing {

// A merge or its garbage collection was running when the kill came: the root's version
// word still carries in_merge, the GC bit or (the concurrent DPTree) its two-logs bit.
inline bool dptree_in_merge(const pm::Pool& pool) {
  const auto* root = pool.root<detail::Root>();
  constexpr std::uint64_t kTwoLogs = 4;  // cdptree's gv bit 2
  return root && (root->gv & (detail::kInMerge | detail::kInGc | kTwoLogs));
}

// Extra checks for an index, beyond the suite's: the two DPTrees must also be killed inside
// merges (their kill plans make merges frequent).
inline std::function<bool(const pm::Pool&)> in_merge_probe(const std::string& index) {
  if (index == "dptree" || index == "cdptree") return dptree_in_merge;
  return nullptr;
}

// Kills children of the plan's writers on `index`, then expects the planned kills and enough
// of them inside recoveries and (for an index with a merge probe) inside merges.
inline void expect_kills(const std::string& index, const TestPlan::Kill& plan) {
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

class ProcessKill : public ::testing::TestWithParam<std::string> {};

TEST_P(ProcessKill, AcknowledgedWritesSurviveEveryKill) {
  const auto& plan = find_index(GetParam()).tests.kill;
  ASSERT_TRUE(plan) << GetParam() << ": give its registry entry a kill plan (TestPlan::kill)";
  expect_kills(GetParam(), *plan);
}

}  // namespace dptree::testing
