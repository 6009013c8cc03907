// The floor query of ROART's engine (the greatest key <= k) against std::map, with leaf arrays
// and over an owner's records.
//
// The engine over an owner's records (PACTree's search layer; layout.h, kRecord): its
// bottom words name the records, which hold the keys. Against std::map: floor queries, lookups,
// scans, a key moved to another record, removes, reopens (recovery) and check(). Each write path
// (a record into an empty word, a record's word split into a node, a child added to a node, a
// node grown, a prefix split, a key moved to another record, a remove) crashed at every flush
// and fence, every image's recovery crashed at each of its own events, and every image recovers
// to the tree before or after the write. A word naming no record is refused by recovery and
// reported by check(); a standalone ROART refuses a record word, having no records.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "baselines/roart/tree.h"
#include "baselines/slab/slab_arena.h"
#include "baselines/trie_strings.h"
#include "dptree/error.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

using baselines::roart::Records;
using baselines::roart::Tree;
using u64 = std::uint64_t;

// Records in DRAM: record 8 * (i + 1) holds keys[i]; a record in `gone` is no longer one.
struct KeyTable final : Records {
  std::vector<std::string> keys;
  std::set<u64> gone;
  std::string_view key(u64 r) const override { return keys[r / 8 - 1]; }
  bool valid(u64 r) const override {
    return r % 8 == 0 && r >= 8 && r / 8 <= keys.size() && !gone.contains(r);
  }
  u64 add(std::string k) {
    keys.push_back(std::move(k));
    return 8 * keys.size();
  }
};

// The tree's root in the second half of a test root block, as in PACTree's root block.
baselines::roart::Root* tree_root(pm::Pool& pool) {
  void* block = baselines::open_arena_root(pool, 256, 0x5344'524F'4345'5254ull, "records test");
  return reinterpret_cast<baselines::roart::Root*>(static_cast<char*>(block) + 128);
}

std::unique_ptr<Tree> open_tree(pm::Pool& pool, const KeyTable& t) {
  return std::make_unique<Tree>(pool, tree_root(pool), 1, &t);
}

std::map<std::string, Value> contents(const Tree& t) {
  std::map<std::string, Value> m;
  t.scan(std::string_view("\0", 1), ~std::size_t{0},
         [&](std::string_view k, Value v) { m.emplace(std::string(k), v); });
  return m;
}

void expect_tree_ok(const Tree& t, const std::string& where) {
  auto r = t.check();
  EXPECT_TRUE(r.ok) << where << ": " << (r.problems.empty() ? "" : r.problems[0]);
}

// Floor queries over keys, their prefixes and their extensions, against std::map.
void expect_floors(const Tree& t, const std::map<std::string, Value>& model,
                   const std::vector<std::string>& probes) {
  for (const std::string& key : probes)
    for (std::string probe : {key, key + '\0', key.substr(0, key.size() / 2 + 1), key + '\xff'}) {
      auto got = t.floor(probe);
      auto it = model.upper_bound(probe);
      if (it == model.begin()) {
        ASSERT_FALSE(got.has_value()) << "probe of " << probe.size() << " bytes";
        continue;
      }
      --it;
      ASSERT_TRUE(got.has_value()) << "probe of " << probe.size() << " bytes";
      ASSERT_EQ(got->first, it->first);
      ASSERT_EQ(got->second, it->second);
    }
}

TEST(RoartTree, FloorMatchesStdMap) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(32 << 20);
  Tree t(*pool, baselines::roart::kFormStrings, 1);
  std::mt19937_64 rng(5);
  const auto keys = mixed_keys(rng, 1500);
  std::map<std::string, Value> model;
  for (std::size_t i = 0; i < keys.size(); i += 2) {
    t.put(keys[i], i, true, true);
    model[keys[i]] = i;
  }
  expect_floors(t, model, keys);
}

TEST(RoartRecords, MatchStdMapThroughMovesRemovesAndReopens) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(32 << 20);
  KeyTable table;
  std::mt19937_64 rng(5);
  const auto keys = mixed_keys(rng, 1500);
  std::map<std::string, Value> model;
  auto t = open_tree(*pool, table);
  for (std::size_t i = 0; i < keys.size(); i += 2) {
    const u64 r = table.add(keys[i]);  // a key seen before moves to its new record
    ASSERT_TRUE(t->put(keys[i], r, true, true));
    model[keys[i]] = r;
  }
  expect_floors(*t, model, keys);
  for (const std::string& k : keys) {
    auto it = model.find(k);
    ASSERT_EQ(t->lookup(k), it == model.end() ? std::nullopt : std::optional<Value>(it->second));
  }
  EXPECT_FALSE(t->put(keys[0], model[keys[0]], true, false)) << "an insert of a key held";
  EXPECT_THROW(t->put("unaligned", 12, true, true), Error);
  t.reset();
  t = open_tree(*pool, table);
  EXPECT_EQ(contents(*t), model);
  expect_tree_ok(*t, "after reopening");
  std::size_t n = 0;
  for (auto it = model.begin(); it != model.end();)
    if (++n % 3) {
      ASSERT_TRUE(t->remove(it->first));
      it = model.erase(it);
    } else {
      ++it;
    }
  EXPECT_FALSE(t->remove(std::string(70, 'q')));
  t.reset();
  t = open_tree(*pool, table);
  EXPECT_EQ(contents(*t), model);
  expect_tree_ok(*t, "after removes and a reopen");
  expect_floors(*t, model, keys);
}

