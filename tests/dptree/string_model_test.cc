// DPTree over string keys (its registry entry's create_string) against a std::map model: the
// mixed key space of fixtures/key_kinds.h (lengths 1, 8, 9, 63, 64, 65 and 1,024, prefixes,
// last-byte differences, zero and 0xFF bytes) with small leaves; merges, splits,
// consolidations, reopening the pool in the middle; keys of every length from 1 to 40 bytes
// around the slot's 8- and 16-byte boundaries (fixtures/slot_key_model.h); bad input, the
// other form's pools, and damaged leaves (a slot holding a key of 9 to 16 bytes among them).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>

#include "dptree/error.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "dptree/testing/phases.h"
#include "fixtures/expect_error.h"
#include "fixtures/full_pool.h"
#include "fixtures/key_kinds.h"
#include "fixtures/merge_part_limit.h"
#include "fixtures/named_stats.h"
#include "fixtures/slot_key_model.h"
#include "fixtures/string_slots.h"
#include "format/layout.h"
#include "format/log_page.h"
#include "format/string_leaf.h"
#include "string_keys.h"

namespace dptree::testing {
namespace {

// The model run below; `part` > 0 merges the buffer in parts of that many entries, each a merge
// cycle of its own (the path a merge that does not fit takes).
void model_with_reopens(std::size_t part) {
  const MergePartLimit limit(part);
  const auto keys = mixed_string_keys(900, 3);
  auto pool = pm::Pool::create_in_memory(32 << 20);
  auto idx = make_string_index("dptree", pool.get(), small_string_options());
  std::map<std::string, Value> model;
  std::mt19937_64 rng(5);
  double merges = 0, freed = 0, parts = 0;  // counted per open: summed over the reopens
  double waited = 0;                        // the longest per open
  for (int op = 0; op < 6000; ++op) {
    const std::string& k = keys[rng() % keys.size()];
    const Value v = rng() % 1000000;
    const int r = static_cast<int>(rng() % 100);
    const bool present = model.contains(k);
    if (r < 20) {
      EXPECT_EQ(idx->remove(k), present);
      model.erase(k);
    } else if (r < 35) {
      EXPECT_EQ(idx->insert(k, v), !present);
      model.try_emplace(k, v);
    } else if (r < 45) {
      EXPECT_EQ(idx->update(k, v), present);
      if (present) model[k] = v;
    } else if (r < 85) {
      idx->upsert(k, v);
      model[k] = v;
    } else if (r < 95) {
      auto m = model.find(k);
      EXPECT_EQ(idx->lookup(k), m == model.end() ? std::nullopt : std::optional<Value>(m->second))
          << "key of " << k.size() << " bytes";
    } else {  // a scan from a key that may be absent
      std::vector<StringKV> out;
      idx->scan(k, 7, out);
      auto m = model.lower_bound(k);
      for (const auto& [sk, sv] : out) {
        ASSERT_NE(m, model.end());
        EXPECT_EQ(sk, m->first);
        EXPECT_EQ(sv, m->second);
        ++m;
      }
      EXPECT_TRUE(out.size() == 7 || m == model.end());
    }
    if (op % 1500 == 1499) {  // close the pool's index and open it again: recovery
      expect_same(*idx, model, "before reopen at op " + std::to_string(op));
      NamedStats s(idx->stats().extra);
      merges += s["merges"];
      waited = std::max(waited, s["merge_wait_max_ms"]);
      freed += s["leaves_freed"];
      parts += s["merge_parts"];
      idx.reset();
      idx = make_string_index("dptree", pool.get(), small_string_options());
      expect_same(*idx, model, "after reopen at op " + std::to_string(op));
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_EQ(idx->stats().records, model.size());
  idx->drain();
  expect_same(*idx, model, "after drain");
  NamedStats s(idx->stats().extra);
  EXPECT_GT(merges + s["merges"], 30);
  EXPECT_GT(std::max(waited, s["merge_wait_max_ms"]), 0) << "writes wait for the merges they run";
  EXPECT_GT(s["leaves"], 30);
  EXPECT_GT(freed + s["leaves_freed"], 100);
  EXPECT_GT(s["leaves_merged_in_place"], 10);
  if (part)
    EXPECT_GT(parts + s["merge_parts"], merges + s["merges"] / 2) << "most merges went in parts";
  else
    EXPECT_EQ(parts + s["merge_parts"], 0) << "a merge that fits goes whole";
}

TEST(DPTreeStrings, ModelWithReopens) {
  model_with_reopens(0);
}

TEST(DPTreeStrings, ModelWithReopensMergingInParts) {
  model_with_reopens(5);
}

// A merge that does not fit whole is undone and tried in key-ordered parts, halved until one
// fits (string_merge.cc; ModelWithReopensMergingInParts runs parts that succeed). With
// R = 0.9 a merge splits most leaves, whose new leaves must fit beside the old ones: a 4 MiB
// pool of 8-byte keys (each a record in a key page and a slot) fills until a write is
// refused, merges having been undone and halved on the way; every acknowledged key reads
// back, check() passes (no leaked leaf or log page), and a reopen recovers the same contents.
TEST(DPTreeStrings, MergeThatDoesNotFitIsUndoneAndHalved) {
  const std::map<std::string, std::string> opt = {{"merge_ratio", "0.9"}};
  auto pool = pm::Pool::create_in_memory(4 << 20);
  auto idx = make_string_index("dptree", pool.get(), opt);
  std::map<std::string, Value> model;
  std::mt19937_64 rng(7);
  for (Value i = 0; i < 400000; ++i) {
    const std::uint64_t x = rng();
    const std::string k(reinterpret_cast<const char*>(&x), 8);
    try {
      idx->upsert(k, i);
      model[k] = i;
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), Errc::pool_full) << e.what();
      break;
    }
  }
  NamedStats s(idx->stats().extra);
  EXPECT_GT(s["failed_merges"], 0) << "parts were halved until one fit";
  EXPECT_GT(model.size(), 50000u);
  EXPECT_LT(model.size(), 400000u) << "the pool filled";
  expect_same(*idx, model, "full");
  idx.reset();
  idx = make_string_index("dptree", pool.get(), opt);
  expect_same(*idx, model, "reopened");
}

// Keys that are prefixes of each other and differ in their last byte sort as memcmp, the
// shorter first; a scan from a prefix starts at it.
// Keys of every length from 1 to 40 bytes around the slot's 8- and 16-byte boundaries (keys
// equal but for trailing zero bytes among them), small leaves: order, scans, updates, removes
// and reopens against a model (fixtures/slot_key_model.h).
TEST(DPTreeStrings, KeysOfEveryLengthUpTo40) {
  auto pool = pm::Pool::create_in_memory(32 << 20);
  run_slot_key_model(
      *pool, [](pm::Pool& p) { return make_string_index("dptree", &p, small_string_options()); });
}

TEST(DPTreeStrings, KeysOf9To16BytesKeepNoKeyPage) {
  auto pool = pm::Pool::create_in_memory(8 << 20);
  expect_no_key_pages_for_slot_keys(
      *pool, [](pm::Pool& p) { return make_string_index("dptree", &p, small_string_options()); });
}

TEST(DPTreeStrings, PrefixOrder) {
  auto pool = pm::Pool::create_in_memory(8 << 20);
  auto idx = make_string_index("dptree", pool.get(), small_string_options());
  std::map<std::string, Value> model;
  std::string k;
  for (int len = 1; len <= 70; ++len) {
    k.push_back(static_cast<char>(len % 2 ? 0 : 0xff));
    for (int last : {0, 1, 0xfe, 0xff}) {
      std::string x = k;
      x.back() = static_cast<char>(last);
      idx->upsert(x, static_cast<Value>(len * 1000 + last));
      model[x] = static_cast<Value>(len * 1000 + last);
    }
  }
  expect_same(*idx, model, "buffered");
  idx->drain();
  expect_same(*idx, model, "merged");
  std::vector<StringKV> out;
  idx->scan(std::string(9, '\0'), 3, out);
  auto m = model.lower_bound(std::string(9, '\0'));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].first, m->first);
}

