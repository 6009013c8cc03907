// The volatile B+-tree template (over the heap, and over an arena as DPTree's buffer tree), its
// lookups by floor (FPTree's inner nodes) and by key view, find-or-insert, its bottom-up build, the
// registered volatile indexes against a std::map model, the registry, and the btree index under
// concurrent use; the chunks node memory comes from.
#include "btree/btree.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "btree/chunk_memory.h"
#include "btree/node_arena.h"
#include "dptree/error.h"
#include "dptree/registry.h"

namespace dptree {
namespace {

using SmallTree = btree::BPlusTree<std::uint64_t, std::uint64_t, 4, 4>;

void expect_equal(const SmallTree& t, const std::map<std::uint64_t, std::uint64_t>& m) {
  ASSERT_EQ(t.size(), m.size());
  auto it = t.begin();
  for (const auto& [k, v] : m) {
    ASSERT_TRUE(it.valid());
    ASSERT_EQ(it.key(), k);
    ASSERT_EQ(it.value(), v);
    ++it;
  }
  EXPECT_FALSE(it.valid());
}

TEST(BPlusTree, RandomOperationsMatchStdMap) {
  SmallTree t;
  std::map<std::uint64_t, std::uint64_t> m;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 30000; ++i) {
    const std::uint64_t k = rng() % 600, v = rng();
    switch (rng() % 6) {
      case 0:
        EXPECT_EQ(t.insert(k, v), m.emplace(k, v).second);
        break;
      case 5: {  // k's slot, found or added; an existing value is left as it was
        auto [slot, added] = t.find_or_insert(k, v);
        auto [mi, m_added] = m.emplace(k, v);
        ASSERT_EQ(added, m_added);
        ASSERT_EQ(*slot, mi->second);
        *slot = mi->second = v + 1;  // the slot is k's value in the tree
        break;
      }
      case 1:
        EXPECT_EQ(t.insert_or_assign(k, v), m.insert_or_assign(k, v).second);
        break;
      case 2: {
        auto mi = m.find(k);
        EXPECT_EQ(t.update(k, v), mi != m.end());
        if (mi != m.end()) mi->second = v;
        break;
      }
      case 3:
        EXPECT_EQ(t.erase(k), m.erase(k) > 0);
        break;
      case 4: {
        auto it = t.lower_bound(k);
        auto mi = m.lower_bound(k);
        for (int n = 0; n < 5 && mi != m.end(); ++n, ++mi, ++it) {
          ASSERT_TRUE(it.valid());
          ASSERT_EQ(it.key(), mi->first);
        }
        if (mi == m.end()) {
          EXPECT_FALSE(it.valid());
        }
        break;
      }
    }
    const std::uint64_t* f = t.find(k);
    auto mi = m.find(k);
    ASSERT_EQ(f != nullptr, mi != m.end());
    if (f) {
      ASSERT_EQ(*f, mi->second);
    }
    if (i % 500 == 0) {
      auto problems = t.check();
      ASSERT_TRUE(problems.empty()) << problems.front();
    }
  }
  expect_equal(t, m);
  EXPECT_GT(t.height(), 3u) << "small nodes should have built a deep tree";
}

TEST(BPlusTree, EmptiesCompletelyAndRefills) {
  SmallTree t;
  for (std::uint64_t k = 0; k < 1000; ++k) t.insert(k, k);
  EXPECT_TRUE(t.check().empty());
  for (std::uint64_t k = 0; k < 1000; k += 2) EXPECT_TRUE(t.erase(k));
  EXPECT_TRUE(t.check().empty());
  for (std::uint64_t k = 999; k < 1000; k -= 2) EXPECT_TRUE(t.erase(k));
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.leaf_count(), 0u);
  EXPECT_EQ(t.inner_count(), 0u);
  EXPECT_FALSE(t.begin().valid());
  EXPECT_FALSE(t.erase(3));
  for (std::uint64_t k = 1000; k > 0; --k) t.insert(k, k);
  EXPECT_TRUE(t.check().empty());
  expect_equal(t, [] {
    std::map<std::uint64_t, std::uint64_t> m;
    for (std::uint64_t k = 1; k <= 1000; ++k) m[k] = k;
    return m;
  }());
}

