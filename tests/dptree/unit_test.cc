// DPTree unit tests: API semantics, options, entry sizes, restart with lazy leaf rebuild
// (§2.2) and torn log records (§2.1).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "dptree/dptree.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/sim.h"
#include "dptree/registry.h"
#include "dptree/testing/phases.h"
#include "format/layout.h"
#include "small_options.h"

namespace dptree {
namespace {

DPTreeOptions small() {
  return small_options();
}

TEST(DPTree, BasicOperationsAndExactReturns) {
  auto pool = pm::Pool::create_in_memory(4 << 20);
  auto t = DPTree<>::create(*pool, small());
  EXPECT_TRUE(t->insert(5, 50));
  EXPECT_FALSE(t->insert(5, 51));
  EXPECT_EQ(t->lookup(5), std::optional<Value>(50));
  EXPECT_TRUE(t->update(5, 52));
  EXPECT_FALSE(t->update(6, 1));
  EXPECT_EQ(t->lookup(5), std::optional<Value>(52));
  EXPECT_TRUE(t->remove(5));
  EXPECT_FALSE(t->remove(5));
  EXPECT_FALSE(t->lookup(5).has_value());
  for (Key k = 0; k < 1000; ++k) t->upsert(k * 3, k);
  EXPECT_EQ(t->size(), 1000u);
  std::vector<KV> out;
  EXPECT_EQ(t->scan(10, 5, out), 5u);
  EXPECT_EQ(out, (std::vector<KV>{{12, 4}, {15, 5}, {18, 6}, {21, 7}, {24, 8}}));
  auto st = t->stats();
  EXPECT_GT(st.merges, 5u);
  EXPECT_GT(st.leaves, 10u);
  EXPECT_GT(st.pm_bytes, 0u);
  EXPECT_GT(st.dram_bytes, 0u);
  auto r = t->check();
  EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
}

TEST(DPTree, ValueRangeAndOptionsAreChecked) {
  auto pool = pm::Pool::create_in_memory(1 << 20);
  auto t = DPTree<>::create(*pool, small());
  EXPECT_EQ(t->max_value(), (Value{1} << 63) - 1);
  EXPECT_NO_THROW(t->upsert(1, t->max_value()));
  try {
    t->upsert(1, Value{1} << 63);
    FAIL() << "a value with the tombstone bit was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("tombstone"), std::string::npos);
  }
  EXPECT_THROW(t->insert(2, ~Value{0}), Error);
  EXPECT_EQ(t->lookup(1), std::optional<Value>(t->max_value()));
  EXPECT_FALSE(t->lookup(2).has_value());
  DPTreeOptions o;
  EXPECT_EQ(o.leaf_capacity, 352u);
  EXPECT_DOUBLE_EQ(o.merge_ratio, 0.1);
  EXPECT_DOUBLE_EQ(o.fill_rate, 0.7);
  EXPECT_DOUBLE_EQ(o.consolidate_threshold, 0.34);
  EXPECT_EQ(o.log_page_size, 64u * 1024);
  o.fill_rate = 0.4;
  EXPECT_THROW(o.validate(), Error);
  EXPECT_THROW(DPTreeOptions::from_map({{"leaf_capacity", "x"}}), Error);
  EXPECT_THROW(DPTreeOptions::from_map({{"no_such", "1"}}), Error);
  EXPECT_EQ(DPTreeOptions::from_map({{"leaf_capacity", "16"}}).leaf_capacity, 16u);
  auto p2 = pm::Pool::create_in_memory(1 << 20);
  EXPECT_THROW(find_index("dptree").create(IndexConfig{}), Error);  // needs a pool
  EXPECT_THROW(DPTree<>::create(*pool), Error);                     // the pool already holds a tree
}

template <class Tree>
void entry_size_roundtrip() {
  auto pool = pm::Pool::create_in_memory(8 << 20);
  std::map<Key, Value> model;
  {
    auto t = Tree::create(*pool, small());
    std::mt19937_64 rng(5);
    for (int i = 0; i < 3000; ++i) {
      Key k = rng() % 700;
      Value v = rng() >> 1;
      if (rng() % 4 == 0) {
        t->remove(k);
        model.erase(k);
      } else {
        t->upsert(k, v);
        model[k] = v;
      }
    }
  }
  auto t = Tree::open(*pool, small());
  std::vector<KV> all;
  t->scan(0, 100000, all);
  EXPECT_EQ(all, std::vector<KV>(model.begin(), model.end()));
  auto r = t->check();
  EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
}

TEST(DPTree, EntrySizesAreTemplateParameters) {
  entry_size_roundtrip<DPTree<8, 8>>();
  entry_size_roundtrip<DPTree<8, 24>>();
  entry_size_roundtrip<DPTree<16, 16>>();
  entry_size_roundtrip<DPTree<32, 32>>();  // 64-byte entries: log records span two lines
  auto pool = pm::Pool::create_in_memory(1 << 20);
  DPTree<8, 24>::create(*pool, small());
  // The entry size is part of the format.
  EXPECT_THROW((DPTree<8, 8>::open(*pool)), Error);
}

// §2.2 partial persistence: after a restart count, order and fingerprints are rebuilt lazily
// by the first query or merge touching a leaf, not by recovery.
TEST(DPTree, LazyLeafRebuildAfterRestart) {
  auto pool = pm::Pool::create_in_memory(4 << 20);
  std::map<Key, Value> model;
  std::size_t leaves = 0;
  {
    auto t = DPTree<>::create(*pool, small());
    for (Key k = 0; k < 2000; ++k) {
      t->upsert(k * 7 % 2003, k);
      model[k * 7 % 2003] = k;
    }
    t->merge();
    leaves = t->stats().leaves;
    EXPECT_EQ(t->stats().restart_count, 0u);
  }
  auto t = DPTree<>::open(*pool, small());
  auto st = t->stats();
  // stats() itself counts records with lookups of buffer keys only: the buffer is empty.
  EXPECT_EQ(st.restart_count, 1u);
  EXPECT_EQ(st.lazy_rebuilds, 0u) << "recovery must not rebuild leaf metadata";
  EXPECT_GT(leaves, 100u);
  // One lookup rebuilds one leaf.
  EXPECT_EQ(t->lookup(model.begin()->first), model.begin()->second);
  EXPECT_EQ(t->stats().lazy_rebuilds, 1u);
  for (auto& [k, v] : model) ASSERT_EQ(t->lookup(k), std::optional<Value>(v));
  EXPECT_EQ(t->stats().lazy_rebuilds, leaves);
  for (auto& [k, v] : model) ASSERT_EQ(t->lookup(k), std::optional<Value>(v));
  EXPECT_EQ(t->stats().lazy_rebuilds, leaves) << "rebuilt once per restart";
  auto r = t->check();
  EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
  // A merge after a restart rebuilds the leaves it touches too (Algorithm 2 lines 2-4).
  t.reset();
  t = DPTree<>::open(*pool, small());
  for (Key k = 5000; k < 5100; ++k) t->upsert(k, k);
  t->merge();
  EXPECT_GT(t->stats().lazy_rebuilds, 0u);
  std::vector<KV> all;
  t->scan(0, 1u << 20, all);
  EXPECT_EQ(all.size(), model.size() + 100);
  r = t->check();
  EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
}

struct SimMode {
  SimMode() { pm::set_mode(pm::Mode::sim); }
  ~SimMode() { pm::set_mode(pm::Mode::dram); }
};

// §2.1: a log record torn at the crash (some of its 8-byte words reached PM, some did not) is
// detected by its validity bits and ignored; every earlier record is replayed.
TEST(DPTree, TornLogRecordsAreIgnored) {
  SimMode sim;
  DPTreeOptions o = small();
  o.min_merge_records = 100000;  // keep everything in the log
  auto pool = pm::Pool::create_in_memory(2 << 20);
  auto t = DPTree<8, 16>::create(*pool, o);  // 24-byte entries: 4-word records
  for (Key k = 0; k < 300; ++k) t->upsert(k, k + 1);
  std::size_t torn = 0, whole = 0, none = 0;
  Key inflight = 0;
  pool->sim()->set_hook([&](const pm::Event& e) {
    if (e.kind != pm::EventKind::flush || dptree_current_phase() != DPTreePhase::log_append) return;
    for (std::uint64_t s = 0; s < 8; ++s) {
      // The record is written, not yet flushed: each word lands with probability 1/2.
      auto img = e.sim->capture(pm::CaptureOptions{e.seq * 31 + s, 0.5, 0.0, pm::Unit::word8});
      auto p = pm::Pool::open_image(std::move(img));
      auto r = DPTree<8, 16>::open(*p, o);
      for (Key k = 0; k < inflight; ++k) ASSERT_EQ(r->lookup(k), std::optional<Value>(k + 1));
      auto got = r->lookup(inflight);
      if (got) {
        ASSERT_EQ(*got, inflight + 1);
        ++whole;
      } else {
        ++none;
      }
      auto rep = r->check();
      ASSERT_TRUE(rep.ok) << rep.problems[0];
      // Appending after the torn record overwrites it whole.
      r->upsert(inflight, 7);
      r->upsert(inflight + 1000, 8);
      auto r2 = std::vector<KV>();
      r.reset();
      auto again = DPTree<8, 16>::open(*p, o);
      ASSERT_EQ(again->lookup(inflight), std::optional<Value>(7));
      ASSERT_EQ(again->lookup(inflight + 1000), std::optional<Value>(8));
    }
  });
  for (Key k = 300; k < 360; ++k) {
    inflight = k;
    t->upsert(k, k + 1);
  }
  pool->sim()->set_hook(nullptr);
  torn = none;
  EXPECT_GT(whole, 0u);
  EXPECT_GT(torn, 100u) << "most images hold a torn (partial) record, which must be ignored";
}

}  // namespace
}  // namespace dptree