TEST(DPTreeStrings, BadInputIsRefused) {
  auto pool = pm::Pool::create_in_memory(4 << 20);
  auto idx = make_string_index("dptree", pool.get(), small_string_options());
  auto code = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return e.code();
    }
    return Errc::io_error;  // stands for "nothing thrown"
  };
  EXPECT_EQ(code([&] { idx->upsert("", 1); }), Errc::invalid_argument);
  EXPECT_EQ(code([&] { idx->lookup(""); }), Errc::invalid_argument);
  EXPECT_EQ(code([&] { idx->upsert(std::string(1025, 'a'), 1); }), Errc::invalid_argument);
  EXPECT_EQ(code([&] { idx->insert("a", Value{1} << 63); }), Errc::invalid_argument);
  EXPECT_EQ(code([&] { idx->update("a", ~Value{0}); }), Errc::invalid_argument);
  EXPECT_EQ(idx->max_key_bytes(), 1024u);
  idx->upsert(std::string(1024, 'a'), 1);
  EXPECT_EQ(idx->lookup(std::string(1024, 'a')), std::optional<Value>(1));
  EXPECT_TRUE(idx->check().ok);
  EXPECT_EQ(idx->stats().records, 1u);
}

TEST(DPTreeStrings, EachFormRefusesTheOthersPool) {
  const IndexInfo& info = find_index("dptree");
  IndexConfig c;
  auto ints = pm::Pool::create_in_memory(4 << 20);
  c.pool = ints.get();
  { info.create(c)->upsert(1, 2); }
  expect_error([&] { info.create_string(c); }, Errc::wrong_index, "integer",
               "an integer pool opened as strings");
  auto strs = pm::Pool::create_in_memory(4 << 20);
  c.pool = strs.get();
  { info.create_string(c)->upsert("k", 2); }
  expect_error([&] { info.create(c); }, Errc::wrong_index, "string",
               "a string pool opened as integers");
  // Still usable after the refusals.
  EXPECT_EQ(info.create_string(c)->lookup("k"), std::optional<Value>(2));
}

