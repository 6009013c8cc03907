// The inner nodes of uTree's array layer (baselines/utree/route_tree.h): floor() against
// std::map for inserts in every order, on full-size and on small nodes (many splits at every
// level), and readers racing writers (oversubscribed, run under ThreadSanitizer too): a reader
// never gets a leaf right of its key, nor one left of a leaf whose insert had returned before
// it asked.
#include "baselines/utree/route_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace dptree {
namespace {

using Key = std::uint64_t;
using baselines::BasicRouteTree;

// The leaves here are opaque numbers: each low bound names itself, the first leaf 0.
template <class Tree>
void expect_matches(const Tree& t, const std::map<Key, Key>& lows, std::mt19937_64& rng) {
  auto problems = t.check();
  ASSERT_TRUE(problems.empty()) << problems.front();
  std::vector<Key> seen;
  t.for_each_leaf([&](Key low, std::uintptr_t leaf) {
    EXPECT_EQ(low, leaf);
    seen.push_back(low);
  });
  ASSERT_EQ(seen.size(), lows.size());
  EXPECT_TRUE(std::equal(seen.begin(), seen.end(), lows.begin(),
                         [](Key a, const auto& b) { return a == b.first; }));
  for (int i = 0; i < 20000; ++i) {
    Key k = i % 4 == 0 ? ~Key{0} - rng() % 4 : rng() % (Key{1} << 40);
    if (i % 4 == 1) k = seen[rng() % seen.size()];  // a low bound itself
    ASSERT_EQ(t.floor(k), std::prev(lows.upper_bound(k))->second) << k;
  }
}

template <class Tree>
void inserts_match_std_map(std::vector<Key> order) {
  Tree t(0);
  std::map<Key, Key> lows{{0, 0}};
  std::mt19937_64 rng(5);
  for (std::size_t i = 0; i < order.size(); ++i) {
    t.insert(order[i], order[i]);
    lows.emplace(order[i], order[i]);
    if (i == 10 || i == 1000 || i + 1 == order.size()) expect_matches(t, lows, rng);
  }
  EXPECT_GE(t.height(), 3);
}

std::vector<Key> random_lows(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Key> v(n);
  for (auto& k : v) k = (rng() % (Key{1} << 40)) | 1;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

TEST(UTreeRoute, RandomInsertsMatchStdMap) {
  inserts_match_std_map<BasicRouteTree<64>>(random_lows(80000, 1));
  inserts_match_std_map<BasicRouteTree<4>>(random_lows(20000, 2));
}

TEST(UTreeRoute, AscendingAndDescendingInsertsMatchStdMap) {
  std::vector<Key> up(60000);
  std::iota(up.begin(), up.end(), 1);
  inserts_match_std_map<BasicRouteTree<64>>(up);
  inserts_match_std_map<BasicRouteTree<4>>({up.begin(), up.begin() + 5000});
  std::reverse(up.begin(), up.end());
  inserts_match_std_map<BasicRouteTree<64>>(up);
  inserts_match_std_map<BasicRouteTree<4>>({up.end() - 5000, up.end()});
}

// Two writers enter shuffled lows while four readers look up keys just above lows whose insert
// has returned (done[i], set after it): the answer must be that low or a greater one at or
// below the key. Small nodes split at every level all the time. The writer that reaches the
// middle of the lows waits there until the readers have made a few lookups, so that reads
// meet a tree still being written however the threads are scheduled (on a loaded machine the
// writers could otherwise finish before a reader ran).
template <class Tree>
void readers_race_writers(std::size_t n) {
  std::vector<Key> sorted = random_lows(n, 3);
  std::vector<Key> order = sorted;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> rank(n);  // order[i]'s position in sorted
  for (std::size_t i = 0; i < n; ++i)
    rank[i] = std::lower_bound(sorted.begin(), sorted.end(), order[i]) - sorted.begin();
  auto done = std::make_unique<std::atomic<bool>[]>(n);
  Tree t(0);
  std::atomic<std::size_t> next{0};
  std::atomic<int> writing{2};
  std::atomic<std::size_t> checked{0};
  std::atomic<int> reading{4};  // readers still in their loop (a failed ASSERT leaves it)
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w)
    threads.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < n;) {
        if (i == n / 2)
          while (checked.load() < 4 && reading.load() > 0) std::this_thread::yield();
        t.insert(order[i], order[i]);
        done[rank[i]].store(true, std::memory_order_release);
      }
      writing.fetch_sub(1);
    });
  for (int r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      struct Leave {
        std::atomic<int>& n;
        ~Leave() { n.fetch_sub(1); }
      } leave{reading};
      std::mt19937_64 rng(r);
      while (writing.load() > 0) {
        std::size_t j = rng() % n;
        Key k = sorted[j] + rng() % 3;
        bool entered = done[j].load(std::memory_order_acquire);
        Key got = t.floor(k);
        ASSERT_LE(got, k);
        if (entered) {
          ASSERT_GE(got, sorted[j]) << k;
        }
        checked.fetch_add(1, std::memory_order_relaxed);
      }
    });
  for (auto& th : threads) th.join();
  std::map<Key, Key> lows{{0, 0}};
  for (Key k : sorted) lows.emplace(k, k);
  std::mt19937_64 rng(4);
  expect_matches(t, lows, rng);
}

TEST(UTreeRoute, ReadersRaceWritersOnSmallNodes) {
  readers_race_writers<BasicRouteTree<4>>(40000);
}

TEST(UTreeRoute, ReadersRaceWritersOnFullNodes) {
  readers_race_writers<BasicRouteTree<64>>(40000);
}

}  // namespace
}  // namespace dptree
