// The pool fuzzer as a test: per persistent index and string form, damaged copies of seed pools
// (pool_fuzz.h's mutations) are opened, recovered and checked under ASan and UBSan; each must be
// accepted or refused with dptree::Error. DPTREE_FUZZ_ITERS sets the images per index (default
// 500). Longer, coverage-guided runs: `make fuzz SECONDS=N` (libFuzzer, docs/fuzzing.md).
#include <gtest/gtest.h>

#include <cstdlib>

#include "dptree/registry.h"
#include "fuzz/pool_fuzz.h"

namespace dptree::fuzz {
namespace {

std::size_t iterations() {
  const char* s = std::getenv("DPTREE_FUZZ_ITERS");
  return s ? static_cast<std::size_t>(std::strtoull(s, nullptr, 10)) : 500;
}

class PoolFuzz : public ::testing::TestWithParam<std::string> {};

TEST_P(PoolFuzz, DamagedPoolsAreAcceptedOrRefusedNeverCrash) {
  const Target& t = target(GetParam());
  const auto seeds = make_seeds(t);
  for (std::size_t i = 0; i < seeds.size(); ++i)
    ASSERT_TRUE(run_one(t, seeds[i].data(), seeds[i].size())) << "seed " << i << " refused";
  std::mt19937_64 rng(std::hash<std::string>{}(t.name()));
  std::size_t accepted = 0, refused = 0;
  const std::size_t n = iterations();
  for (std::size_t i = 0; i < n; ++i) {
    Bytes img = seeds[i % seeds.size()];
    // A few rounds of damage on some images: damage that needs two wrong words to get past
    // one check.
    for (std::size_t r = 0; r <= i % 3; ++r) mutate(img, rng);
    (run_one(t, img.data(), img.size()) ? accepted : refused)++;
  }
  std::printf("%s: %zu damaged images, %zu accepted, %zu refused with dptree::Error\n",
              t.name().c_str(), n, accepted, refused);
  EXPECT_EQ(accepted + refused, n);
}

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

INSTANTIATE_TEST_SUITE_P(Indexes, PoolFuzz, ::testing::ValuesIn(names()), [](const auto& p) {
  std::string s = p.param;
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
});

}  // namespace
}  // namespace dptree::fuzz