// A pool too small for the keys: a write is refused with pool_full (the log keeps a page for
// removes), every acknowledged key stays, check() passes (no leaked leaf or key page), removes
// are taken and writes go on once they made room.
TEST(DPTreeStrings, FullPoolRefusesAndStaysConsistent) {
  auto pool = pm::Pool::create_in_memory(1 << 20);
  auto idx = make_string_index("dptree", pool.get(), small_string_options());
  std::map<std::string, Value> model;
  ASSERT_TRUE(fill_until_full(*idx, model)) << "a 1 MiB pool took 100,000 keys of 40-70 bytes";
  EXPECT_GT(NamedStats(idx->stats().extra)["key_pages"], 0);
  expect_same(*idx, model, "full");
  EXPECT_GT(remove_until_refused(*idx, model), 0u);
  expect_same(*idx, model, "after removes");
  // A merge needs room for the leaves its splits write before it frees the old ones: once
  // every key is removed it fits, and writes go on.
  if (!model.empty()) return;
  expect_writes_once_emptied(*idx, model);
}

// A pool whose string tree has merged leaves of long and short keys and a log of records,
// closed; `damage` then changes one word and opening must be Error(corrupt) naming `says`.
void expect_open_corrupt(const std::function<void(pm::Pool&, detail::Root&)>& damage,
                         const std::string& says) {
  using namespace detail;  // NOLINT: the layout vocabulary
  auto pool = pm::Pool::create_in_memory(8 << 20);
  {
    auto idx = make_string_index("dptree", pool.get(), small_string_options());
    // Keys of 18 to 22 bytes: slots that name their records.
    for (int i = 0; i < 60; ++i) idx->upsert(std::string(18 + i % 3, 'a') + std::to_string(i), 1);
    // Keys of 9 to 16 bytes, then keys of up to 8, after the long ones: slots that name no
    // record.
    for (int i = 0; i < 8; ++i) idx->upsert(std::string(9 + i, 'y') + std::to_string(i % 2), 6);
    for (int i = 0; i < 6; ++i) idx->upsert("zz" + std::to_string(i), 4);
    idx->upsert("zzzzzzz9", 5);
    idx->drain();
    idx->upsert("log", 2);
    idx->upsert("log record two", 3);
  }
  damage(*pool, *pool->at<Root>(*pool->root_word()));
  expect_error([&] { make_string_index("dptree", pool.get(), small_string_options()); },
               Errc::corrupt, says, "a damaged pool opened");
}

