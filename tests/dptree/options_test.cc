// DPTree's experiment switches (dptree_options.h): leaf probing schemes (Figure 10), the
// out-of-place merge (Figure 8d), the split that keeps the old leaf, entry widths chosen at run
// time through the registry (Figures 8d and 10); each option parsed and refused with a clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "dptree/cdptree.h"
#include "dptree/dptree.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "engine/base_leaf.h"
#include "small_options.h"

namespace dptree {
namespace {

std::string error_of(const std::function<void()>& f, Errc kind = Errc::invalid_argument) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kind);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

DPTreeOptions small() {
  return small_options(16, 0.3, 24);
}

TEST(DPTreeOptions, ExperimentSwitchesParseAndRefuseClearly) {
  DPTreeOptions d;
  EXPECT_EQ(d.probe, ProbeMode::both);
  EXPECT_EQ(d.merge_mode, MergeMode::in_place);
  auto o = DPTreeOptions::from_map({{"probe", "linear"},
                                    {"merge_mode", "out_of_place"},
                                    {"key_bytes", "16"},
                                    {"value_bytes", "48"}});
  EXPECT_EQ(o.probe, ProbeMode::linear);
  EXPECT_EQ(o.merge_mode, MergeMode::out_of_place);
  EXPECT_EQ(o.key_bytes, 16u);
  EXPECT_EQ(o.value_bytes, 48u);
  EXPECT_EQ(DPTreeOptions::from_map({{"probe", "fingerprint"}}).probe, ProbeMode::fingerprint);
  EXPECT_EQ(DPTreeOptions::from_map({{"probe", "both"}}).probe, ProbeMode::both);
  EXPECT_EQ(DPTreeOptions::from_map({{"merge_mode", "in_place"}}).merge_mode, MergeMode::in_place);
  auto msg = error_of([] { DPTreeOptions::from_map({{"probe", "hash"}}); });
  EXPECT_NE(msg.find("probe='hash'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("both, linear or fingerprint"), std::string::npos) << msg;
  msg = error_of([] { DPTreeOptions::from_map({{"merge_mode", "lsm"}}); });
  EXPECT_NE(msg.find("in_place or out_of_place"), std::string::npos) << msg;
  EXPECT_EQ(d.split, SplitMode::keep_last);
  EXPECT_EQ(DPTreeOptions::from_map({{"split", "rebuild"}}).split, SplitMode::rebuild);
  EXPECT_EQ(DPTreeOptions::from_map({{"split", "keep_last"}}).split, SplitMode::keep_last);
  EXPECT_EQ(DPTreeOptions::from_map({{"split", "thirds"}}).split, SplitMode::thirds);
  msg = error_of([] { DPTreeOptions::from_map({{"split", "halves"}}); });
  EXPECT_NE(msg.find("split='halves'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("use keep_last, rebuild or thirds"), std::string::npos) << msg;
  DPTreeOptions bad_split;
  bad_split.split = static_cast<SplitMode>(7);
  msg = error_of([&] { bad_split.validate(); });
  EXPECT_NE(msg.find("split is not one of rebuild, keep_last, thirds"), std::string::npos) << msg;
  for (const char* bad : {"4", "12", "64", "57"}) {
    msg = error_of([&] { DPTreeOptions::from_map({{"key_bytes", bad}}); });
    EXPECT_NE(msg.find("key_bytes=" + std::string(bad)), std::string::npos) << msg;
    EXPECT_NE(msg.find("8, 16, 24, 32, 40, 48 or 56"), std::string::npos) << msg;
    msg = error_of([&] { DPTreeOptions::from_map({{"value_bytes", bad}}); });
    EXPECT_NE(msg.find("value_bytes=" + std::string(bad)), std::string::npos) << msg;
  }
  msg = error_of([] { DPTreeOptions::from_map({{"key_bytes", "-8"}}); });
  EXPECT_NE(msg.find("not a whole number"), std::string::npos) << msg;
  // A compile-time width and a different option width clash.
  auto pool = pm::Pool::create_in_memory(1 << 20);
  DPTreeOptions w;
  w.key_bytes = 16;
  msg = error_of([&] { DPTree<8, 8>::create(*pool, w); });
  EXPECT_NE(msg.find("key_bytes=16"), std::string::npos) << msg;
  EXPECT_EQ(*pool->root_word(), 0u) << "nothing created";
  w.key_bytes = 8;
  EXPECT_NO_THROW((DPTree<8, 8>::create(*pool, w)));
}

// A zeroed leaf in DRAM, 8-byte keys and values, for the leaf functions (base_leaf.h).
struct HandLeaf {
  explicit HandLeaf(std::size_t cap) : L(layout(cap)), mem(L.bytes), lf{mem.data(), &L} {}
  static detail::LeafLayout layout(std::size_t cap) {
    detail::LeafLayout l;
    l.init(cap, 8, 8);
    return l;
  }
  HandLeaf(const HandLeaf&) = delete;
  HandLeaf& operator=(const HandLeaf&) = delete;
  // Version 0 holds the keys step, 2 step, .., n step with the values 1..n; returns them.
  std::vector<detail::KVPair> fill(detail::u64 n, detail::u64 step) {
    std::vector<detail::KVPair> es;
    for (detail::u64 k = 1; k <= n; ++k) es.emplace_back(k * step, k);
    detail::leaf_fill(lf, 0, es);
    return es;
  }
  detail::LeafLayout L;
  std::vector<std::byte> mem;
  detail::Leaf lf;
};

// The three probing schemes on hand-made leaves: the fingerprint schemes trust fingerprints,
// linear probing alone does not; the fingerprint-only scheme ignores the hash position.
// Both DPTree families describe their options (`dptree bench --help-options`) from the table
// their parser uses: every key is accepted with the default it shows and gives the default
// options, and an unknown key is refused with the list of the described ones.
TEST(OptionTable, DescribedDefaultsParseToTheDefaults) {
  for (const char* name : {"dptree", "cdptree"}) {
    const IndexInfo& info = find_index(name);
    ASSERT_GE(info.options.size(), 12u) << name;
    std::map<std::string, std::string> all;
    for (const auto& o : info.options) {
      EXPECT_FALSE(o.help.empty() || o.range.empty() || o.kind.empty()) << name << " " << o.key;
      all[o.key] = o.dflt;
    }
    EXPECT_EQ(all.size(), info.options.size()) << name << ": a key is described twice";
    if (std::string(name) == "dptree") {
      const DPTreeOptions d{}, p = DPTreeOptions::from_map(all);
      EXPECT_EQ(p.leaf_capacity, d.leaf_capacity);
      EXPECT_EQ(p.merge_ratio, d.merge_ratio);
      EXPECT_EQ(p.split, d.split);
      EXPECT_EQ(p.probe, d.probe);
      EXPECT_EQ(p.log_page_size, d.log_page_size);
    } else {
      const CDPTreeOptions d{}, p = CDPTreeOptions::from_map(all);
      EXPECT_EQ(p.log_partitions, d.log_partitions);
      EXPECT_EQ(p.merge_ratio, d.merge_ratio);
      EXPECT_EQ(p.inplace_delete, d.inplace_delete);
      EXPECT_EQ(p.leaf_bytes, d.leaf_bytes);
      EXPECT_EQ(p.split, d.split);
    }
  }
  try {
    DPTreeOptions::from_map({{"bogus", "1"}});
    ADD_FAILURE() << "an unknown key was taken";
  } catch (const Error& e) {
    for (const auto& o : find_index("dptree").options)
      EXPECT_NE(std::string(e.what()).find(o.key), std::string::npos) << o.key;
  }
}

TEST(DPTreeProbe, SchemesDifferWhereTheyShould) {
  HandLeaf h(16);
  auto& [L, mem, lf] = h;
  const auto es = h.fill(8, 1000);
  for (auto mode : {ProbeMode::both, ProbeMode::linear, ProbeMode::fingerprint}) {
    for (auto& [k, v] : es) {
      long s = detail::leaf_find(lf, 0, k, mode);
      ASSERT_GE(s, 0) << to_string(mode);
      EXPECT_EQ(lf.value(static_cast<std::size_t>(s)), v);
    }
    EXPECT_EQ(detail::leaf_find(lf, 0, 77, mode), -1) << to_string(mode);
  }
  // A wrong fingerprint hides the key from the fingerprint schemes only.
  long s = detail::leaf_find(lf, 0, 3000, ProbeMode::linear);
  lf.fp(0)[s] ^= 0xff;
  EXPECT_EQ(detail::leaf_find(lf, 0, 3000, ProbeMode::both), -1);
  EXPECT_EQ(detail::leaf_find(lf, 0, 3000, ProbeMode::fingerprint), -1);
  EXPECT_EQ(detail::leaf_find(lf, 0, 3000, ProbeMode::linear), s);
  lf.fp(0)[s] ^= 0xff;
  // An entry moved off its probe path (behind an empty slot) is found by the
  // fingerprint-only scan, which does not use the hash position, and by no probing scheme.
  std::size_t home = detail::home_slot(detail::hash_key(5000), L.cap);
  long at = detail::leaf_find(lf, 0, 5000, ProbeMode::both);
  std::size_t empty = 0;
  while (lf.state(0, empty) != detail::kEmpty) ++empty;
  std::size_t to = (empty + 1) % L.cap;
  while (lf.state(0, to) != detail::kEmpty || to == home) to = (to + 1) % L.cap;
  std::memcpy(lf.entry(to), lf.entry(static_cast<std::size_t>(at)), L.ebytes);
  lf.fp(0)[to] = lf.fp(0)[at];
  lf.set_state(0, to, detail::kOccupied);
  lf.set_state(0, static_cast<std::size_t>(at), detail::kEmpty);
  bool reachable = false;  // is `to` on the probe path from home before an empty slot?
  for (std::size_t p = home; lf.state(0, p) != detail::kEmpty || p == to; p = (p + 1) % L.cap)
    if (p == to) {
      reachable = true;
      break;
    }
  ASSERT_FALSE(reachable);
  EXPECT_EQ(detail::leaf_find(lf, 0, 5000, ProbeMode::fingerprint), static_cast<long>(to));
  EXPECT_EQ(detail::leaf_find(lf, 0, 5000, ProbeMode::both), -1);
  EXPECT_EQ(detail::leaf_find(lf, 0, 5000, ProbeMode::linear), -1);
}

// The block-wise probe of `both` (sixteen slots per step) answers as the slot-by-slot probe
// of §2.2 does: on leaves near empty, near full and full (no empty slot: the probe wraps),
// with deleted slots, keys of equal fingerprint, and capacities that are and are not
// multiples of the block.
TEST(DPTreeProbe, BlockProbeAnswersAsTheSlotProbe) {
  auto slot_probe = [](detail::Leaf lf, detail::u64 k) -> long {
    detail::u64 h = detail::hash_key(k);
    std::size_t s = detail::home_slot(h, lf.L->cap);
    for (std::size_t n = 0; n < lf.L->cap; ++n, s = (s + 1) % lf.L->cap) {
      if (lf.state(0, s) == detail::kEmpty) return -1;
      if (lf.state(0, s) == detail::kOccupied && lf.fp(0)[s] == detail::fingerprint_of(h) &&
          lf.key(s) == k)
        return static_cast<long>(s);
    }
    return -1;
  };
  std::mt19937_64 rng(11);
  std::size_t hits = 0, misses = 0, wrapped = 0;
  for (std::size_t cap : {16u, 48u, 256u, 40u}) {
    HandLeaf h(cap);
    auto& [L, mem, lf] = h;
    for (double fill : {0.1, 0.5, 0.9, 1.0}) {
      for (int round = 0; round < 20; ++round) {
        std::fill(mem.begin(), mem.end(), std::byte{0});
        auto n = static_cast<std::size_t>(fill * static_cast<double>(cap));
        // Keys in a small range: many share a fingerprint with some probed key.
        std::map<detail::u64, detail::u64> keys;
        while (keys.size() < n) keys.emplace(rng() % (8 * cap), keys.size());
        std::vector<detail::KVPair> es(keys.begin(), keys.end());
        detail::leaf_fill(lf, 0, es);
        for (std::size_t s = 0; s < cap; ++s)  // some entries deleted: probes pass them
          if (lf.state(0, s) == detail::kOccupied && rng() % 4 == 0)
            lf.set_state(0, s, detail::kDeleted);
        bool full = true;
        for (std::size_t s = 0; s < cap; ++s) full &= lf.state(0, s) != detail::kEmpty;
        wrapped += full;
        for (detail::u64 k = 0; k < 8 * cap; ++k) {
          long want = slot_probe(lf, k);
          ASSERT_EQ(detail::leaf_find(lf, 0, k, ProbeMode::both), want)
              << "cap " << cap << " fill " << fill << " key " << k;
          (want >= 0 ? hits : misses) += 1;
        }
      }
    }
  }
  EXPECT_GT(hits, 1000u);
  EXPECT_GT(misses, 1000u);
  EXPECT_GT(wrapped, 10u) << "leaves without an empty slot were probed";
}

// A probe reads the fingerprint bytes and not the bitmap: an empty slot's byte is kFpEmpty
// and a deleted one's kFpDeleted, kept so by every state change and restored by the rebuild
// after a restart, whatever the bytes held; leaf_bad_fp_code (check()) names a wrong byte.
TEST(DPTreeProbe, FingerprintBytesCarryTheEmptyAndDeletedCodes) {
  HandLeaf h(64);
  auto& [L, mem, lf] = h;
  const auto es = h.fill(40, 7);
  EXPECT_EQ(detail::leaf_bad_fp_code(lf, 0), -1);
  for (std::size_t s = 0; s < L.cap; ++s) {
    if (lf.state(0, s) == detail::kOccupied) {
      EXPECT_GT(lf.fp(0)[s], detail::kFpDeleted) << "slot " << s;
    }
  }
  // Deleting every other key: the keys behind a deleted slot are still found.
  for (std::size_t i = 0; i < es.size(); i += 2) {
    long s = detail::leaf_find(lf, 0, es[i].first);
    ASSERT_GE(s, 0);
    lf.set_state(0, static_cast<std::size_t>(s), detail::kDeleted);
    EXPECT_EQ(lf.fp(0)[s], detail::kFpDeleted);
  }
  for (std::size_t i = 0; i < es.size(); ++i)
    EXPECT_EQ(detail::leaf_find(lf, 0, es[i].first) >= 0, i % 2 == 1) << es[i].first;
  EXPECT_EQ(detail::leaf_bad_fp_code(lf, 0), -1);
  // A byte that disagrees with its state is named.
  std::size_t empty = 0;
  while (lf.state(0, empty) != detail::kEmpty) ++empty;
  lf.fp(0)[empty] = 0x77;
  EXPECT_EQ(detail::leaf_bad_fp_code(lf, 0), static_cast<long>(empty));
  // After a restart the bytes may hold anything: the rebuild makes them right again.
  for (std::size_t s = 0; s < L.cap; ++s) lf.fp(0)[s] = static_cast<std::uint8_t>(s * 37 + 5);
  detail::rebuild_leaf_meta(lf, 0);
  EXPECT_EQ(detail::leaf_bad_fp_code(lf, 0), -1);
  for (std::size_t i = 0; i < es.size(); ++i)
    EXPECT_EQ(detail::leaf_find(lf, 0, es[i].first) >= 0, i % 2 == 1) << es[i].first;
}

// Whole trees: every scheme answers every lookup the same, hits and misses, also right after
// a restart (lazy rebuild).
TEST(DPTreeProbe, EverySchemeAnswersTheSame) {
  auto pool = pm::Pool::create_in_memory(8 << 20);
  std::map<Key, Value> model;
  std::mt19937_64 rng(5);
  {
    auto t = DPTree<>::create(*pool, small());
    for (int i = 0; i < 6000; ++i) {
      Key k = rng() % 5000;
      if (rng() % 5 == 0) {
        t->remove(k);
        model.erase(k);
      } else {
        t->upsert(k, i);
        model[k] = static_cast<Value>(i);
      }
    }
    EXPECT_GT(t->stats().merges, 10u);
  }
  for (auto mode : {ProbeMode::both, ProbeMode::linear, ProbeMode::fingerprint}) {
    auto o = small();
    o.probe = mode;
    auto t = DPTree<>::open(*pool, o);
    EXPECT_EQ(t->options().probe, mode);
    for (Key k = 0; k < 5100; ++k) {
      auto it = model.find(k);
      ASSERT_EQ(t->lookup(k), it == model.end() ? std::nullopt : std::optional<Value>(it->second))
          << to_string(mode) << " key " << k;
    }
    EXPECT_TRUE(t->check().ok);
  }
}

std::map<Key, Value> fill(DPTreeCore& t, int n, std::uint64_t seed) {
  std::map<Key, Value> model;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < n; ++i) {
    Key k = rng() % 100000;
    t.upsert(k, i);
    model[k] = static_cast<Value>(i);
  }
  return model;
}

// Figure 8d: the out-of-place merge writes the whole base tree every merge, so it frees every
// old leaf and flushes far more node lines than the in-place merge for the same inserts.
TEST(DPTreeMergeMode, OutOfPlaceRewritesTheBaseTreeEveryMerge) {
  std::size_t node_lines[2] = {};
  for (auto mode : {MergeMode::in_place, MergeMode::out_of_place}) {
    DPTreeOptions o;  // the paper's defaults (leaf 256, R = 0.1), as in Figure 8d
    o.merge_mode = mode;
    auto pool = pm::Pool::create_in_memory(32 << 20);
    auto t = DPTree<>::create(*pool, o);
    auto before = pm::counters();
    auto model = fill(*t, 30000, 3);
    node_lines[static_cast<int>(mode)] = (pm::counters() - before)[pm::Category::node].lines;
    t->merge();
    auto s = t->stats();
    std::size_t leaves = s.leaves, freed = s.leaves_freed;
    t->upsert(1, 1);  // one entry: in place touches one leaf, out of place rewrites all
    model[1] = 1;
    t->merge();
    s = t->stats();
    if (mode == MergeMode::out_of_place)
      EXPECT_EQ(s.leaves_freed - freed, leaves) << "every old leaf is garbage";
    else
      EXPECT_LE(s.leaves_freed - freed, 1u);
    std::vector<KV> all;
    t->scan(0, 1u << 20, all);
    ASSERT_EQ(all.size(), model.size());
    for (auto& [k, v] : all) ASSERT_EQ(model.at(k), v);
    auto r = t->check();
    EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
    t.reset();
    t = DPTree<>::open(*pool, o);
    for (auto& [k, v] : model) ASSERT_EQ(t->lookup(k), std::optional<Value>(v));
  }
  EXPECT_GT(node_lines[1], 2 * node_lines[0])
      << "in place " << node_lines[0] << " out of place " << node_lines[1];
}

// The deleted slots that split=keep_last empties are exactly those no entry's probe path
// crosses: on full and nearly full leaves of random keys (long and wrapping paths), after
// random deletes, the set cleared is the one a walk of every path finds.
TEST(DPTreeSplit, ClearsExactlyTheDeletedSlotsNoPathCrosses) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 40; ++round) {
    HandLeaf h(64);
    auto& [L, mem, lf] = h;
    std::vector<detail::KVPair> es;
    const std::size_t n = 40 + static_cast<std::size_t>(rng() % 25);  // up to a full leaf
    std::set<detail::u64> keys;
    while (keys.size() < n) keys.insert(rng() >> 1);
    for (detail::u64 k : keys) es.emplace_back(k, 1);
    detail::leaf_fill(lf, 1, es);
    std::vector<detail::u64> gone;
    for (const auto& e : es)
      if (rng() % 3 == 0) gone.push_back(e.first);
    detail::leaf_delete(lf, 1, gone);
    std::vector<bool> crossed(L.cap, false);
    for (std::size_t s = 0; s < L.cap; ++s) {
      if (lf.state(1, s) != detail::kOccupied) continue;
      for (std::size_t p = detail::home_slot(detail::hash_key(lf.key(s)), L.cap); p != s;
           p = (p + 1) % L.cap)
        crossed[p] = true;
    }
    std::vector<unsigned> before(L.cap);
    for (std::size_t s = 0; s < L.cap; ++s) before[s] = lf.state(1, s);
    const std::size_t cleared = detail::leaf_clear_unreached_deleted(lf, 1);
    std::size_t expected = 0;
    for (std::size_t s = 0; s < L.cap; ++s) {
      const bool clear = before[s] == detail::kDeleted && !crossed[s];
      expected += clear;
      EXPECT_EQ(lf.state(1, s), clear ? detail::kEmpty : before[s])
          << "round " << round << " slot " << s;
    }
    EXPECT_EQ(cleared, expected) << "round " << round;
    for (const auto& e : es)
      EXPECT_EQ(detail::leaf_find(lf, 1, e.first) >= 0,
                !std::binary_search(gone.begin(), gone.end(), e.first));
  }
}

// A scan's start in a leaf (the prefetching, branch-free binary search through the order
// array) is std::lower_bound's over the leaf's keys, at every count from empty to full.
TEST(DPTreeLeaf, LowerBoundMatchesTheSortedKeysAtEveryCount) {
  std::mt19937_64 rng(11);
  for (std::size_t n = 0; n <= 64; ++n) {
    HandLeaf h(64);
    auto& [L, mem, lf] = h;
    std::set<detail::u64> keys;
    while (keys.size() < n) keys.insert(2 + (rng() >> 2) * 2);  // even, so odd probes fall between
    std::vector<detail::KVPair> es;
    for (detail::u64 k : keys) es.emplace_back(k, 1);
    detail::leaf_fill(lf, 1, es);
    const std::vector<detail::u64> sorted(keys.begin(), keys.end());
    std::vector<detail::u64> probes = {0, 1, ~detail::u64{0}};
    for (detail::u64 k : sorted) probes.insert(probes.end(), {k - 1, k, k + 1});
    for (detail::u64 k : probes) {
      const auto want = std::lower_bound(sorted.begin(), sorted.end(), k) - sorted.begin();
      ASSERT_EQ(detail::leaf_lower_bound(lf, 1, k), static_cast<std::size_t>(want))
          << "count " << n << " key " << k;
    }
  }
}

// A scan's walk over a leaf list (both trees' base scans), which takes the next leaf and
// requests its lines while it reads the current one: from every start, for lengths around
// the prefetch distance and past the list's end, the entries are std::lower_bound's slice of
// the sorted keys, the result says whether the list ended, and each leaf is taken (its
// metadata made current) once, in order, and only when its entries are read. Empty leaves,
// short ones and a full one are in the list.
TEST(DPTreeLeaf, CollectAcrossLeavesMatchesTheSortedKeys) {
  std::mt19937_64 rng(12);
  const std::size_t counts[] = {5, 0, 64, 1, 9, 0, 33, 8, 2};
  std::vector<std::unique_ptr<HandLeaf>> leaves;
  std::vector<detail::u64> sorted, max_keys;
  detail::u64 next_key = 2;
  for (std::size_t c : counts) {
    leaves.push_back(std::make_unique<HandLeaf>(64));
    std::vector<detail::KVPair> es;
    for (std::size_t i = 0; i < c; ++i) {
      next_key += 2 + 2 * (rng() % 1000);  // even, so odd starts fall between
      es.emplace_back(next_key, next_key ^ 0x55);
      sorted.push_back(next_key);
    }
    detail::leaf_fill(leaves.back()->lf, 1, es);
    max_keys.push_back(next_key + 1);  // the leaf's range ends between its keys and the next's
  }
  std::vector<detail::u64> starts = {0, 1};
  for (detail::u64 k : sorted) starts.insert(starts.end(), {k - 1, k, k + 1});
  for (detail::u64 start : starts) {
    const std::size_t li =
        std::lower_bound(max_keys.begin(), max_keys.end(), start) - max_keys.begin();
    const std::size_t from = std::lower_bound(sorted.begin(), sorted.end(), start) - sorted.begin();
    for (std::size_t n : {1, 7, 8, 9, 16, 40, 100, 200}) {
      std::vector<detail::KVPair> out;
      std::vector<std::size_t> taken;
      const bool ended = detail::leaves_collect(
          li, leaves.size(), 1, start, n, out,
          [&](std::size_t i) {
            taken.push_back(i);
            return leaves[i]->lf;
          },
          [](detail::Leaf lf, std::size_t s) { return lf.value(s); });
      const std::size_t want = std::min(n, sorted.size() - from);
      ASSERT_EQ(out.size(), want) << "start " << start << " n " << n;
      for (std::size_t i = 0; i < want; ++i) {
        ASSERT_EQ(out[i].first, sorted[from + i]) << "start " << start << " n " << n;
        ASSERT_EQ(out[i].second, sorted[from + i] ^ 0x55);
      }
      EXPECT_EQ(ended, want < n) << "start " << start << " n " << n;
      // Taken once each, in order, from the start's leaf to the one holding the last entry
      // read (or the last leaf when the entries ran out).
      ASSERT_FALSE(taken.empty());
      for (std::size_t i = 0; i < taken.size(); ++i) ASSERT_EQ(taken[i], li + i);
      std::size_t last = li;
      if (want > 0) {
        const detail::u64 k = out.back().first;
        last = std::lower_bound(max_keys.begin(), max_keys.end(), k) - max_keys.begin();
      }
      if (want < n) last = leaves.size() - 1;
      EXPECT_EQ(taken.back(), last) << "start " << start << " n " << n;
    }
  }
}

// split=keep_last on hand-made leaves: after a split drops half a leaf's keys from version 1,
// deleted slots no probe crosses become empty again, and an upsert that probes past such a
// slot (empty in version 1, an entry of version 0) marks it deleted so its key stays
// reachable; version 0 is never touched.
TEST(DPTreeSplit, ClearedSlotsKeepEveryKeyReachable) {
  HandLeaf h(16);
  auto& [L, mem, lf] = h;
  const auto es = h.fill(12, 7777);
  lf.copy_meta(0, 1);
  std::vector<detail::u64> moved;
  for (std::size_t i = 0; i < 6; ++i) moved.push_back(es[i].first);
  ASSERT_EQ(detail::leaf_delete(lf, 1, moved), 6u);
  std::vector<std::byte> v0(mem.begin() + static_cast<long>(L.meta_p[0]),
                            mem.begin() + static_cast<long>(L.meta_p[0] + L.meta_p_bytes));
  EXPECT_GT(detail::leaf_clear_unreached_deleted(lf, 1), 0u);
  for (std::size_t i = 0; i < es.size(); ++i) {
    EXPECT_EQ(detail::leaf_find(lf, 1, es[i].first) >= 0, i >= 6) << es[i].first;
    EXPECT_GE(detail::leaf_find(lf, 0, es[i].first), 0) << "version 0 unchanged";
  }
  // A new key whose home slot is empty in version 1 but holds an entry of version 0.
  std::size_t home = L.cap;
  for (std::size_t s = 0; s < L.cap && home == L.cap; ++s)
    if (lf.state(1, s) == detail::kEmpty && lf.state(0, s) == detail::kOccupied) home = s;
  ASSERT_LT(home, L.cap) << "the cleared slots include one of version 0";
  detail::u64 k = 1;
  while (detail::home_slot(detail::hash_key(k), L.cap) != home) ++k;
  std::vector<std::uint16_t> written;
  std::vector<detail::KVPair> add{{k, 99}};
  detail::leaf_upsert(lf, 1, add, written);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_NE(written[0], home) << "a slot of version 0 is not reused";
  EXPECT_EQ(lf.state(1, home), detail::kDeleted);
  EXPECT_EQ(detail::leaf_find(lf, 1, k), static_cast<long>(written[0]));
  for (std::size_t i = 6; i < es.size(); ++i) EXPECT_GE(detail::leaf_find(lf, 1, es[i].first), 0);
  EXPECT_EQ(std::memcmp(v0.data(), lf.meta(0), L.meta_p_bytes), 0) << "version 0 untouched";
  for (auto& [key, v] : es) EXPECT_GE(detail::leaf_find(lf, 0, key), 0);
}

// A default tree with split mode `mode` after 60,000 inserts of random keys (the split tests
// below), and what they wrote.
struct SplitRun {
  DPTreeOptions o;
  std::unique_ptr<pm::Pool> pool = pm::Pool::create_in_memory(32 << 20);
  std::unique_ptr<DPTree<>> t;
  std::map<Key, Value> model;
  std::mt19937_64 rng;

  SplitRun(SplitMode mode, std::uint64_t seed) : rng(seed) {
    o.split = mode;
    t = DPTree<>::create(*pool, o);
    for (int i = 0; i < 60000; ++i) {
      Key k = rng();
      t->upsert(k, static_cast<Value>(i));
      model[k] = static_cast<Value>(i);
    }
  }
  // The tree answers as `model`: a full scan and check(), then, reopened, every key and 1,000
  // absent ones.
  void expect_as_model() {
    std::vector<KV> all;
    t->scan(0, 1u << 20, all);
    ASSERT_TRUE(all == std::vector<KV>(model.begin(), model.end())) << "scan differs";
    auto r = t->check();
    EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
    t.reset();
    t = DPTree<>::open(*pool, o);
    for (auto& [k, v] : model) ASSERT_EQ(t->lookup(k), std::optional<Value>(v));
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(t->lookup(rng()), std::nullopt);
  }
};

// split=keep_last against Algorithm 2 on the paper's defaults: the same answers, fewer node
// lines written, and the old leaf of every kept split stays (only the others are freed).
TEST(DPTreeSplit, KeepLastWritesFewerLinesAndKeepsTheOldLeaf) {
  std::size_t node_lines[2] = {};
  for (auto mode : {SplitMode::rebuild, SplitMode::keep_last}) {
    auto before = pm::counters();
    SplitRun run(mode, 8);
    node_lines[static_cast<int>(mode)] = (pm::counters() - before)[pm::Category::node].lines;
    auto s = run.t->stats();
    EXPECT_GT(s.splits, 30u);
    EXPECT_EQ(s.consolidations, 0u) << "inserts only";
    if (mode == SplitMode::rebuild) {
      EXPECT_EQ(s.kept_splits, 0u);
      EXPECT_EQ(s.leaves_freed, s.splits) << "Algorithm 2 frees every split leaf";
    } else {
      EXPECT_GT(s.kept_splits, s.splits * 3 / 4);
      EXPECT_EQ(s.leaves_freed, s.splits - s.kept_splits) << "a kept leaf is not garbage";
    }
    run.expect_as_model();
    if (HasFatalFailure()) return;
  }
  EXPECT_LT(node_lines[1] * 10, node_lines[0] * 9)
      << "rebuild " << node_lines[0] << " keep_last " << node_lines[1];
}

// split=thirds against Algorithm 2 on the paper's defaults: the same answers (also after a
// reopen), fewer and so fuller leaves for the same inserts; pair splits keep old leaves, and
// exactly the others are freed (those of a pair not kept, and a leaf that split alone, the
// range's last).
TEST(DPTreeSplit, ThirdsFillsLeavesFullerAndFreesOnlyTheLeavesItRewrote) {
  std::size_t leaves[2] = {};
  for (auto mode : {SplitMode::rebuild, SplitMode::thirds}) {
    SplitRun run(mode, 9);
    run.t->merge();
    auto s = run.t->stats();
    leaves[mode == SplitMode::thirds] = s.leaves;
    EXPECT_GT(s.splits, 30u);
    EXPECT_EQ(s.consolidations, 0u) << "inserts only";
    if (mode == SplitMode::rebuild) {
      EXPECT_EQ(s.pair_splits, 0u);
      EXPECT_EQ(s.leaves_freed, s.splits);
    } else {
      EXPECT_GT(s.pair_splits, s.splits / 2) << "most leaves that split have a next leaf";
      EXPECT_GT(s.pair_leaves_kept, s.pair_splits / 2) << "pair splits keep old leaves";
      EXPECT_EQ(s.leaves_freed, s.splits - s.pair_splits + 2 * s.pair_splits - s.pair_leaves_kept);
      std::printf("thirds: %zu splits, %zu of a pair, %zu old leaves kept\n", s.splits,
                  s.pair_splits, s.pair_leaves_kept);
    }
    run.expect_as_model();
    if (HasFatalFailure()) return;
  }
  std::printf("leaves: rebuild %zu, thirds %zu\n", leaves[0], leaves[1]);
  EXPECT_LT(leaves[1] * 100, leaves[0] * 97) << "rebuild " << leaves[0] << ", thirds " << leaves[1];
}

// split for the concurrent tree: rebuild (its default) or thirds; keep_last, DPTree's, is
// refused by name, and the string forms of both trees refuse thirds (their merges split on
// their own) instead of ignoring it.
TEST(DPTreeSplit, ThirdsIsTakenByBothIntegerTreesAndRefusedByTheStringForms) {
  EXPECT_EQ(CDPTreeOptions{}.split, SplitMode::rebuild);
  EXPECT_EQ(CDPTreeOptions::from_map({{"split", "thirds"}}).split, SplitMode::thirds);
  auto msg = error_of([] { CDPTreeOptions::from_map({{"split", "keep_last"}}); });
  EXPECT_NE(msg.find("split='keep_last'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rebuild or thirds"), std::string::npos) << msg;
  CDPTreeOptions bad;
  bad.split = SplitMode::keep_last;
  msg = error_of([&] { bad.validate(); });
  EXPECT_NE(msg.find("split=keep_last is not one of rebuild, thirds"), std::string::npos) << msg;
  for (const char* name : {"dptree", "cdptree"}) {
    auto pool = pm::Pool::create_in_memory(8 << 20);
    IndexConfig c;
    c.pool = pool.get();
    c.options = {{"split", "thirds"}};
    msg = error_of([&] { find_index(name).create_string(c); });
    EXPECT_NE(msg.find("split=thirds applies to integer keys only"), std::string::npos) << msg;
    EXPECT_EQ(*pool->root_word(), 0u) << name << ": nothing written to the pool";
  }
}

// key_bytes / value_bytes through the registry: the width is the pool's from then on.
TEST(DPTreeWidths, RegistryPicksTheEntryWidthAtRunTime) {
  auto pool = pm::Pool::create_in_memory(8 << 20);
  std::map<Key, Value> model;
  {
    IndexConfig c;
    c.pool = pool.get();
    c.options = {{"key_bytes", "24"},
                 {"value_bytes", "40"},
                 {"leaf_capacity", "16"},
                 {"log_page_size", "4096"},
                 {"min_merge_records", "40"}};
    auto idx = find_index("dptree").create(c);
    std::mt19937_64 rng(1);
    for (int i = 0; i < 3000; ++i) {
      Key k = rng();
      idx->upsert(k, i);
      model[k] = static_cast<Value>(i);
    }
    double merges = 0;
    for (auto& [name, x] : idx->stats().extra)
      if (name == "merges") merges = x;
    EXPECT_GT(merges, 5);
    EXPECT_TRUE(idx->check().ok);
  }
  {
    IndexConfig c;
    c.pool = pool.get();
    auto idx = find_index("dptree").create(c);  // widths from the pool
    for (auto& [k, v] : model) ASSERT_EQ(idx->lookup(k), std::optional<Value>(v));
  }
  IndexConfig c;
  c.pool = pool.get();
  c.options = {{"key_bytes", "8"}};
  // A pool of other widths holds another index as far as this caller is concerned.
  auto msg = error_of([&] { find_index("dptree").create(c); }, Errc::wrong_index);
  EXPECT_NE(msg.find("24-byte keys"), std::string::npos) << msg;
  auto t = DPTree<24, 40>::open(*pool);
  for (auto& [k, v] : model) ASSERT_EQ(t->lookup(k), std::optional<Value>(v));
}

}  // namespace
}  // namespace dptree
