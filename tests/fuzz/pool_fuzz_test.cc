// The pool fuzzer as a test (pool_fuzz_suite.h) for every target the registry's test plans give,
// and the check that every persistent index and string form has a plan or says why not. Longer,
// coverage-guided runs: `make fuzz SECONDS=N` (libFuzzer, docs/fuzzing.md).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dptree/registry.h"
#include "fuzz/pool_fuzz.h"
#include "fuzz/pool_fuzz_suite.h"

namespace dptree::fuzz {
namespace {

// The targets come from the registry's test plans: a persistent index or string form without
// one goes unfuzzed, so its entry must say why.
TEST(PoolFuzzTargets, EveryPersistentIndexAndStringFormIsFuzzedOrSaysWhyNot) {
  for (const IndexInfo& i : registered_indexes()) {
    if (!i.persistent) continue;
    if (!i.tests.fuzz) {
      EXPECT_FALSE(i.tests.why_untested.empty())
          << i.name << ": give its registry entry a fuzz plan (TestPlan::fuzz) or a why_untested";
    } else {
      EXPECT_NO_THROW(target(i.name)) << i.name;
    }
    if (i.create_string && !i.tests.fuzz_strings) {
      EXPECT_FALSE(i.tests.why_untested.empty())
          << i.name << "'s string form: give it a fuzz plan (TestPlan::fuzz_strings) or a "
          << "why_untested";
    } else if (i.create_string) {
      EXPECT_NO_THROW(target(i.name + "-strings")) << i.name;
    }
  }
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& t : targets()) out.push_back(t.name());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Indexes, PoolFuzz, ::testing::ValuesIn(names()),
                         testing::IndexParamName());

}  // namespace
}  // namespace dptree::fuzz