TEST(BPlusTree, MoveLeavesTheSourceEmpty) {
  SmallTree a;
  for (std::uint64_t k = 0; k < 100; ++k) a.insert(k, k);
  SmallTree b = std::move(a);
  EXPECT_EQ(b.size(), 100u);
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_TRUE(b.check().empty());
}

// DPTree's buffer tree (§2.1): 32-slot nodes from an arena that clear() rewinds, searched
// branch-free.
using ArenaTree = btree::BPlusTree<std::uint64_t, std::uint64_t, 32, 32, std::less<std::uint64_t>,
                                   btree::ArenaNodes, btree::NodeSearch::branch_free>;

template <class Tree>
void expect_same_order(const Tree& t, const std::map<std::uint64_t, std::uint64_t>& model,
                       std::uint64_t from) {
  auto it = t.lower_bound(from);
  for (auto m = model.lower_bound(from); m != model.end(); ++m, ++it) {
    ASSERT_TRUE(it.valid()) << "iteration ends early at " << m->first;
    ASSERT_EQ(it.key(), m->first);
    ASSERT_EQ(it.value(), m->second);
  }
  EXPECT_FALSE(it.valid()) << "iteration goes past the last key";
}

TEST(ArenaTree, MatchesAMapThroughFillAndClearCycles) {
  ArenaTree t;
  std::mt19937_64 rng(5);
  for (int cycle = 0; cycle < 4; ++cycle) {
    std::map<std::uint64_t, std::uint64_t> model;
    const std::size_t n = 5000 + 7000 * static_cast<std::size_t>(cycle % 2);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t k = rng() % 20000, v = rng();
      EXPECT_EQ(t.insert_or_assign(k, v), model.count(k) == 0) << "reports whether k is new";
      model[k] = v;
    }
    ASSERT_EQ(t.size(), model.size());
    ASSERT_TRUE(t.check().empty());
    for (std::uint64_t k = 0; k < 20000; ++k) {
      const std::uint64_t* p = t.find(k);
      auto m = model.find(k);
      ASSERT_EQ(p != nullptr, m != model.end()) << "key " << k;
      if (p) {
        ASSERT_EQ(*p, m->second);
      }
    }
    expect_same_order(t, model, 0);
    expect_same_order(t, model, 12345);
    expect_same_order(t, model, ~std::uint64_t{0});
    const std::size_t held = t.nodes().held_bytes();
    t.clear();
    EXPECT_TRUE(t.empty());
    EXPECT_FALSE(t.begin().valid());
    EXPECT_EQ(t.find(model.begin()->first), nullptr);
    EXPECT_EQ(t.nodes().held_bytes(), held) << "clear keeps the nodes for the next cycle";
  }
}

TEST(ArenaTree, RefillingToTheSameSizeTakesNoMoreMemory) {
  ArenaTree t;
  std::size_t held = 0;
  for (int cycle = 0; cycle < 3; ++cycle) {
    for (std::uint64_t k = 0; k < 10000; ++k) t.insert_or_assign(k * 7919 % 10007, k);
    if (cycle == 0) held = t.nodes().held_bytes();
    EXPECT_EQ(t.nodes().held_bytes(), held) << "cycle " << cycle << " made new chunks";
    t.clear();
  }
  EXPECT_GT(held, 0u);
}