// The first leaf of the current version of a pool of small_string_options (8 slots).
detail::StringLeaf first_leaf(pm::Pool& p, detail::Root& r) {
  static const detail::StringLeafLayout L = [] {
    detail::StringLeafLayout l;
    l.init(8);
    return l;
  }();
  return {p.at(r.head[r.gv & detail::kVersionBit].off), p.base(), &L};
}
// The metadata copy the current version reads in the first leaf.
int current(pm::Pool& p, detail::Root& r) {
  return static_cast<int>(first_leaf(p, r).h().copy[r.gv & detail::kVersionBit]);
}
// The slot at position i of the first leaf's order.
detail::StringEntry& slot_at(pm::Pool& p, detail::Root& r, std::size_t i) {
  const auto lf = first_leaf(p, r);
  return lf.slots()[lf.order(current(p, r))[i]];
}
// The slot of the current version's last key (a key of up to 8 bytes in expect_open_corrupt).
detail::StringEntry& last_slot(pm::Pool& p, detail::Root& r) {
  using namespace detail;  // NOLINT: the layout vocabulary
  const int v = static_cast<int>(r.gv & kVersionBit);
  u64 l = r.head[v].off;
  while (p.at<StringLeafHeader>(l)->next[v].off) l = p.at<StringLeafHeader>(l)->next[v].off;
  const StringLeaf lf{p.at(l), p.base(), first_leaf(p, r).L};
  const int c = static_cast<int>(lf.h().copy[v]);
  return lf.slots()[lf.order(c)[lf.count(c) - 1]];
}

// The first slot of the current version's leaves for which `want` holds (the test fails when
// none does).
FoundSlot slot_where(pm::Pool& p, detail::Root& r,
                     const std::function<bool(const FoundSlot&)>& want) {
  const int v = static_cast<int>(r.gv & detail::kVersionBit);
  auto f = find_slot(p, r.head[v].off, v, *first_leaf(p, r).L, want);
  if (!f) throw std::logic_error("the damaged pool has no slot of the kind a case damages");
  return *f;
}
// A slot holding a key of 9..15 bytes whole.
FoundSlot held_slot(pm::Pool& p, detail::Root& r) {
  return slot_where(p, r, held_short_of_16);
}

// Each field of a leaf's metadata of the current version, damaged: the copy it names, the
// count, the bitmap, the order array's slots. Each is Error(corrupt) naming the leaf, never a
// crash.
TEST(DPTreeStringsDamaged, LeafMetadataIsCheckedOnOpen) {
  using namespace detail;  // NOLINT: the layout vocabulary
  expect_open_corrupt([](pm::Pool& p, Root& r) { first_leaf(p, r).count(current(p, r)) = 100000; },
                      "holds 100000 entries of version");
  expect_open_corrupt([](pm::Pool& p, Root& r) { first_leaf(p, r).count(current(p, r)) -= 1; },
                      "but its bitmap");
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) { first_leaf(p, r).bitmap(current(p, r))[0] |= 1u << 9; },
      "bits past its 8 slots");
  expect_open_corrupt([](pm::Pool& p, Root& r) { first_leaf(p, r).order(current(p, r))[1] = 200; },
                      "is past the leaf's 8 slots");
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) { first_leaf(p, r).h().copy[r.gv & kVersionBit] = 2; },
      "names metadata copy 2 for version");
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) {
        const auto lf = first_leaf(p, r);
        const int v = current(p, r);
        std::uint16_t unused = 0;
        while (lf.live(v, unused)) ++unused;
        lf.order(v)[0] = unused;
      },
      "names a slot its bitmap does not hold");
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) {
        const auto lf = first_leaf(p, r);
        lf.order(current(p, r))[1] = lf.order(current(p, r))[0];
      },
      "repeats a slot");
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) {
        const auto lf = first_leaf(p, r);
        std::swap(lf.order(current(p, r))[0], lf.order(current(p, r))[1]);
      },
      "its key is not above the one before");
}

