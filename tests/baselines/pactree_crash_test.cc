// PACTree's data-node steps, crashed at each of their flushes and fences, and each image's
// recovery crashed at every one of its own events (those images recover too):
//  - an insert writes its pair and fingerprint into a free slot, then sets the slot's bitmap
//    bit: an image before the bit has the key absent, whatever of the pair reached PM;
//  - a slot a remove freed takes the next insert: no image shows the new key with part of the
//    old pair, nor the removed key again;
//  - a split writes the new node, links it into its left neighbour's `next`, drops the moved
//    pairs from the old node by one bitmap store, inserts the key (into the old node when it
//    belongs there) and hands the anchor to the search layer. An image between the link and the
//    drop holds the moved keys twice (recovery drops the old node's copies, and a crash in that
//    redo leaves what the next recovery redoes); one before the anchor is in the search layer
//    is missing it (recovery inserts it). Integer keys, and string keys that tie on their first
//    8 bytes (the inline key word) so the leaves decide; and a second split, whose anchor splits
//    the search layer's word naming the first split's node into an inner node.
// Pools of the earlier formats (every key out of place; a search layer ending at one-leaf
// arrays) are refused, naming the fix.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "baselines/pactree/pactree_index.h"
#include "dptree/error.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

struct SimMode {
  SimMode() { pm::set_mode(pm::Mode::sim); }
  ~SimMode() { pm::set_mode(pm::Mode::dram); }
};

const std::map<std::string, std::string> kInline = {{"updater", "inline"}};
constexpr std::size_t kFull = 56;  // pairs in a data node

struct Ints {
  using K = Key;
  using IndexT = Index;
  static std::unique_ptr<Index> make(pm::Pool& p) { return make_index("pactree", &p, kInline, 1); }
  static std::map<K, Value> contents(const Index& idx) {
    std::vector<KV> all;
    idx.scan(0, 1000, all);
    return {all.begin(), all.end()};
  }
};

struct Strings {
  using K = std::string;
  using IndexT = StringIndex;
  static std::unique_ptr<StringIndex> make(pm::Pool& p) {
    return make_string_index("pactree", &p, kInline, 1);
  }
  static std::map<K, Value> contents(const StringIndex& idx) {
    std::vector<StringKV> all;
    idx.scan(std::string(1, '\x01'), 1000, all);
    return {all.begin(), all.end()};
  }
};

// Keys that share their first 8 bytes (the inline key word) and differ after them.
std::string long_key(int i) {
  return "prefix__" + std::to_string(1000 + i);
}

template <class Keys>
std::unique_ptr<typename Keys::IndexT> recovers(pm::Pool& pool,
                                                const std::map<typename Keys::K, Value>& before,
                                                const std::map<typename Keys::K, Value>& after,
                                                const std::string& at) {
  std::unique_ptr<typename Keys::IndexT> r;
  guard(at + ": the recovery", [&] { r = Keys::make(pool); });
  if (!r) return r;
  expect_check_ok(*r, at);
  auto got = Keys::contents(*r);
  EXPECT_TRUE(got == before || got == after) << at << ": " << got.size() << " keys";
  return r;
}

struct Tally {
  std::map<std::string, std::size_t> phases;    // images per phase of the crashed operation
  std::size_t dropped = 0, anchored = 0;        // images whose recovery redid a split's steps
  std::size_t inner = 0, inner_after_drop = 0;  // crashed recoveries, and of those dropping
};

// Runs `setup`, then crashes `op` at every event (nothing unfenced kept, everything kept, and
// a random mix in the given unit); each image recovers to `before` or `after`, and each
// recovery is crashed at every one of its events.
template <class Keys, class Setup, class Op>
Tally crash_everywhere(pm::Unit unit, Setup setup, Op op,
                       const std::map<typename Keys::K, Value>& before,
                       const std::map<typename Keys::K, Value>& after) {
  SimMode mode;
  Tally t;
  auto pool = pm::Pool::create_in_memory(1 << 20);
  auto idx = Keys::make(*pool);
  setup(*idx);
  std::vector<std::pair<pm::Image, std::string>> images;
  std::uint64_t seed = 1;
  pool->sim()->set_hook([&](const pm::Event& e) {
    for (double keep : {0.0, 1.0, 0.5})
      images.emplace_back(e.sim->capture({seed++, keep, keep, unit}), pactree_current_phase());
  });
  op(*idx);
  pool->sim()->set_hook(nullptr);
  idx.reset();
  for (auto& [img, phase] : images) {
    ++t.phases[phase];
    std::vector<pm::Image> inner;
    auto p = pm::Pool::open_image(std::move(img), [&](const pm::Event& e) {
      inner.push_back(e.sim->capture({seed++, 0.5, 0.5, unit}));
    });
    auto r = recovers<Keys>(*p, before, after, "image in phase " + phase);
    if (::testing::Test::HasFailure()) return t;
    const bool dropped = extra_stat(*r, "leftovers_cleared") > 0;
    t.dropped += dropped;
    t.anchored += extra_stat(*r, "anchors_recovered") > 0;
    for (auto& im : inner) {
      ++t.inner;
      t.inner_after_drop += dropped;
      auto p2 = pm::Pool::open_image(std::move(im));
      recovers<Keys>(*p2, before, after, "image in the recovery of one in phase " + phase);
      if (::testing::Test::HasFailure()) return t;
    }
  }
  return t;
}

