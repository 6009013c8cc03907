// The merge's record of its writes answers as a map from leaf to (new, set of slots) would:
// for leaves recorded before and after its table grows, slots in any order and repeated,
// slot numbers in every bitmap word of leaves of an odd slot count.
#include "engine/dirty_leaves.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

namespace dptree::detail {
namespace {

struct Model {
  bool is_new = false;
  std::set<std::uint16_t> slots;
};

void expect_same(const DirtyLeaves& d, const std::map<std::uint64_t, Model>& m) {
  ASSERT_EQ(d.size(), m.size());
  std::vector<std::uint16_t> got;
  for (const auto& [leaf, want] : m) {
    ASSERT_TRUE(d.contains(leaf)) << leaf;
    EXPECT_EQ(d.is_new(leaf), want.is_new) << leaf;
    d.written(leaf, got);
    EXPECT_EQ(got, std::vector<std::uint16_t>(want.slots.begin(), want.slots.end())) << leaf;
  }
  std::size_t seen = 0;
  d.for_each([&](std::uint64_t leaf, bool is_new) {
    ASSERT_TRUE(m.count(leaf)) << leaf;
    EXPECT_EQ(is_new, m.at(leaf).is_new) << leaf;
    ++seen;
  });
  EXPECT_EQ(seen, m.size());
}

TEST(DirtyLeaves, MatchesAMapThroughGrowth) {
  constexpr std::size_t kCap = 356;  // six bitmap words, the last partly used
  DirtyLeaves d;
  d.set_slots_per_leaf(kCap);
  d.reserve(8);
  std::map<std::uint64_t, Model> m;
  std::mt19937_64 rng(7);
  std::vector<std::uint16_t> slots;
  for (int op = 0; op < 20000; ++op) {
    // Leaf offsets as a pool gives them: 4 KiB-aligned, so equal in their low bits.
    const std::uint64_t leaf = 4096 * (1 + rng() % 3000);
    switch (rng() % 3) {
      case 0:
        d.touched(leaf);
        m[leaf];
        break;
      case 1:
        d.created(leaf);
        m[leaf].is_new = true;
        break;
      default:
        slots.clear();
        for (std::size_t i = rng() % 5; i > 0; --i) slots.push_back(rng() % kCap);
        if (!slots.empty()) slots.push_back(slots.front());  // a repeat
        d.wrote(leaf, slots);
        m[leaf].slots.insert(slots.begin(), slots.end());
    }
  }
  expect_same(d, m);
}

TEST(DirtyLeaves, UnknownLeafHasNothing) {
  DirtyLeaves d;
  d.set_slots_per_leaf(64);
  std::vector<std::uint16_t> got = {1, 2};
  d.written(4096, got);
  EXPECT_TRUE(got.empty());
  EXPECT_FALSE(d.contains(4096));
  EXPECT_FALSE(d.is_new(4096));
  d.wrote(8192, std::vector<std::uint16_t>{63, 0});
  EXPECT_FALSE(d.contains(4096));
  d.written(8192, got);
  EXPECT_EQ(got, (std::vector<std::uint16_t>{0, 63}));
}

TEST(DirtyLeaves, ReleaseHandsBackItsBlocksAndCanBeReused) {
  DirtyLeaves d;
  d.set_slots_per_leaf(100);
  d.created(4096);
  d.wrote(8192, std::vector<std::uint16_t>{99});
  d.reserve(1000);
  EXPECT_GT(d.heap_bytes(), 1000u);
  d.release();
  EXPECT_EQ(d.heap_bytes(), 0u);  // the blocks handed back, not only emptied
  EXPECT_EQ(d.size(), 0u);
  EXPECT_FALSE(d.contains(4096));
  d.wrote(4096, std::vector<std::uint16_t>{5});
  std::map<std::uint64_t, Model> m;
  m[4096].slots = {5};
  expect_same(d, m);
}

TEST(DirtyLeaves, RefusesASlotBeyondTheLeafAndACapacityChangeMidMerge) {
  DirtyLeaves d;
  d.set_slots_per_leaf(64);
  EXPECT_THROW(d.wrote(4096, std::vector<std::uint16_t>{64}), std::logic_error);
  d.touched(4096);
  EXPECT_THROW(d.set_slots_per_leaf(200), std::logic_error);
  EXPECT_NO_THROW(d.set_slots_per_leaf(64));
}

}  // namespace
}  // namespace dptree::detail