// The metadata copy the current version does not read is the next merge's to write: what a
// crash inside a merge left there is never read, so damage there opens, and the tree is whole.
TEST(DPTreeStringsDamaged, TheOtherVersionsMetadataIsNotRead) {
  using namespace detail;  // NOLINT: the layout vocabulary
  auto pool = pm::Pool::create_in_memory(8 << 20);
  {
    auto idx = make_string_index("dptree", pool.get(), small_string_options());
    for (int i = 0; i < 60; ++i) idx->upsert(std::string(10 + i % 3, 'a') + std::to_string(i), 1);
    idx->drain();
  }
  auto& r = *pool->at<Root>(*pool->root_word());
  const auto lf = first_leaf(*pool, r);
  const int other = 1 - current(*pool, r);
  lf.count(other) = 100000;
  lf.order(other)[0] = 300;
  lf.bitmap(other)[0] = ~u64{0};
  auto idx = make_string_index("dptree", pool.get(), small_string_options());
  const CheckReport c = idx->check();
  EXPECT_TRUE(c.ok) << (c.problems.empty() ? "" : c.problems.front());
  EXPECT_EQ(idx->lookup("aaaaaaaaaa0"), std::optional<Value>(1));
  // A key into the first leaf, which has a free slot: merged in place, into that copy.
  ASSERT_LT(lf.count(1 - other), 8u);
  idx->upsert("aaaaaaaaaa01", 3);
  idx->drain();
  EXPECT_GT(NamedStats(idx->stats().extra)["leaves_merged_in_place"], 0);
  EXPECT_EQ(current(*pool, r), other);
  EXPECT_TRUE(idx->check().ok);
  EXPECT_EQ(idx->lookup("aaaaaaaaaa01"), std::optional<Value>(3));
  EXPECT_EQ(idx->stats().records, 61u);
}

