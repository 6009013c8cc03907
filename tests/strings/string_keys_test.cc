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
  std::set<std::size_t> lengths;
  std::size_t prefixes = 0, last_byte_twins = 0, zeros = 0, ffs = 0;
  for (const std::string& k : all) {
    lengths.insert(k.size());
    EXPECT_GE(k.size(), 1u);
    EXPECT_LE(k.size(), kStringKeyMaxBytes);
    zeros += k.find('\0') != std::string::npos;
    ffs += k.find('\xff') != std::string::npos;
    // The next key in order is an extension of k when k is a prefix of any key.
    auto next = all.upper_bound(k);
    prefixes += next != all.end() && next->starts_with(k);
    // Any other key of the same length and all but the last byte: the neighbours hold it.
    if (next != all.end() && next->size() == k.size() &&
        next->compare(0, k.size() - 1, k, 0, k.size() - 1) == 0)
      ++last_byte_twins;
  }
  for (std::size_t n : {1, 8, 9, 63, 64, 65, 1024}) EXPECT_TRUE(lengths.contains(n)) << n;
  EXPECT_GT(prefixes, 50u);
  EXPECT_GT(last_byte_twins, 20u);
  EXPECT_GT(zeros, 200u);
  EXPECT_GT(ffs, 200u);
  EXPECT_EQ(mixed_string_keys(1500, 1), keys) << "a function of the seed";
}

}  // namespace
}  // namespace dptree::testing
