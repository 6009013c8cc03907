// Every persistent index of the registry with a kill plan killed for real (process_kill_suite.h),
// and the check that every persistent index has a plan or says why not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dptree/registry.h"

#include "kill/process_kill_suite.h"

namespace dptree::testing {
namespace {

// The persistent indexes of the registry with a kill plan (TestPlan::kill).
std::vector<std::string> killed() {
  std::vector<std::string> out;
  for (const IndexInfo& i : registered_indexes())
    if (i.persistent && i.tests.kill) out.push_back(i.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Indexes, ProcessKill, ::testing::ValuesIn(killed()), IndexParamName());

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