TEST(RoartRecords, AWordNamingNoRecordIsRefused) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  KeyTable table;
  auto t = open_tree(*pool, table);
  for (const char* k : {"apple", "apricot", "banana"}) t->put(k, table.add(k), true, true);
  table.gone.insert(16);  // "apricot"
  auto r = t->check();
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.problems[0].find("not a record"), std::string::npos) << r.problems[0];
  t.reset();
  try {
    open_tree(*pool, table);
    FAIL() << "recovered a word naming no record";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::corrupt);
    EXPECT_NE(std::string(e.what()).find("names no record"), std::string::npos) << e.what();
  }
}

// A standalone ROART has no records: a word with their tag is damage, refused at open.
TEST(RoartRecords, AStandaloneTreeRefusesARecordWord) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  { Tree(*pool, baselines::roart::kFormStrings, 1).put("k", 1, true, true); }
  auto* root = pool->root<baselines::roart::Root>();
  root->tree = (root->tree & ~baselines::roart::kTagMask) | baselines::roart::kRecord;
  EXPECT_THROW(Tree(*pool, baselines::roart::kFormStrings, 1), Error);
}

// Builds the tree of `before` (keys to records of `table`), crashes `op` at every event in both
// units (nothing unfenced kept, everything kept, a random mix), and checks that every image and
// every image of its recovery crashed at each of its events holds `before` or `after`.
template <class Op>
void crash_everywhere(KeyTable& table, const std::vector<std::string>& before_keys, Op op,
                      const std::string& what) {
  for (pm::Unit unit : {pm::Unit::line64, pm::Unit::word8}) {
    PmModeScope mode(pm::Mode::sim);
    auto pool = pm::Pool::create_in_memory(1 << 20);
    auto t = open_tree(*pool, table);
    for (const auto& k : before_keys) t->put(k, table.add(k), true, true);
    const auto before = contents(*t);
    std::vector<pm::Image> images;
    std::uint64_t seed = 1;
    pool->sim()->set_hook([&](const pm::Event& e) {
      for (double keep : {0.0, 1.0, 0.5})
        images.push_back(e.sim->capture({seed++, keep, keep, unit}));
    });
    op(*t);
    pool->sim()->set_hook(nullptr);
    const auto after = contents(*t);
    ASSERT_NE(before, after) << what << ": the write changed nothing";
    t.reset();
    ASSERT_GT(images.size(), 3u) << what;
    auto recovers = [&](pm::Pool& p, const std::string& at) {
      std::unique_ptr<Tree> r;
      guard(what + ": " + at, [&] { r = open_tree(p, table); });
      if (!r) return;
      expect_tree_ok(*r, what + ": " + at);
      const auto got = contents(*r);
      EXPECT_TRUE(got == before || got == after) << what << ": " << at;
    };
    for (auto& img : images) {
      std::vector<pm::Image> inner;
      auto p = pm::Pool::open_image(std::move(img), [&](const pm::Event& e) {
        inner.push_back(e.sim->capture({seed++, 0.5, 0.5, unit}));
      });
      recovers(*p, "an image");
      ASSERT_FALSE(::testing::Test::HasFailure());
      for (auto& im : inner) {
        auto p2 = pm::Pool::open_image(std::move(im));
        recovers(*p2, "an image of a crashed recovery");
        ASSERT_FALSE(::testing::Test::HasFailure());
      }
    }
  }
}

TEST(RoartRecordsCrash, EveryWritePathCrashedAtEveryEventAndInItsRecovery) {
  KeyTable table;
  auto put = [&](std::string k) {
    return [&table, k](Tree& t) { t.put(k, table.add(k), true, true); };
  };
  const std::vector<std::string> four = {"key-a1", "key-a2", "key-a3", "key-a4"};
  crash_everywhere(table, {}, put("key-a1"), "a record into the empty root word");
  crash_everywhere(table, {"key-a1"}, put("key-a2"), "a record's word split into a node");
  crash_everywhere(table, {"key-a1", "key-a2"}, put("key-a3"), "a child added to a node");
  crash_everywhere(table, four, put("key-a5"), "a node grown");
  crash_everywhere(table, four, put("kez"), "a prefix split");
  crash_everywhere(table, four, put("key-a"), "a key ending at a node's branch byte");
  crash_everywhere(table, four, put("key-a3"), "a key moved to another record");
  crash_everywhere(
      table, four, [](Tree& t) { t.remove("key-a2"); }, "a remove");
  crash_everywhere(
      table, {"key-a1", "key-a2"}, [](Tree& t) { t.remove("key-a2"); },
      "a remove that leaves a node of one child");
}

}  // namespace
}  // namespace dptree::testing
