// FAST_FAIR and FPTree through the generic fixtures of tests/fixtures/: model-based
// runs against std::map with small nodes so that splits happen all the time, and crash
// simulation with a recovery check of every captured image; plus edge cases of their own.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "baselines/fastfair/layout.h"
#include "baselines/fastfair/quick_pass.h"
#include "baselines/fastfair/tree.h"
#include "baselines/peers.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

struct Variant {
  const char* index;
  const char* option;  // nullptr: defaults
  const char* value;
  bool small;  // nodes of a few entries
};

std::map<std::string, std::string> options_of(const Variant& v) {
  if (!v.option) return {};
  return {{v.option, v.value}};
}

std::string variant_name(const Variant& v) {
  std::string s = std::string(v.index) + (v.option ? std::string("_") + v.value : "");
  return s;
}

std::map<Key, Value> contents(const Index& idx) {
  std::vector<KV> out;
  idx.scan(0, SIZE_MAX, out);
  return {out.begin(), out.end()};
}

class Peer : public ::testing::TestWithParam<Variant> {};

TEST_P(Peer, MatchesStdMapWithManySplits) {
  auto v = GetParam();
  for (std::uint64_t seed : {1, 2, 3}) {
    auto c = model_config(v.index, seed, 8000, 1500, 1000, 2500);
    c.options = options_of(v);
    c.pool_bytes = 4u << 20;
    auto r = run_model(c);
    ASSERT_FALSE(HasFailure()) << v.index << " seed " << seed;
    // Hundreds of keys in nodes of a few entries: the structure split many times.
    double nodes = std::string(v.index) == "fastfair" ? r.extra["nodes"] : r.extra["leaves"];
    EXPECT_GT(nodes, v.small ? 60 : 8) << v.index << " seed " << seed;
    EXPECT_EQ(r.reopens, 3u);
  }
}

// IndexConfig::threads = 1: FPTree, LB+-Tree and FAST_FAIR take no lock (the one-thread
// configuration the benchmark's 1-thread runs use); the others ignore it.
TEST_P(Peer, OneThreadConfigurationMatchesStdMap) {
  auto v = GetParam();
  auto c = model_config(v.index, 4, 8000, 1500, 1000, 2500);
  c.options = options_of(v);
  c.pool_bytes = 4u << 20;
  c.threads = 1;
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure()) << v.index;
  EXPECT_EQ(r.reopens, 3u);
}

TEST_P(Peer, ExtremeKeysAndValues) {
  auto v = GetParam();
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(2 << 20);
  auto idx = make_index(v.index, pool.get(), options_of(v));
  Value maxv = idx->max_value();
  std::map<Key, Value> m;
  for (Key k : {Key{0}, Key{1}, ~Key{0}, ~Key{0} - 1, Key{1} << 63}) {
    idx->upsert(k, maxv);
    m[k] = maxv;
  }
  for (Key k = 2; k < 300; ++k) {
    ASSERT_TRUE(idx->insert(k * 1000003, k % 2 ? 0 : maxv));
    m[k * 1000003] = k % 2 ? 0 : maxv;
  }
  EXPECT_FALSE(idx->insert(0, 5));
  EXPECT_EQ(idx->lookup(~Key{0}), maxv);
  EXPECT_EQ(contents(*idx), m);
  if (maxv != ~Value{0}) {
    EXPECT_THROW(idx->upsert(7, maxv + 1), Error) << "above max_value()";
  }
  expect_check_ok(*idx, "extreme keys");
}

// A full pool is an error (pool_full) that loses nothing: every acknowledged key is there,
// check() passes, and removes and updates still work (or fail cleanly with pool_full).
TEST_P(Peer, FullPoolIsAnErrorAndLosesNothing) {
  auto v = GetParam();
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1u << 20);
  auto idx = make_index(v.index, pool.get(), options_of(v));
  std::mt19937_64 rng(5);
  std::map<Key, Value> m = fill_until_full(*idx, rng);
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(m.size(), 100u);
  expect_check_ok(*idx, "after pool_full");
  EXPECT_EQ(contents(*idx), m);
  // Removes never allocate; an FPTree update writes out of place and may still need a split.
  for (auto it = m.begin(); it != m.end();) {
    if (it->first % 2) {
      ASSERT_TRUE(idx->remove(it->first));
      it = m.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [k, val] : m) {
    try {
      ASSERT_TRUE(idx->update(k, val + 1));
      ++val;
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), Errc::pool_full) << e.what();
    }
  }
  EXPECT_EQ(contents(*idx), m);
  expect_check_ok(*idx, "after removes and updates");
}