TEST(PacTreeCrash, InsertCrashedBetweenWritingAPairAndPublishingIt) {
  for (pm::Unit unit : {pm::Unit::line64, pm::Unit::word8}) {
    std::map<Key, Value> before, after;
    for (Key k = 1; k <= 10; ++k) before[k * 10] = k;
    after = before;
    after[55] = 555;
    auto t = crash_everywhere<Ints>(
        unit,
        [&](Index& i) {
          for (auto& [k, v] : before) i.upsert(k, v);
        },
        [](Index& i) { i.upsert(55, 555); }, before, after);
    ASSERT_FALSE(HasFailure());
    EXPECT_GT(t.phases["pair"], 0u) << "no image between writing the pair and publishing it";
    EXPECT_GT(t.phases["publish"], 0u) << "no image at the bitmap's store";
  }
}

TEST(PacTreeCrash, ASlotAgainNeverShowsPartOfItsOldPair) {
  for (pm::Unit unit : {pm::Unit::line64, pm::Unit::word8}) {
    std::map<Key, Value> before, after;
    for (Key k = 1; k <= 10; ++k) before[k * 10] = k;
    before.erase(50);  // its slot is the first free one: the insert below takes it
    after = before;
    after[55] = 555;
    auto t = crash_everywhere<Ints>(
        unit,
        [&](Index& i) {
          for (Key k = 1; k <= 10; ++k) i.upsert(k * 10, k);
          i.remove(50);
        },
        [](Index& i) { i.upsert(55, 555); }, before, after);
    ASSERT_FALSE(HasFailure());
    EXPECT_GT(t.phases["pair"], 0u);
  }
}

// A full node, then one key more: every step of the split, with the key landing in the old
// node (`left`) or the new one.
template <class Keys>
void split_case(std::map<typename Keys::K, Value> before, typename Keys::K k, bool left) {
  for (pm::Unit unit : {pm::Unit::line64, pm::Unit::word8}) {
    auto after = before;
    after[k] = 99;
    auto t = crash_everywhere<Keys>(
        unit,
        [&](auto& i) {
          for (auto& [key, v] : before) i.upsert(key, v);
        },
        [&](auto& i) { i.upsert(k, 99); }, before, after);
    ASSERT_FALSE(::testing::Test::HasFailure());
    for (const char* ph : {"node", "link", "split_drop", "smo"})
      EXPECT_GT(t.phases[ph], 0u) << "no image in phase " << ph;
    if (left) {
      EXPECT_GT(t.phases["pair"], 0u) << "no image inserting into the old node";
    }
    EXPECT_GT(t.dropped, 0u) << "no image between the link and the drop";
    EXPECT_GT(t.anchored, 0u) << "no image before the anchor reached the search layer";
    EXPECT_GT(t.inner_after_drop, 0u) << "no recovery crashed while it redid a drop";
  }
}

std::map<Key, Value> full_int_node() {
  std::map<Key, Value> m;
  for (Key k = 1; k <= kFull; ++k) m[k * 10] = k;
  return m;
}

TEST(PacTreeCrash, SplitIntoTheOldNodeCrashedAtEveryStepAndInItsRecovery) {
  split_case<Ints>(full_int_node(), 5, true);
}

TEST(PacTreeCrash, SplitIntoTheNewNodeCrashedAtEveryStepAndInItsRecovery) {
  split_case<Ints>(full_int_node(), kFull * 10 + 5, false);
}

// Two nodes, the second full: the anchor of its split goes into a search layer that holds one.
TEST(PacTreeCrash, ASecondSplitsAnchorSplitsTheSearchLayersWord) {
  std::map<Key, Value> m;
  for (Key k = 1; k <= kFull + kFull / 2; ++k) m[k * 10] = k;  // the second node ends full
  split_case<Ints>(m, m.rbegin()->first + 5, false);
}

std::map<std::string, Value> full_string_node() {
  std::map<std::string, Value> m;
  for (int i = 1; i <= int(kFull); ++i) m[long_key(i * 10)] = i;
  return m;
}

TEST(PacTreeCrash, StringSplitOnTiedKeyWordsCrashedAtEveryStep) {
  split_case<Strings>(full_string_node(), long_key(5), true);
  split_case<Strings>(full_string_node(), long_key(int(kFull) * 10 + 5), false);
}

TEST(PacTreeCrash, RefusesPoolsOfTheEarlierFormats) {
  pm::set_mode(pm::Mode::dram);
  for (std::uint64_t magic : {0x3152'5443'4150'4D50ull, 0x3252'5443'4150'4D50ull}) {
    auto pool = pm::Pool::create_in_memory(1 << 20);
    make_index("pactree", pool.get(), kInline, 1)->upsert(1, 1);
    *pool->root<std::uint64_t>() = magic;  // "PMPACTR1", "PMPACTR2"
    try {
      make_index("pactree", pool.get(), kInline, 1);
      FAIL() << "opened a pool of an earlier format";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::version_mismatch) << e.what();
      EXPECT_NE(std::string(e.what()).find("earlier format"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("new pool"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dptree::testing
