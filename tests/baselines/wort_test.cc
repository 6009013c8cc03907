// WORT through the generic fixtures (generic_peer_fixture.h: model runs with reopens, bad input,
// crash images in 64-byte and 8-byte units) and its own cases: keys that share long prefixes
// and keys that differ in their first digit, scans in key order from any start, nodes that
// collapse when removes leave them one child, and its single-threaded registration.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "baselines/generic_peer_fixture.h"
#include "dptree/error.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Index, GenericPeer, ::testing::Values("wort"), IndexParamName());

TEST(Wort, RegisteredSingleThreaded) {
  PmModeScope mode(pm::Mode::dram);
  const auto& info = find_index("wort");
  EXPECT_TRUE(info.persistent);
  EXPECT_FALSE(info.concurrent);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  EXPECT_THROW(make_index("wort", pool.get(), {}, 2), Error);
  auto idx = make_index("wort", pool.get(), {}, 1);
  EXPECT_EQ(idx->max_value(), ~Value{0});
  idx->upsert(~Key{0}, ~Value{0});
  EXPECT_EQ(idx->lookup(~Key{0}), std::optional<Value>(~Value{0}));
}

// Keys in several shapes, each against std::map through inserts, scans from every kind of
// start, removes of half, a reopen and removes of the rest (every node collapses away).
void expect_like_map(const std::vector<Key>& keys, const std::string& what) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(16 << 20);
  auto idx = make_index("wort", pool.get(), {});
  std::map<Key, Value> model;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    bool fresh = !model.contains(keys[i]);
    ASSERT_EQ(idx->insert(keys[i], i), fresh) << what << " insert " << keys[i];
    if (fresh) model[keys[i]] = i;
  }
  expect_check_ok(*idx, what + " after inserts");
  expect_same_contents(*idx, model, what + " after inserts");
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    Key start = i % 3 == 0 ? keys[rng() % keys.size()] + (i % 2) : rng() >> (rng() % 64);
    std::vector<KV> out;
    idx->scan(start, 20, out);
    auto it = model.lower_bound(start);
    for (const KV& kv : out) {
      ASSERT_NE(it, model.end()) << what << " scan from " << start << " returned too much";
      ASSERT_EQ(kv, (KV{it->first, it->second})) << what << " scan from " << start;
      ++it;
    }
    ASSERT_TRUE(out.size() == 20 || it == model.end()) << what << " scan stopped early";
  }
  std::size_t n = 0;
  for (auto it = model.begin(); it != model.end();) {
    if (n++ % 2) {
      ++it;
      continue;
    }
    ASSERT_TRUE(idx->remove(it->first)) << what;
    it = model.erase(it);
  }
  expect_check_ok(*idx, what + " after removing half");
  idx.reset();
  idx = make_index("wort", pool.get(), {});
  expect_same_contents(*idx, model, what + " after reopen");
  for (const auto& kv : model) ASSERT_TRUE(idx->remove(kv.first)) << what;
  expect_check_ok(*idx, what + " after removing all");
  EXPECT_EQ(extra_stat(*idx, "nodes") + idx->stats().records, 0) << what;
}

TEST(Wort, BehavesLikeAnOrderedMapForEveryKeyShape) {
  std::vector<Key> seq, rnd, wide, clustered;
  std::mt19937_64 rng(11);
  for (Key i = 0; i < 3000; ++i) {
    seq.push_back(i);      // 13 leading zero digits: prefixes longer than the header
    rnd.push_back(rng());  // differ near the top
    wide.push_back(rng() % 16 << 60 | (rng() % 4));  // two digits differ, far apart
    clustered.push_back((rng() % 8) << 40 | (rng() % 64) << 8 | i % 3);
  }
  std::vector<Key> rev(seq.rbegin(), seq.rend());
  expect_like_map(seq, "sequential");
  expect_like_map(rev, "reverse");
  expect_like_map(rnd, "random");
  expect_like_map(wide, "wide");
  expect_like_map(clustered, "clustered");
  expect_like_map({0, ~Key{0}, 1, ~Key{0} - 1, Key{1} << 63}, "extremes");
}

// A split whose new parent branches above an existing node's prefix rewrites that node's
// header (deeper, shorter); a remove that leaves a node one child puts the child in its place
// and rewrites its header (shallower, longer).
TEST(Wort, SplitsAndCollapsesRewriteHeaders) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  auto idx = make_index("wort", pool.get(), {});
  for (Key k : {0x10, 0x11, 0x12}) idx->upsert(k, k);
  EXPECT_EQ(extra_stat(*idx, "nodes"), 1);
  idx->upsert(0x100, 1);  // differs at digit 13, above the node's branch (digit 15)
  idx->upsert(0x5000, 2);
  EXPECT_EQ(extra_stat(*idx, "nodes"), 3);
  expect_check_ok(*idx, "after splits");
  EXPECT_TRUE(idx->remove(0x5000));
  EXPECT_TRUE(idx->remove(0x100));  // its node's one other child is the node of 0x1*
  EXPECT_EQ(extra_stat(*idx, "nodes"), 1);
  expect_check_ok(*idx, "after collapses");
  std::vector<KV> out;
  idx->scan(0, 10, out);
  EXPECT_EQ(out, (std::vector<KV>{{0x10, 0x10}, {0x11, 0x11}, {0x12, 0x12}}));
  EXPECT_FALSE(idx->remove(0x100));
  EXPECT_FALSE(idx->update(0x100, 3));
  EXPECT_TRUE(idx->update(0x11, 3));
  EXPECT_FALSE(idx->insert(0x11, 4));
  EXPECT_EQ(idx->lookup(0x11), std::optional<Value>(3));
}

// A full pool is an error (pool_full) that loses nothing: no slot taken for the refused insert
// stays used (check() counts them), removes work, and their slots serve new inserts. Pools of
// several sizes, so that the refused insert is sometimes a split whose node slot was taken.
void fill_then_shrink(std::size_t pool_bytes) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(pool_bytes);
  auto idx = make_index("wort", pool.get(), {});
  std::mt19937_64 rng(pool_bytes);
  std::map<Key, Value> m = fill_until_full(*idx, rng);
  ASSERT_FALSE(::testing::Test::HasFailure());
  EXPECT_GT(m.size(), 1000u);
  expect_check_ok(*idx, "after pool_full");
  expect_same_contents(*idx, m, "after pool_full");
  for (auto it = m.begin(); it != m.end();) {
    if (it->first % 2) {
      ASSERT_TRUE(idx->remove(it->first));
      it = m.erase(it);
    } else {
      ASSERT_TRUE(idx->update(it->first, 7));
      (it++)->second = 7;
    }
  }
  for (int i = 0; i < 100; ++i) {
    Key k = rng();
    idx->upsert(k, 9);
    m[k] = 9;
  }
  expect_check_ok(*idx, "after removes, updates and inserts");
  expect_same_contents(*idx, m, "after removes, updates and inserts");
}

TEST(Wort, FullPoolIsAnErrorAndLosesNothing) {
  for (std::size_t kib = 1024; kib < 1024 + 24 * 16; kib += 24) {
    fill_then_shrink(kib << 10);
    ASSERT_FALSE(HasFailure()) << kib << " KiB";
  }
}

}  // namespace
}  // namespace dptree::testing