TEST(DPTreeStringsDamaged, LeafSlotsAreCheckedOnOpen) {
  using namespace detail;  // NOLINT: the layout vocabulary
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) {
        StringEntry& s = slot_at(p, r, 1);
        s.meta = StringEntry::make_meta(5000, s.rec());
      },
      "has a key of 5000 bytes");
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) {
        StringEntry& s = slot_at(p, r, 1);
        s.meta = StringEntry::make_meta(0, s.rec());
      },
      "has a key of 0 bytes");
  // A long key's prefix must be its record's first bytes: a search decides on it alone.
  expect_open_corrupt([](pm::Pool& p, Root& r) { slot_at(p, r, 2).prefix ^= 1; },
                      "'s prefix differs from its record's key");
  // A key of up to 8 bytes is its prefix: no record named, nothing past its length.
  ASSERT_EQ(std::string("zzzzzzz9").size(), kStringInlineKey);
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) {
        StringEntry& s = last_slot(p, r);
        s.meta = StringEntry::make_meta(s.meta_len(), slot_at(p, r, 0).rec());
      },
      "names a record for a key of 8 bytes");
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) {
        StringEntry& s = last_slot(p, r);
        s.meta = StringEntry::make_meta(3, 0);  // "zzz" with 5 bytes of "zzzzz9" after it
      },
      "'s prefix has bytes past its key's 3");
  expect_open_corrupt([](pm::Pool& p, Root& r) { last_slot(p, r).prefix ^= 1; },
                      "'s fingerprint differs");
  // A key of 9..16 bytes is in its tagged slot: no record named, nothing past its length
  // (given by its fingerprint), its bytes those its fingerprint was made from.
  expect_open_corrupt([](pm::Pool& p, Root& r) { held_slot(p, r).entry().meta |= 1; },
                      "bytes (by its fingerprint) with bytes past its length");
  expect_open_corrupt([](pm::Pool& p, Root& r) { held_slot(p, r).entry().meta ^= u64{1} << 56; },
                      "'s fingerprint differs");
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) {
        const FoundSlot f = held_slot(p, r);
        const std::size_t len = f.len();
        f.entry().word &= ~kSlotKeyTag;  // untagged: the meta word now a length and record
        f.entry().meta = StringEntry::make_meta(len, slot_at(p, r, 0).rec());
      },
      "bytes, which its slot must hold (tagged)");
  // The tag set on the slot of an 8-byte key (meta: its length) and of a longer key (meta: its
  // length and record): a key of 9..16 bytes with bytes past its length or of another hash.
  for (auto len : {std::size_t{8}, std::size_t{19}}) {
    expect_open_corrupt(
        [len](pm::Pool& p, Root& r) {
          const FoundSlot f = slot_where(p, r, [len](const FoundSlot& x) {
            return !x.entry().in_slot() && x.entry().meta_len() == len;
          });
          f.entry().word |= kSlotKeyTag;
          f.fingerprint() &= ~7u;  // a 9-byte key by its fingerprint: the meta word is not
        },
        "holds a key of 9 bytes (by its fingerprint) with bytes past its length");
    expect_open_corrupt(
        [len](pm::Pool& p, Root& r) {
          const FoundSlot f = slot_where(p, r, [len](const FoundSlot& x) {
            return !x.entry().in_slot() && x.entry().meta_len() == len;
          });
          f.entry().word |= kSlotKeyTag;
          f.fingerprint() |= 7u;  // 16 bytes by its fingerprint: no padding, another hash
        },
        "'s fingerprint differs");
  }

  // A wrong fingerprint would hide its key from lookups: refused before any lookup.
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) {
        const auto lf = first_leaf(p, r);
        lf.fps(current(p, r))[lf.order(current(p, r))[3]] ^= 1;
      },
      "'s fingerprint differs");
  expect_open_corrupt(
      [&](pm::Pool& p, Root& r) {
        first_leaf(p, r).h().next[r.gv & kVersionBit] = LeafPtr(*p.root_word());  // not a leaf
      },
      "which is not a leaf the directory owns");
}

// check() of a live tree reads the slots as open does (fixtures/string_slots.h).
TEST(DPTreeStringsDamaged, CheckReportsADamagedSlotKey) {
  using namespace detail;  // NOLINT: the layout vocabulary
  auto pool = pm::Pool::create_in_memory(8 << 20);
  auto idx = make_string_index("dptree", pool.get(), small_string_options());
  expect_check_reports_damaged_slot_key(
      *idx, [&] { return held_slot(*pool, *pool->at<Root>(*pool->root_word())); });
}

