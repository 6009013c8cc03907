// The OLC B+-tree (btree/olc_btree.h): against std::map on one thread, and under several
// threads (oversubscribed, run under ThreadSanitizer too): disjoint inserts all land, the
// callback of upsert_with runs exactly once under the leaf lock (a read-modify-write counter
// loses no increment), and readers never see a value go backwards or a scan out of order.
// The same on trees whose nodes come from a NodeChunks (btree/chunk_memory.h), one after another
// on the same chunks, as the concurrent DPTree's buffers are.
#include "btree/olc_btree.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "fixtures/model_fixture.h"
#include "fixtures/stress_fixture.h"

namespace dptree {
namespace {

using btree::OlcBTree;
using SmallTree = btree::BasicOlcBTree<4, 4>;  // small nodes: many splits at every level

// Random inserts, upserts, updates, erases, lookups and scans on keys below 3,000, each
// checked against std::map, then the whole tree.
void random_operations_match_std_map(SmallTree& t) {
  std::map<std::uint64_t, std::uint64_t> m;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 60000; ++i) {
    std::uint64_t k = rng() % 3000, v = rng();
    switch (rng() % 6) {
      case 0:
        EXPECT_EQ(t.insert(k, v), m.emplace(k, v).second);
        break;
      case 1:
        EXPECT_EQ(t.upsert(k, v), m.insert_or_assign(k, v).second);
        break;
      case 2: {
        auto it = m.find(k);
        EXPECT_EQ(t.update(k, v), it != m.end());
        if (it != m.end()) it->second = v;
        break;
      }
      case 3:
        EXPECT_EQ(t.erase(k), m.erase(k) == 1);
        break;
      case 4: {
        auto it = m.find(k);
        auto got = t.lookup(k);
        if (it == m.end())
          EXPECT_FALSE(got);
        else
          EXPECT_EQ(got, std::optional<std::uint64_t>(it->second));
        break;
      }
      default: {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
        t.scan(k, [&](std::uint64_t a, std::uint64_t b) {
          out.emplace_back(a, b);
          return out.size() < 20;
        });
        auto it = m.lower_bound(k);
        for (auto& e : out) {
          ASSERT_NE(it, m.end());
          EXPECT_EQ(e.first, it->first);
          EXPECT_EQ(e.second, it->second);
          ++it;
        }
        EXPECT_TRUE(out.size() == 20 || it == m.end());
      }
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_TRUE(t.check().empty());
  EXPECT_EQ(t.size(), m.size());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> all;
  t.for_each_frozen([&](std::uint64_t k, std::uint64_t v) { all.emplace_back(k, v); });
  std::vector<std::pair<std::uint64_t, std::uint64_t>> want(m.begin(), m.end());
  EXPECT_EQ(all, want);
  EXPECT_GT(t.height(), 4);
}

TEST(OlcBTree, RandomOperationsMatchStdMap) {
  SmallTree t;
  random_operations_match_std_map(t);
}

// The second tree is built on the nodes the first left behind: it makes no chunk of its own
// and gives back every one it took. Each tree grows by 100,000 ascending keys after the random
// operations, so that it fills more than one chunk.
TEST(OlcBTree, NodeChunksPassFromOneTreeToTheNext) {
  btree::NodeChunks chunks;
  auto run = [&] {
    SmallTree t(chunks);
    random_operations_match_std_map(t);
    for (std::uint64_t k = 3000; k < 103000; ++k) ASSERT_TRUE(t.insert(k, k + 1));
    EXPECT_TRUE(t.check().empty());
    EXPECT_EQ(t.lookup(50000), std::optional<std::uint64_t>(50001));
    EXPECT_EQ(chunks.spare_bytes(), 0u);
  };
  run();
  const std::size_t held = chunks.spare_bytes();
  EXPECT_GT(held, btree::NodeChunks::kChunkBytes) << "the run fills more than one chunk";
  run();  // the same run: the same nodes
  EXPECT_EQ(chunks.spare_bytes(), held);
}

TEST(OlcBTree, RegisteredIndexPassesTheModelFixture) {
  testing::ModelConfig c;
  c.index = "olc-btree";
  c.pool_bytes = 0;
  c.ops = 30000;
  testing::run_model(c);
}

void concurrent_disjoint_inserts_all_land(SmallTree& t) {
  const unsigned threads = 6;
  const std::uint64_t per = 8000;
  std::vector<std::thread> ts;
  for (unsigned id = 0; id < threads; ++id)
    ts.emplace_back([&, id] {
      std::mt19937_64 rng(id);
      std::vector<std::uint64_t> ks(per);
      for (std::uint64_t i = 0; i < per; ++i) ks[i] = i * threads + id;
      std::shuffle(ks.begin(), ks.end(), rng);
      for (auto k : ks) EXPECT_TRUE(t.insert(k, k * 3));
    });
  for (auto& th : ts) th.join();
  EXPECT_TRUE(t.check().empty());
  std::uint64_t expect = 0;
  bool ok = true;
  t.for_each_frozen([&](std::uint64_t k, std::uint64_t v) {
    ok = ok && k == expect && v == k * 3;
    ++expect;
  });
  EXPECT_TRUE(ok);
  EXPECT_EQ(expect, threads * per);
}

TEST(OlcBTree, ConcurrentDisjointInsertsAllLand) {
  SmallTree t;
  concurrent_disjoint_inserts_all_land(t);
}

// Splits on several threads take nodes from the tree's chunks at once.
TEST(OlcBTree, ConcurrentDisjointInsertsAllLandOnNodeChunks) {
  btree::NodeChunks chunks;
  {
    SmallTree first(chunks);
    concurrent_disjoint_inserts_all_land(first);
  }
  SmallTree t(chunks);
  concurrent_disjoint_inserts_all_land(t);
}

TEST(OlcBTree, UpsertCallbackRunsOnceUnderTheLeafLock) {
  SmallTree t;
  const unsigned threads = 6;
  const int per = 20000;
  std::vector<std::thread> ts;
  for (unsigned id = 0; id < threads; ++id)
    ts.emplace_back([&, id] {
      std::mt19937_64 rng(id + 10);
      for (int i = 0; i < per; ++i) {
        std::uint64_t k = rng() % 700;  // shared keys: conflicting writers, leaf splits
        t.upsert_with(k, [](const std::uint64_t* cur) {
          return std::optional<std::uint64_t>(cur ? *cur + 1 : 1);
        });
      }
    });
  for (auto& th : ts) th.join();
  std::uint64_t sum = 0;
  t.for_each_frozen([&](std::uint64_t, std::uint64_t v) { sum += v; });
  EXPECT_EQ(sum, std::uint64_t{threads} * per);
  EXPECT_TRUE(t.check().empty());
}

TEST(OlcBTree, ReadersSeeMonotonicValuesAndOrderedScans) {
  SmallTree t;
  const unsigned writers = 3, readers = 3;
  const std::uint64_t keys = 3000, kRounds = 40;
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  // Writer w owns keys with k % writers == w and writes round numbers that only grow.
  for (unsigned w = 0; w < writers; ++w)
    ts.emplace_back([&, w] {
      for (std::uint64_t round = 1; round <= kRounds; ++round)
        for (std::uint64_t k = w; k < keys; k += writers) t.upsert(k, round);
    });
  for (unsigned r = 0; r < readers; ++r)
    ts.emplace_back([&, r] {
      std::mt19937_64 rng(r + 100);
      std::vector<std::uint64_t> seen(keys, 0);
      while (!stop.load()) {
        std::uint64_t k = rng() % keys;
        auto v = t.lookup(k);
        std::uint64_t now = v ? *v : 0;
        if (now < seen[k] || now > kRounds) bad.fetch_add(1);
        seen[k] = now;
        std::uint64_t prev = 0;
        bool first = true;
        int n = 0;
        t.scan(k, [&](std::uint64_t a, std::uint64_t b) {
          if ((!first && a <= prev) || a < k || b == 0 || b > kRounds) bad.fetch_add(1);
          first = false;
          prev = a;
          return ++n < 100;
        });
      }
    });
  for (unsigned w = 0; w < writers; ++w) ts[w].join();
  stop = true;
  for (unsigned i = writers; i < ts.size(); ++i) ts[i].join();
  EXPECT_EQ(bad.load(), 0);
  for (std::uint64_t k = 0; k < keys; ++k)
    ASSERT_EQ(t.lookup(k), std::optional<std::uint64_t>(kRounds));
  EXPECT_TRUE(t.check().empty());
}

}  // namespace
}  // namespace dptree

namespace dptree::testing {
namespace {

// The registered `olc-btree` through the shared stress fixture (stress_fixture.h).
TEST(OlcBTree, StressFixture) {
  StressConfig c;
  c.index = "olc-btree";
  c.pool_bytes = 0;  // volatile
  c.ops_per_thread = 8000;
  c.key_space = 3000;
  expect_clean_stress(c);
}

}  // namespace
}  // namespace dptree::testing