// Chunks grow from 64 KiB to 2 MiB and the 2 MiB ones start on a huge-page boundary; what take()
// hands out is line-aligned and never overlaps; rewind() hands out the same memory again.
TEST(BumpChunks, GrowToHugeChunksAndRewind) {
  btree::BumpChunks b;
  std::map<std::uintptr_t, std::size_t> given;  // start -> bytes
  auto take_all = [&](std::size_t total) {
    given.clear();
    for (std::size_t n = 0, i = 0; n < total; ++i) {
      const std::size_t bytes = 100 + 300 * (i % 7);
      auto* p = static_cast<std::byte*>(b.take(bytes));
      const auto at = reinterpret_cast<std::uintptr_t>(p);
      EXPECT_EQ(at % btree::kNodeAlign, 0u);
      std::fill(p, p + bytes, std::byte{0x5a});  // writable, all of it
      given[at] = bytes;
      n += bytes;
    }
    for (auto it = given.begin(); std::next(it) != given.end(); ++it)
      ASSERT_LE(it->first + it->second, std::next(it)->first) << "two takes overlap";
  };
  take_all(std::size_t{8} << 20);
  // 64 + 128 + ... + 1024 KiB, then 2 MiB chunks: 8 MiB needs at least three of them.
  EXPECT_GE(b.held_bytes(), (std::size_t{2} << 20) * 3 + (std::size_t{2} << 20) - (64 << 10));
  const std::size_t held = b.held_bytes();
  auto first = given.begin()->first;
  b.rewind();
  take_all(std::size_t{8} << 20);
  EXPECT_EQ(b.held_bytes(), held) << "the refill made a chunk";
  EXPECT_EQ(given.begin()->first, first);
  // A take larger than a chunk gets a chunk of its own, a huge-page-aligned mapping.
  auto* big = b.take(std::size_t{3} << 20);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big) % btree::kHugeChunk, 0u);
  EXPECT_EQ(b.held_bytes(), held + (std::size_t{4} << 20));
}

// With a NodeChunks behind it, a BumpChunks takes 2 MiB chunks from it and gives them all back.
TEST(BumpChunks, SharedChunksComeBack) {
  btree::NodeChunks src;
  {
    btree::BumpChunks b(&src);
    for (int i = 0; i < 5000; ++i) b.take(1000);  // about 5 MB: three chunks
    EXPECT_EQ(b.held_bytes(), 3 * btree::NodeChunks::kChunkBytes);
    EXPECT_EQ(src.spare_bytes(), 0u);
    EXPECT_THROW(b.take(btree::NodeChunks::kChunkBytes + 1), std::bad_alloc);
  }
  EXPECT_EQ(src.spare_bytes(), 3 * btree::NodeChunks::kChunkBytes);
  btree::BumpChunks again(&src);
  again.take(64);
  EXPECT_EQ(src.spare_bytes(), 2 * btree::NodeChunks::kChunkBytes) << "a spare chunk is reused";
}

TEST(ArenaTree, ExtremeKeysAndSequentialRuns) {
  ArenaTree t;
  std::map<std::uint64_t, std::uint64_t> model;
  for (std::uint64_t k = 0; k < 3000; ++k) {  // ascending and descending runs split the ends
    t.insert_or_assign(k, k);
    t.insert_or_assign(~std::uint64_t{0} - k, k);
    model[k] = k;
    model[~std::uint64_t{0} - k] = k;
  }
  EXPECT_TRUE(t.check().empty());
  expect_same_order(t, model, 0);
  ASSERT_NE(t.find(~std::uint64_t{0}), nullptr);
  EXPECT_EQ(*t.find(~std::uint64_t{0}), 0u);
}

TEST(BPlusTree, FindFloorIsTheGreatestKeyNotAbove) {
  btree::BPlusTree<std::uint64_t, std::uint64_t, 4, 4, std::less<>> t;
  std::map<std::uint64_t, std::uint64_t> m;
  EXPECT_EQ(t.find_floor(std::uint64_t{5}), nullptr);
  std::mt19937_64 rng(11);
  for (int i = 0; i < 400; ++i) {
    const std::uint64_t k = 10 + rng() % 5000;
    t.insert_or_assign(k, k * 3);
    m[k] = k * 3;
    if (i % 7 == 0) {  // erasing leaves sparse leaves: the floor may end the leaf before
      const std::uint64_t e = 10 + rng() % 5000;
      EXPECT_EQ(t.erase(e), m.erase(e) == 1);
    }
  }
  for (std::uint64_t k = 0; k < 5100; ++k) {
    auto it = m.upper_bound(k);
    const std::uint64_t* got = t.find_floor(k);
    if (it == m.begin()) {
      ASSERT_EQ(got, nullptr) << k;
    } else {
      ASSERT_NE(got, nullptr) << k;
      ASSERT_EQ(*got, std::prev(it)->second) << k;
    }
  }
}

