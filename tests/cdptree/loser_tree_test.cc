// The k-way merge of the concurrent string buffer's shard runs (cdptree/loser_tree.h): every
// entry of every run comes out once, in order, for any count of runs (a power of two or not,
// one, none) and any runs left empty.
#include "cdptree/loser_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

namespace dptree::cdp {
namespace {

using Tree = LoserTree<int, std::less<int>>;

std::vector<int> merge_all(const std::vector<std::vector<int>>& runs) {
  std::vector<Tree::Run> spans;
  for (const auto& r : runs) spans.emplace_back(r.data(), r.data() + r.size());
  std::vector<int> out;
  for (Tree t(std::move(spans), std::less<int>{}); !t.empty(); t.pop()) out.push_back(t.top());
  return out;
}

TEST(LoserTree, MergesRandomRunsInOrder) {
  std::mt19937 rng(7);
  for (std::size_t k : {1u, 2u, 3u, 5u, 8u, 63u, 64u, 65u}) {
    std::vector<std::vector<int>> runs(k);
    std::vector<int> want;
    for (auto& r : runs) {
      r.resize(rng() % 40);  // some runs empty
      for (int& x : r) x = static_cast<int>(rng() % 1000);
      std::sort(r.begin(), r.end());
      want.insert(want.end(), r.begin(), r.end());
    }
    std::sort(want.begin(), want.end());
    EXPECT_EQ(merge_all(runs), want) << k << " runs";
  }
}

TEST(LoserTree, NoRunsOrOnlyEmptyRunsGiveNothing) {
  EXPECT_TRUE(merge_all({}).empty());
  EXPECT_TRUE(merge_all({{}, {}, {}}).empty());
}

TEST(LoserTree, RunsThatEndAtDifferentTimesKeepTheirOrder) {
  EXPECT_EQ(merge_all({{1, 2, 3, 4, 5, 6}, {0}, {}, {7, 8}}),
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
}

}  // namespace
}  // namespace dptree::cdp
