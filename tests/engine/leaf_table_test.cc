// The open's table of leaf words (engine/leaf_table.h): puts from several threads are all
// found, with their words; the list walk in stretches returns exactly the list a walk one link
// after another finds, and refuses (false) whatever it cannot prove: a mark off the list or
// out of order, a cycle, a link to a leaf not in the table, a list longer than the limit.
#include "engine/leaf_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace dptree::detail {
namespace {

using u64 = std::uint64_t;

// n distinct 64-byte aligned offsets in random order: the list order.
std::vector<u64> random_leaves(std::size_t n, std::mt19937_64& rng) {
  std::vector<u64> all(4 * n + 8);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = 4096 + 64 * i * 3;
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(n);
  return all;
}

// Puts list[i] with next list[i + 1] (0 for the last) and max key i + 1.
void put_list(LeafTable& t, const std::vector<u64>& list) {
  for (std::size_t i = 0; i < list.size(); ++i)
    t.put({list[i], i + 1 < list.size() ? list[i + 1] : 0, i + 1, 7});
}

std::vector<u64> every(const std::vector<u64>& list, std::size_t step, std::size_t from) {
  std::vector<u64> m;
  for (std::size_t i = from; i < list.size(); i += step) m.push_back(list[i]);
  return m;
}

TEST(LeafTable, PutsFromTwoThreadsAreAllFound) {
  std::mt19937_64 rng(1);
  const std::vector<u64> leaves = random_leaves(5000, rng);
  LeafTable t(leaves.size());
  auto put_half = [&](std::size_t half) {
    for (std::size_t i = half; i < leaves.size(); i += 2) t.put({leaves[i], i, 2 * i, 3 * i});
  };
  std::thread other(put_half, 1);
  put_half(0);
  other.join();
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const LeafTable::Entry* e = t.find(leaves[i]);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->leaf, leaves[i]);
    EXPECT_EQ(e->next, i);
    EXPECT_EQ(e->max, 2 * i);
    EXPECT_EQ(e->rc, 3 * i);
  }
  EXPECT_EQ(t.find(64), nullptr);
  EXPECT_EQ(t.find(0), nullptr);
  EXPECT_EQ(t.find(leaves[0] + 8), nullptr);
}

TEST(LeafTable, StretchesGiveTheWholeListInOrder) {
  std::mt19937_64 rng(2);
  for (std::size_t n : {1u, 2u, 3u, 10u, 511u, 3000u}) {
    const std::vector<u64> list = random_leaves(n, rng);
    LeafTable t(n);
    put_list(t, list);
    for (unsigned threads : {1u, 2u, 3u}) {
      for (std::size_t step : {1u, 2u, 7u, 100u, 5000u}) {
        for (std::size_t from : {0u, 1u}) {
          std::vector<u64> out;
          ASSERT_TRUE(walk_in_stretches(t, list[0], every(list, step, from), n, threads, out))
              << n << " " << threads << " " << step << " " << from;
          EXPECT_EQ(out, list);
        }
      }
      std::vector<u64> out;
      ASSERT_TRUE(walk_in_stretches(t, list[0], {}, n, threads, out));
      EXPECT_EQ(out, list);
    }
  }
}

TEST(LeafTable, AnEmptyListHasNoMarks) {
  LeafTable t(4);
  t.put({4096, 0, 1, 0});
  std::vector<u64> out{1, 2};
  EXPECT_TRUE(walk_in_stretches(t, 0, {}, 4, 2, out));
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(walk_in_stretches(t, 0, {4096}, 4, 2, out));
}

TEST(LeafTable, WhatCannotBeProvedIsRefused) {
  std::mt19937_64 rng(3);
  const std::size_t n = 400;
  std::vector<u64> list = random_leaves(n + 1, rng);
  const u64 stray = list.back();  // in the table, not on the list
  list.pop_back();
  std::vector<u64> out;
  {
    LeafTable t(n + 1);
    put_list(t, list);
    t.put({stray, list[5], 1000, 0});
    std::vector<u64> marks = every(list, 50, 10);
    auto with_stray = marks;
    with_stray.insert(with_stray.begin() + 3, stray);
    EXPECT_FALSE(walk_in_stretches(t, list[0], with_stray, n, 2, out));
    auto swapped = marks;
    std::swap(swapped[1], swapped[2]);
    EXPECT_FALSE(walk_in_stretches(t, list[0], swapped, n, 2, out));
    EXPECT_FALSE(walk_in_stretches(t, list[0], marks, n - 1, 2, out));  // longer than the limit
    EXPECT_FALSE(walk_in_stretches(t, list[0], {64}, n, 2, out));       // a mark not in the table
    EXPECT_TRUE(walk_in_stretches(t, list[0], marks, n, 2, out));
    EXPECT_EQ(out, list);
  }
  {
    LeafTable t(n);
    for (std::size_t i = 0; i < n; ++i)  // the last links back to the 100th: a cycle
      t.put({list[i], i + 1 < n ? list[i + 1] : list[100], i + 1, 0});
    for (std::size_t step : {1u, 30u, 1000u})
      EXPECT_FALSE(walk_in_stretches(t, list[0], every(list, step, 0), 4 * n, 2, out));
  }
  {
    LeafTable t(n);
    put_list(t, list);
    LeafTable broken(n);  // the 200th links to a leaf not in the table
    for (std::size_t i = 0; i < n; ++i)
      broken.put({list[i], i == 200 ? u64{64} : (i + 1 < n ? list[i + 1] : 0), i + 1, 0});
    EXPECT_FALSE(walk_in_stretches(broken, list[0], every(list, 50, 0), n, 2, out));
    EXPECT_FALSE(walk_in_stretches(broken, list[0], {}, n, 1, out));
  }
}

}  // namespace
}  // namespace dptree::detail