// A tree of range starts as FPTree keeps its DRAM inner nodes (each leaf's low key to the
// leaf), with nodes of 4 so that splits grow several levels, against an ordered map: built
// bottom-up from the leaves, then grown by leaf splits in random order; every key routes (by
// find_floor) to the leaf whose range holds it. `key_of` maps the numbers to keys in order.
template <class K, class KeyOf>
void range_starts_route_like_a_map(KeyOf key_of) {
  struct Ref {
    int id;
  };
  std::vector<std::unique_ptr<Ref>> refs;
  std::map<K, Ref*> model;
  std::vector<std::pair<K, Ref*>> start;
  for (std::uint64_t k : {0, 1000, 5000}) {
    refs.push_back(std::make_unique<Ref>(Ref{static_cast<int>(refs.size())}));
    model[key_of(k)] = refs.back().get();
    start.emplace_back(key_of(k), refs.back().get());
  }
  btree::BPlusTree<K, Ref*, 4, 4, std::less<>> t;
  t.assign_sorted(start);
  std::mt19937_64 rng(3);
  auto routes_ok = [&] {
    for (int i = 0; i < 300; ++i) {
      K k = key_of(rng() % 12000);
      if (*t.find_floor(k) != std::prev(model.upper_bound(k))->second) return false;
    }
    for (const auto& [k, r] : model)
      if (*t.find_floor(k) != r) return false;
    std::vector<Ref*> order, want;
    for (auto it = t.begin(); it.valid(); ++it) order.push_back(it.value());
    for (const auto& kv : model) want.push_back(kv.second);
    return order == want && t.check().empty();
  };
  ASSERT_TRUE(routes_ok());
  for (int i = 0; i < 600; ++i) {
    K sep = key_of(rng() % 12000);
    if (model.count(sep)) continue;
    refs.push_back(std::make_unique<Ref>(Ref{static_cast<int>(refs.size())}));
    t.insert(sep, refs.back().get());  // the leaf holding sep splits at sep
    model[sep] = refs.back().get();
    if (i % 50 == 0) {
      ASSERT_TRUE(routes_ok()) << "after " << i << " splits";
    }
  }
  ASSERT_TRUE(routes_ok());
  EXPECT_GE(t.height(), 4u) << "nodes of 4 over ~600 leaves must have grown several levels";
  // A rebuild from the same leaves routes the same way.
  std::vector<std::pair<K, Ref*>> all(model.begin(), model.end());
  t.assign_sorted(all);
  EXPECT_TRUE(routes_ok());
  t.assign_sorted({{key_of(0), refs[0].get()}});  // one leaf
  EXPECT_EQ(*t.find_floor(key_of(11999)), refs[0].get());
}

TEST(BPlusTree, RangeStartsRouteLikeAnOrderedMapThroughSplits) {
  range_starts_route_like_a_map<std::uint64_t>([](std::uint64_t k) { return k; });
}

// Keys too long for std::string's inline buffer, so every move of a key in a split or a
// rebuild moves heap memory (ASan sees a bad one).
TEST(BPlusTree, LongStringRangeStartsRouteLikeAnOrderedMap) {
  range_starts_route_like_a_map<std::string>([](std::uint64_t k) {
    std::string digits = std::to_string(k);
    return std::string(24, 'p') + std::string(6 - digits.size(), '0') + digits;
  });
}

TEST(BPlusTree, StringKeysAreFoundByView) {
  btree::BPlusTree<std::string, int, 4, 4, std::less<>> t;
  for (int i = 0; i < 300; ++i) t.insert("key" + std::to_string(i * 2), i);
  const std::string_view hit = "key246", miss = "key247";
  ASSERT_NE(t.find(hit), nullptr);
  EXPECT_EQ(*t.find(hit), 123);
  EXPECT_EQ(t.find(miss), nullptr);
  EXPECT_EQ(*t.find_floor(miss), 123);
  EXPECT_EQ(t.lower_bound(miss).key(), "key248");
  std::size_t keys = 0;
  t.for_each_stored_key([&](const std::string& k) { keys += k.rfind("key", 0) == 0; });
  EXPECT_GT(keys, t.size()) << "separators are visited besides the leaves' keys";
}

