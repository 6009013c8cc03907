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
#include <map>
#include <string>

#include "dptree/registry.h"
#include "fixtures/kill_fixture.h"
#include "fixtures/param_name.h"

namespace dptree::testing {

// Probes that tell a kill which landed inside a merge, by index name. A binary whose indexes
// merge adds theirs (process_kill_test.cc, the two DPTrees', which read their roots through
// the format layer); an index with a probe must also be killed inside merges (its kill plan
// makes merges frequent). The suite itself sees the public headers alone.
using MergeProbe = std::function<bool(const pm::Pool&)>;
inline std::map<std::string, MergeProbe>& merge_probes() {
  static std::map<std::string, MergeProbe> probes;
  return probes;
}

inline MergeProbe in_merge_probe(const std::string& index) {
  const auto it = merge_probes().find(index);
  return it == merge_probes().end() ? nullptr : it->second;
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