const Variant kVariants[] = {
    {"fastfair", "node_bytes", "128", true}, {"fastfair", "node_bytes", "256", true},
    {"fastfair", nullptr, nullptr, false},   {"fptree", "leaf_capacity", "4", true},
    {"fptree", "leaf_capacity", "8", true},  {"fptree", nullptr, nullptr, false}};

INSTANTIATE_TEST_SUITE_P(Peers, Peer, ::testing::ValuesIn(kVariants),
                         [](const auto& param_info) { return variant_name(param_info.param); });

// Opens `pool` as fastfair and expects Error(code) whose message holds `says`.
void expect_fastfair_refused(pm::Pool& pool, Errc code, const std::string& says) {
  try {
    make_index("fastfair", &pool, {});
    ADD_FAILURE() << "the pool was opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

// A pool of `keys` keys 1..keys in fastfair nodes of `node_bytes`, closed.
std::unique_ptr<pm::Pool> fastfair_pool(Key keys, const char* node_bytes = "512") {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  auto idx = make_index("fastfair", pool.get(), {{"node_bytes", node_bytes}});
  for (Key k = 1; k <= keys; ++k) idx->upsert(k, k);
  return pool;
}

baselines::fastfair::Root* fastfair_root(pm::Pool& pool) {
  return pool.at<baselines::fastfair::Root>(*pool.root_word());
}

// A node's creation-chain word: the key word of its last slot (fastfair/layout.h).
std::uint64_t& chain_word(pm::Pool& pool, std::uint64_t node, std::size_t node_bytes) {
  return pool.at<baselines::fastfair::Entry>(node + node_bytes - 16)->key;
}

// The nodes in creation order, along the chain words.
std::vector<std::uint64_t> fastfair_chain(pm::Pool& pool, std::size_t node_bytes) {
  std::vector<std::uint64_t> out;
  for (auto n = fastfair_root(pool)->first; n; n = chain_word(pool, n, node_bytes))
    out.push_back(n);
  return out;
}

// FAST_FAIR tidies a node once per open and marks it in its sync word with the open's epoch;
// a mark of the open about to happen would skip the repair of what a crash left there, so the
// open refuses such a pool rather than trust it.
TEST(FastFairOpen, RefusesANodeMarkedTidiedByTheOpenToCome) {
  using baselines::fastfair::kTidied;
  auto pool = fastfair_pool(100);
  const auto* root = fastfair_root(*pool);
  auto* node = pool->at<baselines::fastfair::Header>(root->tree_root);
  const std::uint64_t kept = node->sync;
  node->sync = (root->epoch + 1) << 32 | kTidied | (kept & baselines::fastfair::kLevelMask);
  expect_fastfair_refused(*pool, Errc::corrupt, "holds a sync word of an open still to come");
  node->sync = kept | kTidied;  // an old mark: the node is tidied again, nothing refused
  EXPECT_NO_THROW(make_index("fastfair", pool.get(), {}));
}

// The level lives in the sync word's bits 25..31 (fastfair/layout.h), which hold up to 127;
// the open takes 64 at most, the depth of the writers' fixed path.
TEST(FastFairOpen, RefusesANodeAboveTheHighestLevel) {
  using baselines::fastfair::kLevelMask, baselines::fastfair::kLevelShift;
  auto pool = fastfair_pool(10);  // one leaf, the root
  auto* node = pool->at<baselines::fastfair::Header>(fastfair_root(*pool)->tree_root);
  const std::uint64_t kept = node->sync;
  node->sync = (kept & ~kLevelMask) | std::uint64_t{100} << kLevelShift;
  expect_fastfair_refused(*pool, Errc::corrupt, "has level 100");
  node->sync = kept;
  auto idx = make_index("fastfair", pool.get(), {});
  EXPECT_EQ(idx->lookup(10), std::optional<Value>(10));
}

// The creation chain runs through the end-mark slots' key words: a word that names a node it
// does not own, a block that is no node, or nothing before the chain's end is refused.
TEST(FastFairOpen, RefusesADamagedChainWord) {
  auto pool = fastfair_pool(300, "128");
  const auto nodes = fastfair_chain(*pool, 128);
  ASSERT_GT(nodes.size(), 10u);
  std::uint64_t& w = chain_word(*pool, nodes[1], 128);
  const std::uint64_t kept = w;
  for (std::uint64_t bad : {nodes[5], nodes[2] + 64, std::uint64_t{1} << 40}) {
    w = bad;
    expect_fastfair_refused(*pool, Errc::corrupt, "node chain: the word at offset");
  }
  w = 0;  // the chain ends early: the nodes after it are named but not nodes
  expect_fastfair_refused(*pool, Errc::corrupt, "not a node of the right level");
  w = kept;
  auto idx = make_index("fastfair", pool.get(), {});
  for (Key k = 1; k <= 300; ++k) ASSERT_EQ(idx->lookup(k), std::optional<Value>(k)) << k;
  expect_check_ok(*idx, "the chain word restored");
}

// A pool of the first format (64-byte headers: its root block has the first magic) is
// refused with both formats named, not read as another index's.
TEST(FastFairOpen, RefusesAPoolOfTheFirstFormat) {
  auto pool = fastfair_pool(10);
  auto* root = fastfair_root(*pool);
  root->magic = baselines::fastfair::kMagicWideHeader;
  expect_fastfair_refused(*pool, Errc::version_mismatch, "the first format (64-byte node headers");
  expect_fastfair_refused(*pool, Errc::version_mismatch, "it reads the second (32-byte headers");
  root->magic = baselines::fastfair::kMagic;
  EXPECT_EQ(make_index("fastfair", pool.get(), {})->lookup(10), std::optional<Value>(10));
}

// A crash between a split's activation of its new node (owned by the chain tail's word) and
// the sibling store that publishes it leaves a node no other node names: the open frees it.
TEST(FastFairOpen, FreesANodeLinkedButNotPublished) {
  auto pool = fastfair_pool(300, "128");
  const auto nodes = fastfair_chain(*pool, 128);
  const auto live = pool->allocator().stats().live_blocks;
  // The new node of a split of the tail: a copy of it, its chain word 0, linked after it.
  const std::uint64_t s = pool->allocator().reserve(128);
  std::memcpy(pool->at<std::byte>(s), pool->at<std::byte>(nodes.back()), 128);
  chain_word(*pool, s, 128) = 0;
  pool->allocator().activate(&chain_word(*pool, nodes.back(), 128), s);
  ASSERT_EQ(pool->allocator().stats().live_blocks, live + 1);
  auto idx = make_index("fastfair", pool.get(), {});
  EXPECT_EQ(pool->allocator().stats().live_blocks, live) << "the unpublished node was kept";
  EXPECT_EQ(chain_word(*pool, nodes.back(), 128), 0u);
  for (Key k = 1; k <= 300; ++k) ASSERT_EQ(idx->lookup(k), std::optional<Value>(k)) << k;
  expect_check_ok(*idx, "an unpublished node freed");
}

// A crash after a FAIR split published its sibling, before it truncated the node and before
// the parent update, leaves the node holding copies of the sibling's entries, and its sync
// word in PM may carry the tidy mark of the open that split it. The next open must not trust
// that mark: with one thread (no lock to take first) a write to a copied key would go to the
// stale copy, and scans, which cut the node at its sibling's low key, would not see it.
TEST(FastFairOpen, ATidyMarkOfAnEarlierOpenIsNotTrusted) {
  using baselines::fastfair::Header;
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  std::uint64_t x = 0;
  std::vector<std::byte> full(256);
  {
    auto idx = make_index("fastfair", pool.get(), {{"node_bytes", "256"}}, 1);
    for (Key k = 1; k <= 13; ++k) idx->upsert(k * 10, k);  // one full leaf of 13 entries
    x = fastfair_root(*pool)->tree_root;
    std::memcpy(full.data(), pool->at<std::byte>(x), full.size());
    idx->upsert(200, 200);  // the split: 70..130 and 200 go right, a new root above
  }
  auto* root = fastfair_root(*pool);
  auto* h = pool->at<Header>(x);
  ASSERT_NE(root->tree_root, x);
  ASSERT_NE(h->sibling, 0u);
  ASSERT_NE(h->sync & baselines::fastfair::kTidied, 0u) << "the split left its tidy mark";
  // x untruncated (every slot but the last, which holds its chain word) and still the root.
  std::memcpy(pool->at<std::byte>(x) + sizeof(Header), full.data() + sizeof(Header),
              full.size() - sizeof(Header) - sizeof(baselines::fastfair::Entry));
  root->tree_root = x;
  auto idx = make_index("fastfair", pool.get(), {}, 1);
  ASSERT_TRUE(idx->update(120, 7));
  std::map<Key, Value> want;
  for (Key k = 1; k <= 13; ++k) want[k * 10] = k;
  want[120] = 7;
  want[200] = 200;
  EXPECT_EQ(contents(*idx), want);
  expect_check_ok(*idx, "a split cut short by a crash");
}

// FAST_FAIR's searches stop at the kEnd that every node's last slot holds for good; a pool
// whose node lacks it would send them past the node, so the open refuses it.
TEST(FastFairOpen, RefusesANodeWithoutAnEndMarkInItsLastSlot) {
  auto pool = fastfair_pool(100, "128");
  const auto* root = fastfair_root(*pool);
  // The root: a node of 128 bytes, a 32-byte header and six slots.
  auto* last = pool->at<baselines::fastfair::Entry>(root->tree_root + 128 - 16);
  ASSERT_EQ(last->val, baselines::fastfair::kEnd);
  last->val = 7;
  expect_fastfair_refused(*pool, Errc::corrupt, "has no end mark in its last slot");
  last->val = baselines::fastfair::kEnd;
  auto idx = make_index("fastfair", pool.get(), {});
  for (Key k = 1; k <= 100; ++k) EXPECT_EQ(idx->lookup(k), std::optional<Value>(k)) << k;
}

// A crash in the middle of a shift leaves a hole in a node, and the slot after it holds the
// entry that was being moved; lookups after the open (the node not yet tidied) must step over
// the hole to it, as scans do.
TEST(FastFairOpen, LookupsStepOverAHoleACrashLeft) {
  using baselines::fastfair::Entry, baselines::fastfair::kEnd, baselines::fastfair::kHole;
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  {
    auto idx = make_index("fastfair", pool.get(), {{"node_bytes", "256"}});
    idx->upsert(1, 10);
    idx->upsert(2, 20);
  }
  const auto* root = pool->at<baselines::fastfair::Root>(*pool->root_word());
  auto* e = pool->at<Entry>(root->tree_root + sizeof(baselines::fastfair::Header));
  ASSERT_EQ(e[1].key, 2u);
  ASSERT_EQ(e[2].val, kEnd);
  // An insert of a key below 1 stopped after it copied (2, 20) one slot up and put the hole in
  // slot 1 for (1, 10).
  e[2] = e[1];
  e[1].val = kHole;
  auto idx = make_index("fastfair", pool.get(), {});
  EXPECT_EQ(idx->lookup(2), std::optional<Value>(20));
  EXPECT_EQ(idx->lookup(1), std::optional<Value>(10));
  std::vector<KV> all;
  EXPECT_EQ(idx->scan(0, 10, all), 2u);
  expect_check_ok(*idx, "a hole left by a crash");
}

// FAST_FAIR's quick passes (quick_pass.h) against a shift that rewrites entries between their
// two loads of one, as a concurrent insert can: the pass reads a value, the shift moves every
// entry from there one slot right and writes the new one, the pass reads the key. What the
// passes take from that torn pair must still be right.
struct ShiftBetweenLoads {
  baselines::fastfair::Entry* e;
  std::size_t at, slot;  // the shift runs right after the value load of e[at]; new entry slot
  baselines::fastfair::Entry fresh;
  bool done = false;
  std::uint64_t operator()(const std::uint64_t* p) {
    const std::uint64_t v = *p;
    if (!done && p == &e[at].val) {
      done = true;
      for (std::size_t i = 4; i > slot; --i) e[i] = e[i - 1];
      e[slot] = fresh;
    }
    return v;
  }
};

TEST(FastFairQuickPass, ATornPairSendsNoDescentRightOfTheKey) {
  using baselines::fastfair::Entry, baselines::fastfair::kEnd;
  const std::map<std::uint64_t, Key> low = {{100, 0}, {150, 5}, {200, 10}, {300, 20}, {400, 30}};
  auto low_key = [&](std::uint64_t c) { return low.at(c); };
  Entry e[5] = {{10, 200}, {20, 300}, {30, 400}, {0, kEnd}, {0, kEnd}};  // leftmost child 100
  bool reached = false;
  ASSERT_EQ(baselines::fastfair::quick_child(e, 100, 15, reached,
                                             ShiftBetweenLoads{e, 0, 0, {}, true}, low_key),
            200u)
      << "no shift: the child for 15 is the one of key 10";
  // Inserting (5, 150) at slot 0 after the pass loaded slot 1's value (300): the key it then
  // loads there is 10, so it pairs 10 with the child of 20.
  reached = false;
  const std::uint64_t c = baselines::fastfair::quick_child(
      e, 100, 15, reached, ShiftBetweenLoads{e, 1, 0, {5, 150}}, low_key);
  EXPECT_TRUE(c == 0 || low.at(c) <= 15) << "took child " << c << ", whose low key is above 15";
  EXPECT_EQ(e[0].key, 5u) << "the shift ran";
}

TEST(FastFairQuickPass, ATornPairGivesNoValueOfAnotherKey) {
  using baselines::fastfair::Entry, baselines::fastfair::kEnd;
  Entry e[5] = {{2, 200}, {20, 2000}, {30, 3000}, {0, kEnd}, {0, kEnd}};
  // Inserting (10, 1000) at slot 1 after the pass loaded slot 1's value (2000): the key it then
  // loads there is 10, the key it looks for.
  Value v = 0;
  bool has = false, reached = false;
  if (baselines::fastfair::quick_find(e, 10, v, has, reached,
                                      ShiftBetweenLoads{e, 1, 1, {10, 1000}})) {
    EXPECT_TRUE(has);
    EXPECT_EQ(v, 1000u) << "the value of another key";
  }
  EXPECT_EQ(e[1].val, 1000u) << "the shift ran";
}

TEST(PeerOptions, BadOptionsAreRefused) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  IndexConfig cfg;
  EXPECT_THROW(baselines::make_fastfair(cfg), Error) << "no pool";
  cfg.pool = pool.get();
  cfg.options = {{"node_bytes", "300"}};
  EXPECT_THROW(baselines::make_fastfair(cfg), Error) << "not a power of two";
  cfg.options = {{"leaf_capacity", "99"}};
  EXPECT_THROW(baselines::make_fptree(cfg), Error) << "above 56";
  cfg.options = {{"fanout", "8"}};
  EXPECT_THROW(baselines::make_fptree(cfg), Error) << "unknown option";
  cfg.options = {{"node_bytes", "256"}};
  baselines::make_fastfair(cfg)->upsert(1, 1);
  EXPECT_THROW(baselines::make_fptree(IndexConfig{pool.get(), 0, 1, {}}), Error)
      << "the pool holds a fastfair";
  cfg.options = {{"node_bytes", "512"}};
  EXPECT_THROW(baselines::make_fastfair(cfg), Error) << "created with another node size";
  cfg.options.clear();
  EXPECT_EQ(baselines::make_fastfair(cfg)->lookup(1), 1u) << "reopens with the stored size";
}

struct CrashCase {
  Variant v;
  pm::Unit unit;
  std::size_t ops;
  std::uint64_t key_space = 300;  // default-size nodes need more keys to split
  unsigned threads = 0;           // 1: the one-thread configuration, which takes no lock
};

class PeerCrash : public ::testing::TestWithParam<CrashCase> {};

TEST_P(PeerCrash, EveryImageRecoversToAcknowledgedState) {
  auto c = GetParam();
  std::size_t images = 0, recovery = 0, continued = 0;
  for (std::uint64_t seed : {11, 12}) {
    CrashConfig o;
    o.index = c.v.index;
    o.options = options_of(c.v);
    o.seed = seed;
    o.ops = c.ops;
    o.key_space = c.key_space;
    o.threads = c.threads;
    o.unit = c.unit;
    o.flush_one_in = 4;
    o.recovery_crash_one_in = 16;
    auto res = run_crash(o);
    ASSERT_FALSE(HasFailure()) << variant_name(c.v) << " seed " << seed;
    images += res.images;
    recovery += res.recovery_images;
    continued += res.continued_images;
    // Nodes of a few entries split all the time; default-size ones split too, over more keys.
    double nodes = std::string(c.v.index) == "fastfair" ? res.extra["nodes"] : res.extra["leaves"];
    EXPECT_GT(nodes, c.v.small ? 30 : 5) << variant_name(c.v) << " seed " << seed;
  }
  std::printf("%s (%s): %zu crash images checked, %zu inside recovery, %zu after recovery\n",
              variant_name(c.v).c_str(), c.unit == pm::Unit::word8 ? "word8" : "line64", images,
              recovery, continued);
  EXPECT_GE(images, 5000u);
  EXPECT_GT(recovery, 20u);
  EXPECT_GT(continued, 20u);
}

// FAST_FAIR relies on the stores to one cache line reaching PM in program order (x86 TSO
// plus whole-line write-back); it is tested in line64 units only. FPTree's commits are 8-byte
// words, so it is tested torn to words too. FAST_FAIR's 256-byte nodes (13 entries) run over
// 400 keys to split as often as the others. The last two cases run the default node sizes
// (FAST_FAIR 512-byte nodes, FPTree 56-entry leaves) over 1000 keys. The one-thread cases run
// the configuration without locks, whose FAST_FAIR reads skip the sibling on settled nodes.
INSTANTIATE_TEST_SUITE_P(Peers, PeerCrash,
                         ::testing::Values(CrashCase{kVariants[0], pm::Unit::line64, 1500},
                                           CrashCase{kVariants[1], pm::Unit::line64, 2200, 400},
                                           CrashCase{kVariants[3], pm::Unit::line64, 1500},
                                           CrashCase{kVariants[3], pm::Unit::word8, 1500},
                                           CrashCase{kVariants[4], pm::Unit::word8, 1500},
                                           CrashCase{kVariants[2], pm::Unit::line64, 800, 1000},
                                           CrashCase{kVariants[5], pm::Unit::word8, 1100, 1000},
                                           CrashCase{kVariants[0], pm::Unit::line64, 1500, 300, 1},
                                           CrashCase{kVariants[2], pm::Unit::line64, 800, 1000, 1},
                                           CrashCase{kVariants[3], pm::Unit::word8, 1500, 300, 1}),
                         [](const auto& param_info) {
                           const CrashCase& c = param_info.param;
                           return variant_name(c.v) +
                                  (c.unit == pm::Unit::word8 ? "_word8" : "_line64") +
                                  (c.threads == 1 ? "_one_thread" : "");
                         });

// The creation chain's word sits in each node's end-mark slot and the open finds an
// unpublished node by its walk: crashed in every window of a node's creation (from its
// activation to the sibling or root store that publishes it) and inside the open that frees
// it, every recovery of every image crashed in turn.
TEST(FastFairCrash, EveryWindowOfANodesCreationRecovers) {
  CrashConfig o;
  o.index = "fastfair";
  o.options = {{"node_bytes", "128"}};
  o.seed = 21;
  o.ops = 700;
  o.unit = pm::Unit::line64;
  o.recovery_crash_one_in = 1;
  o.phase = [] { return std::string(baselines::fastfair::current_phase()); };
  auto res = run_crash(o);
  ASSERT_FALSE(HasFailure());
  print_images(res);
  expect_crashed_in({"split_link", "root_link", "drop_tail"}, res.per_phase);
}

// Flushes and fences per insert in dram mode (the counters count what the algorithm asks
// for in every mode), over 100k random inserts at the default node sizes. Printed for
// docs/peers.md and asserted within 5% of what this run gives (FAST_FAIR 4.37 / 3.95, FPTree
// 3.67 / 2.21; the DPTree paper's Table 1: 4.35 / 3.64 flushes), so a change to either
// protocol's persists shows here.
TEST(PeerCost, FlushesPerInsert) {
  pm::set_mode(pm::Mode::dram);
  std::size_t n = 100000;
  if (const char* s = std::getenv("DPTREE_PEER_INSERTS")) n = std::strtoull(s, nullptr, 10);
  struct Want {
    const char* name;
    double flushes, fences;
  };
  for (const Want& w : {Want{"fastfair", 4.37, 3.95}, Want{"fptree", 3.67, 2.21}}) {
    const std::string name = w.name;
    auto pool = pm::Pool::create_in_memory(64 << 20);
    auto idx = make_index(name, pool.get(), {});
    std::mt19937_64 rng(42);
    auto before = pm::counters();
    for (std::size_t i = 0; i < n; ++i) idx->upsert(rng(), i);
    auto d = pm::counters() - before;
    auto per = [&](std::uint64_t x) { return double(x) / double(n); };
    std::printf(
        "%s: per insert: flushes %.2f (node %.2f, log %.2f, alloc %.2f, other %.2f), "
        "fences %.2f\n",
        name.c_str(), per(d.total().lines), per(d[pm::Category::node].lines),
        per(d[pm::Category::log].lines), per(d[pm::Category::alloc].lines),
        per(d[pm::Category::other].lines), per(d.total().fences));
    if (n == 100000) {  // the figures above are for the default count
      EXPECT_NEAR(per(d.total().lines), w.flushes, w.flushes * 0.05) << name;
      EXPECT_NEAR(per(d.total().fences), w.fences, w.fences * 0.05) << name;
    }
    EXPECT_EQ(idx->stats().records, n);
    expect_check_ok(*idx, name);
  }
}

// FAST_FAIR's shifts persist line by line inline in `pmem` mode (clwb + sfence in the loop,
// plain stores, counters charged once per shift) and through persist() elsewhere: the same
// inserts and removes must leave the same contents and charge the same lines and fences to
// the same categories either way.
TEST(FastFairShifts, PmemModeHoldsAndCountsWhatDramModeDoes) {
  struct Outcome {
    std::map<Key, Value> contents;
    pm::CounterSnapshot counts;
  };
  auto run = [](pm::Mode m) {
    pm::set_mode(m);
    auto pool = pm::Pool::create_in_memory(16 << 20);
    auto idx = make_index("fastfair", pool.get(), {}, 1);
    std::mt19937_64 rng(7);
    std::vector<Key> keys;
    const auto before = pm::counters();
    for (int i = 0; i < 20000; ++i) {
      keys.push_back(rng() >> 1);
      idx->upsert(keys.back(), i);
    }
    for (std::size_t i = 0; i < keys.size(); i += 3) idx->remove(keys[i]);
    Outcome o{contents(*idx), pm::counters() - before};
    expect_check_ok(*idx, "fastfair");
    return o;
  };
  const Outcome dram = run(pm::Mode::dram);
  const Outcome pmem = run(pm::Mode::pmem);
  pm::set_mode(pm::Mode::dram);
  EXPECT_EQ(dram.contents.size(), 20000u - 6667u);
  EXPECT_TRUE(pmem.contents == dram.contents);
  for (std::size_t c = 0; c < pm::kCategories; ++c) {
    const auto cat = static_cast<pm::Category>(c);
    EXPECT_EQ(pmem.counts[cat].lines, dram.counts[cat].lines) << pm::to_string(cat);
    EXPECT_EQ(pmem.counts[cat].fences, dram.counts[cat].fences) << pm::to_string(cat);
  }
  EXPECT_GT(dram.counts[pm::Category::node].lines, 20000u);
}

}  // namespace
}  // namespace dptree::testing