// A slot's reference to its key's record: outside the pool, into a block that is no log page,
// into the middle of a record, to a record of another length, or to a record whose bytes were
// damaged: each is Error(corrupt) naming the leaf's slot, never a crash.
TEST(DPTreeStringsDamaged, KeyRecordReferencesAreCheckedOnOpen) {
  using namespace detail;  // NOLINT: the layout vocabulary
  auto point = [&](std::size_t i, const std::function<u64(pm::Pool&, Root&, u64 rec)>& to,
                   const std::string& says) {
    expect_open_corrupt(
        [&](pm::Pool& p, Root& r) {
          StringEntry& s = slot_at(p, r, i);
          s.meta = StringEntry::make_meta(s.meta_len(), to(p, r, s.rec()));
        },
        says);
  };
  point(
      2, [](pm::Pool& p, Root&, u64) { return p.size() + 64; }, "outside the pool");
  point(
      2, [](pm::Pool&, Root&, u64 rec) { return rec + 4; }, "misaligned");
  point(
      2, [](pm::Pool&, Root& r, u64) { return r.head[r.gv & kVersionBit].off + 64; },
      "'s record at");
  point(
      2, [](pm::Pool&, Root&, u64 rec) { return rec + 8; }, "'s record at");
  // The record of a key of another length.
  point(
      0,
      [&](pm::Pool& p, Root& r, u64) {
        std::size_t j = 1;
        while (slot_at(p, r, j).meta_len() == slot_at(p, r, 0).meta_len()) ++j;
        return slot_at(p, r, j).rec();
      },
      "holds a key of");
  expect_open_corrupt([&](pm::Pool& p, Root& r) { *p.at<char>(slot_at(p, r, 3).rec() + 16) ^= 1; },
                      "'s record at");
  expect_open_corrupt(
      [&](pm::Pool& p, Root& r) {
        const u64 page = p.allocator().block_containing(slot_at(p, r, 3).rec());
        *p.at<u64>(page + kPageEpochOffset) += 1;  // every record of the page stale
      },
      "is not whole");
}

TEST(DPTreeStringsDamaged, PoolsOfEarlierFormatsAreRefusedNamingTheirVersion) {
  using namespace detail;  // NOLINT: the layout vocabulary
  const std::pair<std::size_t, std::string> older[] = {
      {1, "format 1 (leaves without fingerprints)"},
      {2, "format 2 (key bytes in the leaves, records of 63-bit payloads)"},
      {3, "format 3 (sorted leaves rewritten by each merge)"},
      {4, "format 4 (leaves merged in place, slots of one word naming records of key and value)"},
      {5, "format 5 (fingerprints and bloom hashes of a byte-at-a-time FNV-1a hash)"},
      {6, "format 6 (slots of keys of 9 to 16 bytes naming their log records, kept in key pages)"}};
  for (const auto& [f, says] : older) {
    auto pool = pm::Pool::create_in_memory(8 << 20);
    make_string_index("dptree", pool.get(), small_string_options())->upsert("k", 1);
    pool->at<Root>(*pool->root_word())->magic = f < 3 ? string_magic_version(kStringRootMagicR3, f)
                                                : f == 3 ? kStringRootMagicR3
                                                : f == 4 ? kStringRootMagicR4
                                                : f == 5 ? kStringRootMagicR5
                                                         : kStringRootMagicR6;
    expect_error([&] { make_index("dptree", pool.get(), {}); }, Errc::wrong_index,
                 "--key-type string", "a string pool of an earlier format opened as integers");
    try {
      make_string_index("dptree", pool.get(), small_string_options());
      ADD_FAILURE() << "a pool of string format " << f << " opened";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::version_mismatch) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("reads format 7"), std::string::npos) << e.what();
    }
  }
}

// A damaged record ends the log where it is, as a torn one would; but the whole records
// after it show that it was not the last one written: Error(corrupt), not a silent loss.
TEST(DPTreeStringsDamaged, DamagedLogRecordBeforeWholeOnesIsRefusedOnOpen) {
  using namespace detail;  // NOLINT: the layout vocabulary
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) {
        u64* first = p.at<u64>(r.log_head[r.gv & kVersionBit].off + 64);
        *first = (*first & ~(u64{0xffff} << 1)) | (u64{2000} << 1);  // still a valid bit
      },
      "lies after the end of its log");
  expect_open_corrupt(
      [](pm::Pool& p, Root& r) {
        *p.at<char>(r.log_head[r.gv & kVersionBit].off + 64 + 16) ^= 1;  // a key byte
      },
      "lies after the end of its log");
}

}  // namespace
}  // namespace dptree::testing