TEST(BPlusTree, AssignSortedBuildsFullNodes) {
  for (std::size_t n : {0u, 1u, 4u, 5u, 21u, 22u, 1000u}) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> sorted;
    std::map<std::uint64_t, std::uint64_t> m;
    for (std::uint64_t k = 0; k < n; ++k) {
      sorted.emplace_back(k * 3, k);
      m[k * 3] = k;
    }
    SmallTree t;
    t.insert(7, 7);  // replaced
    t.assign_sorted(sorted);
    EXPECT_TRUE(t.check().empty()) << n;
    expect_equal(t, m);
    EXPECT_EQ(t.leaf_count(), (n + 3) / 4) << "leaves are full";
    for (std::uint64_t k = 0; k < 3 * n + 2; ++k) {  // it stays a working tree
      t.insert_or_assign(k, k);
      m[k] = k;
    }
    EXPECT_TRUE(t.check().empty()) << n;
    expect_equal(t, m);
  }
}

TEST(Registry, ListsTheVolatileIndexes) {
  const auto& all = registered_indexes();
  auto find = [&](const std::string& n) -> const IndexInfo* {
    for (const auto& i : all)
      if (i.name == n) return &i;
    return nullptr;
  };
  ASSERT_TRUE(find("btree"));
  ASSERT_TRUE(find("stdmap"));
  EXPECT_FALSE(find("btree")->persistent);
  EXPECT_TRUE(find("btree")->concurrent);
  EXPECT_FALSE(find("stdmap")->concurrent);
  EXPECT_FALSE(find("stdmap")->description.empty());
  EXPECT_EQ(&find_index("btree"), find("btree"));
}

// Pages and plots name an index by its display name (scripts/reproduce takes them from
// `dptree bench --list --json`): every index has one, and no two share one.
TEST(Registry, EveryIndexHasADisplayNameOfItsOwn) {
  std::map<std::string, std::string> by_display_name;
  for (const auto& i : registered_indexes()) {
    EXPECT_FALSE(i.display_name.empty()) << i.name;
    const auto [at, added] = by_display_name.emplace(i.display_name, i.name);
    EXPECT_TRUE(added) << i.name << " and " << at->second << " are both shown as '"
                       << i.display_name << "'";
  }
  EXPECT_EQ(find_index("btree").display_name, "B+-tree (DRAM)");
  EXPECT_EQ(find_index("fastfair").display_name, "FAST_FAIR");
  EXPECT_EQ(find_index("cdptree").display_name, "DPTree (concurrent)");
}

// An entry registered without a display name shows its name; one that takes another index's
// display name is refused.
TEST(Registry, DisplayNamesDefaultToTheNameAndAreNotShared) {
  const auto make = find_index("btree").create;
  register_index({"btree-unnamed", "test only: btree without a display name", false, true, make});
  EXPECT_EQ(find_index("btree-unnamed").display_name, "btree-unnamed");
  IndexInfo twin{"btree-twin", "test only: btree shown as FAST_FAIR", false, true, make};
  twin.display_name = "FAST_FAIR";
  try {
    register_index(twin);
    FAIL() << "a second index shown as FAST_FAIR was registered";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("fastfair"), std::string::npos) << e.what();
  }
  IndexInfo shown_as_a_name{"btree-shown-as-unnamed", "test only", false, true, make};
  shown_as_a_name.display_name = "btree-unnamed";
  EXPECT_THROW(register_index(shown_as_a_name), Error);
  for (const auto& i : registered_indexes()) EXPECT_NE(i.name, "btree-twin");
}

