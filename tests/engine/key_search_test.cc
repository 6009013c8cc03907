// The inner index's static search tree answers as std::lower_bound does, for every array size
// around the node boundaries and for keys below, between, on and above the stored ones.
#include "engine/key_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace dptree::detail {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::size_t reference(const std::vector<std::uint64_t>& keys, std::uint64_t k) {
  return static_cast<std::size_t>(std::lower_bound(keys.begin(), keys.end(), k) - keys.begin());
}

// Every stored key, its neighbours, and the extremes.
void expect_like_lower_bound(const std::vector<std::uint64_t>& keys) {
  KeySearch s;
  s.build(keys);
  std::vector<std::uint64_t> probes = {0, 1, kMax - 1, kMax};
  for (std::uint64_t k : keys) probes.insert(probes.end(), {k - 1, k, k + 1});
  std::vector<std::uint64_t> with(keys.size() + 1);
  for (std::uint64_t k : probes) {
    ASSERT_EQ(s.find(k), reference(keys, k)) << "size " << keys.size() << " key " << k;
    ASSERT_EQ(s.find(k, with.data()), reference(keys, k));
  }
}

TEST(KeySearch, MatchesLowerBoundAtEverySizeAroundTheNodeBoundaries) {
  std::mt19937_64 rng(7);
  std::vector<std::size_t> sizes;
  for (std::size_t n = 0; n <= 80; ++n) sizes.push_back(n);
  for (std::size_t n : {511u, 512u, 513u, 4095u, 4096u, 4097u, 4600u, 37449u}) sizes.push_back(n);
  for (std::size_t n : sizes) {
    std::vector<std::uint64_t> keys(n);
    for (auto& k : keys) k = rng() >> (rng() % 64);  // small and large keys both
    std::sort(keys.begin(), keys.end());
    expect_like_lower_bound(keys);
  }
}

TEST(KeySearch, DuplicatesAndTheLargestKey) {
  std::vector<std::uint64_t> keys(100, 5);
  expect_like_lower_bound(keys);
  keys = std::vector<std::uint64_t>(64, kMax);  // full nodes of the largest key
  expect_like_lower_bound(keys);
  keys.clear();
  for (std::uint64_t i = 0; i < 512; ++i) keys.push_back(i / 3 * 10);
  keys.back() = kMax;
  expect_like_lower_bound(keys);
}

TEST(KeySearch, RebuildOverANewArrayForgetsTheOld) {
  std::vector<std::uint64_t> a = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  KeySearch s;
  s.build(a);
  EXPECT_EQ(s.find(95), 9u);
  std::vector<std::uint64_t> b = {1000};
  s.build(b);
  EXPECT_EQ(s.find(95), 0u);
  EXPECT_EQ(s.find(1001), 1u);
  std::vector<std::uint64_t> none;
  s.build(none);
  EXPECT_EQ(s.find(0), 0u);
  EXPECT_EQ(s.find(kMax), 0u);
}

}  // namespace
}  // namespace dptree::detail
