// The fixtures' string key space (key_kinds.h) holds the shapes it promises, so a run over it
// exercises them.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "fixtures/key_kinds.h"

namespace dptree::testing {
namespace {

TEST(StringKeySpace, HoldsEveryShape) {
  auto keys = mixed_string_keys(1500, 1);
  std::set<std::string> all(keys.begin(), keys.end());
  EXPECT_EQ(all.size(), keys.size()) << "keys are distinct";
  for (const std::string& k : all) {
    EXPECT_GE(k.size(), 1u);
    EXPECT_LE(k.size(), kStringKeyMaxBytes);
  }
  const KeyShapes s = shapes_of(all);
  EXPECT_TRUE(s.has_lengths({1, 8, 9, 63, 64, 65, 1024}));
  EXPECT_GT(s.prefixes, 50u);
  EXPECT_GT(s.last_byte_twins, 20u);
  EXPECT_GT(s.zeros, 200u);
  EXPECT_GT(s.ffs, 200u);
  EXPECT_EQ(mixed_string_keys(1500, 1), keys) << "a function of the seed";
}

}  // namespace
}  // namespace dptree::testing