TEST(Registry, UnknownAndDuplicateNamesAreRefused) {
  try {
    find_index("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("btree"), std::string::npos) << "lists known names";
  }
  EXPECT_THROW(register_index({"btree", "again", false, false,
                               [](const IndexConfig&) { return std::unique_ptr<Index>(); }}),
               Error);
  EXPECT_THROW(register_index({"", "nameless", false, false, nullptr}), Error);
}

TEST(Registry, IndexesRefuseUnknownOptions) {
  IndexConfig cfg;
  cfg.options["fanout"] = "3";
  EXPECT_THROW(find_index("btree").create(cfg), Error);
}

// Model-based: every operation of the Index interface against std::map.
class VolatileIndex : public ::testing::TestWithParam<std::string> {};

TEST_P(VolatileIndex, MatchesStdMap) {
  auto idx = find_index(GetParam()).create(IndexConfig{});
  ASSERT_EQ(idx->name(), GetParam());
  std::map<Key, Value> m;
  std::mt19937_64 rng(17);
  std::vector<KV> out;
  for (int i = 0; i < 20000; ++i) {
    const Key k = rng() % 3000;
    const Value v = rng() % (idx->max_value() == ~Value{0} ? ~Value{0} : idx->max_value() + 1);
    switch (rng() % 6) {
      case 0:
        idx->upsert(k, v), m[k] = v;
        break;
      case 1:
        ASSERT_EQ(idx->insert(k, v), m.emplace(k, v).second);
        break;
      case 2: {
        auto it = m.find(k);
        ASSERT_EQ(idx->update(k, v), it != m.end());
        if (it != m.end()) it->second = v;
        break;
      }
      case 3:
        ASSERT_EQ(idx->remove(k), m.erase(k) > 0);
        break;
      case 4: {
        auto got = idx->lookup(k);
        auto it = m.find(k);
        ASSERT_EQ(got.has_value(), it != m.end());
        if (got) {
          ASSERT_EQ(*got, it->second);
        }
        break;
      }
      case 5: {
        out.assign(1, {1, 1});  // scan appends: what is already there stays
        const std::size_t n = rng() % 40;
        const std::size_t got = idx->scan(k, n, out);
        ASSERT_EQ(out.size(), got + 1);
        auto it = m.lower_bound(k);
        for (std::size_t j = 0; j < n && it != m.end(); ++j, ++it) {
          ASSERT_LT(j, got);
          ASSERT_EQ(out[j + 1], (KV{it->first, it->second}));
        }
        break;
      }
    }
  }
  EXPECT_EQ(idx->stats().records, m.size());
  EXPECT_GT(idx->stats().dram_bytes, 0u);
  EXPECT_TRUE(idx->check().ok);
}

INSTANTIATE_TEST_SUITE_P(Registered, VolatileIndex, ::testing::Values("btree", "stdmap"));

TEST(BTreeIndex, ConcurrentWritersAndReaders) {
  auto idx = find_index("btree").create(IndexConfig{});
  constexpr Key kPerWriter = 20000;
  std::atomic<bool> stop{false};
  std::atomic<bool> disorder{false};
  std::thread reader([&] {
    std::vector<KV> out;
    while (!stop.load()) {
      out.clear();
      idx->scan(kPerWriter / 2, 200, out);
      for (std::size_t i = 1; i < out.size(); ++i)
        if (out[i - 1].first >= out[i].first) disorder = true;
      (void)idx->lookup(7);
    }
  });
  std::vector<std::thread> writers;
  for (Key w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      for (Key k = 0; k < kPerWriter; ++k) idx->upsert(w * kPerWriter + k, k);
      for (Key k = 0; k < kPerWriter; k += 4) idx->remove(w * kPerWriter + k);
    });
  for (auto& t : writers) t.join();
  stop = true;
  reader.join();
  EXPECT_FALSE(disorder.load());
  EXPECT_EQ(idx->stats().records, 2 * (kPerWriter - kPerWriter / 4));
  for (Key k = 0; k < 2 * kPerWriter; ++k) ASSERT_EQ(idx->lookup(k).has_value(), k % 4 != 0) << k;
  const CheckReport rep = idx->check();
  EXPECT_TRUE(rep.ok) << (rep.problems.empty() ? "" : rep.problems.front());
}

}  // namespace
}  // namespace dptree