namespace dptree {
namespace {

// check() is not a formality: corrupt the persistent structure and it says what is wrong.
TEST(DPTreeCheck, FindsCorruptionAndLeaks) {
  using namespace detail;
  auto pool = pm::Pool::create_in_memory(4 << 20);
  auto t = DPTree<>::create(*pool, small());
  for (Key k = 0; k < 500; ++k) t->upsert(k, k);
  t->merge();
  ASSERT_TRUE(t->check().ok);
  auto has = [&](const std::string& what) {
    auto r = t->check();
    for (auto& p : r.problems)
      if (p.find(what) != std::string::npos) return !r.ok;
    return false;
  };
  // A block nobody reaches.
  std::uint64_t stray = pool->allocator().reserve(64);
  auto* rt = pool->root<Root>();
  pool->allocator().activate(rt->log_head[1 - (rt->gv & 1)], stray);
  EXPECT_TRUE(has("previous version")) << "a log head of the other version";
  EXPECT_TRUE(has("leaked PM block"));
  pool->allocator().free(rt->log_head[1 - (rt->gv & 1)]);
  EXPECT_TRUE(t->check().ok);
  // A leaf whose max key is below its keys.
  LeafLayout L;
  L.init(8, 8, 8);
  Leaf first{pool->at(rt->head[rt->gv & 1].off), &L};
  std::uint64_t saved = first.max_key(static_cast<int>(rt->gv & 1));
  first.max_key(static_cast<int>(rt->gv & 1)) = 0;
  EXPECT_TRUE(has("outside its range"));
  first.max_key(static_cast<int>(rt->gv & 1)) = saved;
  // An occupied slot marked with the invalid code 11.
  first.set_state(static_cast<int>(rt->gv & 1), 0, 3);
  EXPECT_TRUE(has("bitmap code 11"));
}

}  // namespace
}  // namespace dptree
