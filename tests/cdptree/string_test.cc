// The concurrent DPTree over string keys (cdptree's create_string) beyond the generic string
// fixtures (tests/strings): each form refuses the other's pool naming --key-type, a full pool
// parks a merge and takes removes until one fits, a reopen runs a parked merge with the
// Front's removes laid over it, keys of every length from 1 to 40 bytes around the slot's 8-
// and 16-byte boundaries against a model (none of 9 to 16 bytes keeping a key page), and
// damaged leaves and log records are refused on open with Error(corrupt) naming what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cdptree/string_cdptree.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "engine/string_base.h"
#include "fixtures/expect_error.h"
#include "fixtures/full_pool.h"
#include "fixtures/key_kinds.h"
#include "fixtures/model_fixture.h"
#include "fixtures/named_stats.h"
#include "fixtures/slot_key_model.h"
#include "fixtures/string_slots.h"
#include "format/cdptree_root.h"
#include "format/layout.h"
#include "format/string_leaf.h"

namespace dptree::testing {
namespace {

IndexOptions small() {
  return {{"leaf_capacity", "8"},
          {"log_partitions", "2"},
          {"log_page_size", "2048"},
          {"min_merge_records", "24"}};
}

void expect_wrong_index(const std::function<void()>& open, const std::string& says) {
  try {
    open();
    ADD_FAILURE() << "a pool of the other form opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::wrong_index) << e.what();
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(CDPTreeStrings, EachFormRefusesTheOthersPool) {
  auto ints = pm::Pool::create_in_memory(8 << 20);
  make_index("cdptree", ints.get(), {})->upsert(1, 2);
  expect_wrong_index([&] { make_string_index("cdptree", ints.get(), {}); }, "--key-type u64");
  auto strs = pm::Pool::create_in_memory(8 << 20);
  make_string_index("cdptree", strs.get(), {})->upsert("k", 2);
  expect_wrong_index([&] { make_index("cdptree", strs.get(), {}); }, "--key-type string");
  EXPECT_EQ(make_string_index("cdptree", strs.get(), {})->lookup("k"), std::optional<Value>(2));
  EXPECT_EQ(make_index("cdptree", ints.get(), {})->lookup(1), std::optional<Value>(2));
}

// A merge leaves each shard's last log page partly filled, a key page while a slot names a
// record in it; the next buffer's shard goes on in it when it needs a page (PLog::inherit).
// Keys of 64 bytes (10-word records, 50 to a 4 KiB page) in 2 shards over many merges: every
// key page but the shards' last ones and one page given but not yet taken is full, across a
// reopen (whose replay skips an inherited page's records of the other log) and the writes
// after it, and the pool passes check(). Without inheritance each merge left two pages partly
// filled.
TEST(CDPTreeStrings, ShardsGoOnInTheLastKeyPagesOfTheLogBefore) {
  auto pool = pm::Pool::create_in_memory(64 << 20);
  const IndexOptions opt = {{"log_partitions", "2"},     {"log_page_size", "4096"},
                            {"min_merge_records", "64"}, {"merge_ratio", "0.01"},
                            {"background_merge", "0"},   {"merge_threads", "1"}};
  auto key = [](int i) {
    std::string k = "key " + std::to_string(i) + " ";
    return k + std::string(64 - k.size(), 'x');
  };
  auto expect_pages_full = [&](const StringIndex& idx, int keys) {
    const NamedStats st(idx.stats().extra);
    expect_check_ok(idx, std::to_string(keys) + " keys");
    EXPECT_GT(st["merges"], 10);
    EXPECT_GT(st["log_pages_inherited"], 10);
    // 504 words a page, less a pad of at most 9 words; each shard's last page and one given
    // to it may be partly filled.
    const double full = std::ceil(keys * 10.0 / (504 - 9));
    EXPECT_LE(st["key_pages"] + st["log_pages"], full + 4) << keys << " keys";
  };
  {
    auto idx = make_string_index("cdptree", pool.get(), opt);
    for (int i = 0; i < 3000; ++i) idx->upsert(key(i), i);
    expect_pages_full(*idx, 3000);
  }
  auto idx = make_string_index("cdptree", pool.get(), opt);
  for (int i = 0; i < 3000; i += 7) EXPECT_EQ(idx->lookup(key(i)), std::optional<Value>(i));
  for (int i = 3000; i < 4000; ++i) idx->upsert(key(i), i);
  for (int i = 0; i < 4000; i += 3) EXPECT_EQ(idx->lookup(key(i)), std::optional<Value>(i));
  expect_pages_full(*idx, 4000);
}

// A scan takes a few entries of each buffer shard at a time and must not return a key past
// the last one it read of a shard that has more. Here the keys of shard 0 (the buffer's shard
// formula: the top half of hash_string modulo the 64 shards) are all below the other shards'
// keys, so a scan from the start reads shard 0 far beyond its share; no merge runs, so every
// key is in the Front.
TEST(CDPTreeStrings, ScansOverUnevenShardsMissNoKey) {
  constexpr std::size_t kShards = 64;
  auto pool = pm::Pool::create_in_memory(32 << 20);
  auto idx = make_string_index(
      "cdptree", pool.get(),
      {{"log_partitions", std::to_string(kShards)}, {"min_merge_records", "1000000"}});
  std::map<std::string, Value> model;
  for (int i = 0; i < 200000; ++i) {
    char b[16];
    std::snprintf(b, sizeof b, "key%06d", i);
    const std::string k = b;
    const bool shard0 = (detail::hash_string(k) >> 32) % kShards == 0;
    if (i < 100000 ? shard0 : !shard0 && i % 50 == 0) {
      idx->upsert(k, static_cast<Value>(i));
      model[k] = static_cast<Value>(i);
    }
  }
  ASSERT_GT(model.size(), 2500u);
  const std::string starts[] = {"a",         "key000000", "key050000",
                                "key099999", "key100000", "key150000"};
  for (const std::string& start : starts)
    for (std::size_t n : {1, 4, 5, 16, 17, 100, 1000, 5000}) {
      std::vector<StringKV> out;
      ASSERT_EQ(idx->scan(start, n, out), out.size());
      auto m = model.lower_bound(start);
      std::size_t i = 0;
      for (; i < out.size() && m != model.end(); ++i, ++m)
        ASSERT_EQ(out[i], StringKV(m->first, m->second))
            << "scan of " << n << " from '" << start << "', entry " << i;
      EXPECT_EQ(i, out.size()) << "scan of " << n << " from '" << start << "' returned too much";
      EXPECT_TRUE(out.size() == n || m == model.end())
          << "scan of " << n << " from '" << start << "' stopped early";
    }
  EXPECT_EQ(NamedStats(idx->stats().extra)["merges"], 0) << "the keys left the Front";
}

// A pool too small for the keys: a merge that does not fit is undone and parked, new values
// are refused with pool_full, every acknowledged key stays, removes are taken and retry the
// merge; once everything is removed a merge fits and writes go on. Whether the pool fills
// inside a merge (its splits' new leaves) or at a log append, and how many removes fit before
// one is refused, follow the keys' shards (their hash) and the leaf size: so several sizes
// run, each must keep every acknowledged write, and at least one must retry a parked merge.
TEST(CDPTreeStrings, FullPoolParksTheMergeAndTakesRemoves) {
  bool retried = false;
  for (const char* cap : {"12", "13", "16", "20", "24"}) {
    SCOPED_TRACE(std::string("leaf_capacity ") + cap);
    auto pool = pm::Pool::create_in_memory(1 << 20);
    IndexOptions o = small();
    o["leaf_capacity"] = cap;
    auto idx = make_string_index("cdptree", pool.get(), o);
    std::map<std::string, Value> model;
    ASSERT_TRUE(fill_until_full(*idx, model)) << "a 1 MiB pool took 100,000 keys of 40-70 bytes";
    expect_same_contents(*idx, model, "full");
    const std::size_t removed = remove_until_refused(*idx, model);
    EXPECT_GT(removed, 0u);
    const NamedStats st(idx->stats().extra);
    std::printf("leaf_capacity %s: failed merges %g, retries %g, removed %zu, left %zu\n", cap,
                st["failed_merges"], st["merge_retries"], removed, model.size());
    retried = retried || (st["failed_merges"] > 0 && st["merge_retries"] > 0);
    expect_same_contents(*idx, model, "after removes");
    // A parked merge is retried by recovery too; every acknowledged write is still there.
    idx.reset();
    idx = make_string_index("cdptree", pool.get(), o);
    expect_same_contents(*idx, model, "reopened full");
    if (model.empty()) {
      expect_writes_once_emptied(*idx, model);
      idx.reset();
      idx = make_string_index("cdptree", pool.get(), o);
      expect_same(*idx, model, "reopened");
    }
    if (HasFailure()) return;
  }
  EXPECT_TRUE(retried) << "no leaf size made removes retry a parked merge";
}

// A merge parked for want of PM leaves two logs live, so a reopen runs it again; recovery
// runs it as a retry after removes does, with the Front's entries laid over the Middle's.
// Here the Front's removes, too few for a retry of their own (the back-off is a leaf's worth),
// cancel every insert of the parked Middle: merged alone, the Middle would not fit again
// (not even its first entry did before), laid over by the removes it fits. Small merges (a
// trigger of 8 entries) so that a few removes cancel a whole Middle.
TEST(CDPTreeStrings, RecoveryRetriesAParkedMergeWithTheFrontsRemoves) {
  int checked = 0;
  for (const char* cap : {"10", "12", "14", "16", "18", "20", "22", "24", "26", "28", "30", "32"}) {
    SCOPED_TRACE(std::string("leaf_capacity ") + cap);
    auto pool = pm::Pool::create_in_memory(1 << 20);
    IndexOptions o = small();
    o["leaf_capacity"] = cap;
    o["merge_ratio"] = "0.0001";
    o["min_merge_records"] = "8";
    auto idx = make_string_index("cdptree", pool.get(), o);
    std::map<std::string, Value> model;
    std::vector<std::string> order;  // acknowledged keys, in the order written
    for (int i = 0; i < 100000; ++i) {
      const std::string k = std::string(40 + i % 30, 'k') + std::to_string(i);
      try {
        idx->upsert(k, static_cast<Value>(i));
      } catch (const Error& e) {
        ASSERT_EQ(e.code(), Errc::pool_full) << e.what();
        break;
      }
      model[k] = static_cast<Value>(i);
      order.push_back(k);
    }
    const NamedStats st(idx->stats().extra);
    std::printf("leaf_capacity %s: failed merges %g, middle %g, front %g\n", cap,
                st["failed_merges"], st["middle_entries"], st["front_entries"]);
    // The pool may fill at a log append instead, with no merge parked.
    if (st["failed_merges"] == 0 || st["front_entries"] != 0) continue;
    // Inline merges: the Middle holds the last keys written, the Front none. Removing them all
    // must not reach the back-off, which is a leaf's worth of removes but at most the trigger's
    // 8 (else the removes retry the merge themselves).
    const auto middle = static_cast<std::size_t>(st["middle_entries"]);
    if (middle >= std::min<std::size_t>(std::stoul(cap), 8)) continue;
    bool refused = false;
    for (std::size_t i = order.size() - middle; i < order.size() && !refused; ++i) {
      try {
        ASSERT_TRUE(idx->remove(order[i]));
        model.erase(order[i]);
      } catch (const Error& e) {
        ASSERT_EQ(e.code(), Errc::pool_full) << e.what();
        std::printf("  remove refused: %s\n", e.what());
        refused = true;  // its log record found no page: nothing written
      }
    }
    if (refused) continue;
    EXPECT_EQ(NamedStats(idx->stats().extra)["merge_retries"], 0);
    idx.reset();
    idx = make_string_index("cdptree", pool.get(), o);
    const NamedStats re(idx->stats().extra);
    EXPECT_EQ(re["failed_merges"], 0) << "the recovered merge did not fit";
    EXPECT_EQ(re["middle_entries"], 0);
    expect_same(*idx, model, "reopened");
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no leaf size parked a merge";
}

// Keys of every length from 1 to 40 bytes around the slot's 8- and 16-byte boundaries (keys
// equal but for trailing zero bytes among them), small leaves: order, scans, updates, removes
// and reopens against a model (fixtures/slot_key_model.h).
TEST(CDPTreeStrings, KeysOfEveryLengthUpTo40) {
  auto pool = pm::Pool::create_in_memory(32 << 20);
  run_slot_key_model(*pool, [](pm::Pool& p) { return make_string_index("cdptree", &p, small()); });
}

TEST(CDPTreeStrings, KeysOf9To16BytesKeepNoKeyPage) {
  auto pool = pm::Pool::create_in_memory(8 << 20);
  expect_no_key_pages_for_slot_keys(
      *pool, [](pm::Pool& p) { return make_string_index("cdptree", &p, small()); });
}

// A pool whose tree has merged leaves of long and short keys and a log record in one shard,
// closed; `damage` then changes one word and opening must be Error(corrupt) naming `says`.
void expect_open_corrupt(const std::function<void(pm::Pool&, detail::CRoot&)>& damage,
                         const std::string& says) {
  auto pool = pm::Pool::create_in_memory(8 << 20);
  {
    auto idx = make_string_index("cdptree", pool.get(), small());
    // Keys of 18 to 22 bytes (slots naming records), then of 9 to 16 (held in their slots).
    for (int i = 0; i < 60; ++i) idx->upsert(std::string(18 + i % 3, 'a') + std::to_string(i), 1);
    for (int i = 0; i < 8; ++i) idx->upsert(std::string(9 + i, 'y') + std::to_string(i % 2), 6);
    idx->drain();
    for (int i = 0; i < 8; ++i) idx->upsert("log record " + std::to_string(i), 2);  // no merge
  }
  damage(*pool, *pool->at<detail::CRoot>(*pool->root_word()));
  expect_error([&] { make_string_index("cdptree", pool.get(), small()); }, Errc::corrupt, says,
               "a damaged pool opened");
}

// The first leaf of the current version of a pool of small() leaves.
detail::StringLeaf first_leaf(pm::Pool& p, detail::CRoot& r) {
  static const detail::StringLeafLayout L = [] {
    detail::StringLeafLayout l;
    l.init(std::stoul(small().at("leaf_capacity")));
    return l;
  }();
  return detail::StringLeaf{p.at(r.base.head[r.base.gv & detail::kVersionBit].off), p.base(), &L};
}
// The metadata copy the current version reads in the first leaf.
int current(pm::Pool& p, detail::CRoot& r) {
  return static_cast<int>(first_leaf(p, r).h().copy[r.base.gv & detail::kVersionBit]);
}
detail::StringEntry& slot_at(pm::Pool& p, detail::CRoot& r, std::size_t i) {
  const auto lf = first_leaf(p, r);
  return lf.slots()[lf.order(current(p, r))[i]];
}

// A slot holding a key of 9..15 bytes whole (the test fails when there is none).
FoundSlot held_slot(pm::Pool& p, detail::CRoot& r) {
  const int v = static_cast<int>(r.base.gv & detail::kVersionBit);
  auto f = find_slot(p, r.base.head[v].off, v, *first_leaf(p, r).L, held_short_of_16);
  if (!f) throw std::logic_error("the damaged pool has no slot holding a key of 9..15 bytes");
  return *f;
}

// The validator is the single-threaded form's (dptree_string_model_test damages every field);
// these cases show the concurrent form's open runs it on its leaves.
TEST(CDPTreeStringsDamaged, LeafContentsAreCheckedOnOpen) {
  using namespace detail;  // NOLINT: the layout vocabulary
  // A reference into the middle of a record, and a damaged key byte in a key page.
  expect_open_corrupt(
      [](pm::Pool& p, CRoot& r) {
        StringEntry& s = slot_at(p, r, 2);
        s.meta = StringEntry::make_meta(s.meta_len(), s.rec() + 8);
      },
      "'s record at");
  expect_open_corrupt([](pm::Pool& p, CRoot& r) { *p.at<char>(slot_at(p, r, 3).rec() + 17) ^= 4; },
                      "'s record at");
  // The slot's own words: its prefix against its record's key, its value.
  expect_open_corrupt([](pm::Pool& p, CRoot& r) { slot_at(p, r, 1).prefix += 1; },
                      "'s prefix differs from its record's key");
  // A slot holding a key of 9..16 bytes: nothing past the length its fingerprint gives, and
  // the tag on a slot naming a record.
  expect_open_corrupt([](pm::Pool& p, CRoot& r) { held_slot(p, r).entry().meta |= 1; },
                      "(by its fingerprint) with bytes past its length");
  expect_open_corrupt(
      [](pm::Pool& p, CRoot& r) {
        slot_at(p, r, 1).word |= kSlotKeyTag;
        first_leaf(p, r).fps(current(p, r))[first_leaf(p, r).order(current(p, r))[1]] &= ~7u;
      },
      "holds a key of 9 bytes (by its fingerprint) with bytes past its length");
  expect_open_corrupt([](pm::Pool& p, CRoot& r) { first_leaf(p, r).count(current(p, r)) = 100000; },
                      "holds 100000 entries");
  expect_open_corrupt([](pm::Pool& p, CRoot& r) { first_leaf(p, r).count(current(p, r)) -= 1; },
                      "but its bitmap");
  expect_open_corrupt(
      [](pm::Pool& p, CRoot& r) { first_leaf(p, r).order(current(p, r))[0] = 4000; },
      "is past the leaf's");
  expect_open_corrupt(
      [](pm::Pool& p, CRoot& r) {
        const auto lf = first_leaf(p, r);
        lf.fps(current(p, r))[lf.order(current(p, r))[2]] ^= 0x100;
      },
      "'s fingerprint differs");
}

// check() of a live tree reads the slots as open does (fixtures/string_slots.h).
TEST(CDPTreeStringsDamaged, CheckReportsADamagedSlotKey) {
  using namespace detail;  // NOLINT: the layout vocabulary
  auto pool = pm::Pool::create_in_memory(8 << 20);
  auto idx = make_string_index("cdptree", pool.get(), small());
  expect_check_reports_damaged_slot_key(
      *idx, [&] { return held_slot(*pool, *pool->at<CRoot>(*pool->root_word())); });
}

// Pools of the previous string formats (3: sorted leaves rewritten by each merge; 4: slots of
// one word; 5: fingerprints of FNV-1a) are refused naming both formats, not opened or taken
// for another index.
TEST(CDPTreeStringsDamaged, PoolsOfThePreviousFormatsAreRefused) {
  using namespace detail;  // NOLINT: the layout vocabulary
  const std::pair<u64, std::string> older[] = {
      {kCStringRootMagicR2, "format 3 (sorted leaves rewritten by each merge)"},
      {kCStringRootMagicR3,
       "format 4 (leaves merged in place, slots of one word naming records of key and value)"},
      {kCStringRootMagicR4,
       "format 5 (fingerprints and bloom hashes of a byte-at-a-time FNV-1a hash)"},
      {kCStringRootMagicR5,
       "format 6 (slots of keys of 9 to 16 bytes naming their log records, kept in key pages)"}};
  for (const auto& [magic, says] : older) {
    auto pool = pm::Pool::create_in_memory(8 << 20);
    make_string_index("cdptree", pool.get(), small())->upsert("k", 1);
    pool->at<CRoot>(*pool->root_word())->base.magic = magic;
    expect_error([&] { make_index("cdptree", pool.get(), {}); }, Errc::wrong_index,
                 "--key-type string", "a string pool of an earlier format opened as integers");
    try {
      make_string_index("cdptree", pool.get(), small());
      ADD_FAILURE() << "a pool of an earlier string format opened: " << says;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::version_mismatch) << e.what();
      const std::string w = e.what();
      EXPECT_NE(w.find(says), std::string::npos) << w;
      EXPECT_NE(w.find("reads format 7"), std::string::npos) << w;
    }
  }
  // Formats 1 and 2 (magics derived from format 3's) are string pools too.
  for (std::size_t f : {1, 2}) {
    auto pool = pm::Pool::create_in_memory(8 << 20);
    make_string_index("cdptree", pool.get(), small())->upsert("k", 1);
    pool->at<CRoot>(*pool->root_word())->base.magic = string_magic_version(kCStringRootMagicR2, f);
    expect_error([&] { make_index("cdptree", pool.get(), {}); }, Errc::wrong_index,
                 "--key-type string", "a string pool of format 1 or 2 opened as integers");
  }
  // Format 7 before the shards' logs went on in key pages: the same leaves, but its build
  // would end such a log early, so the magic changed.
  auto pool = pm::Pool::create_in_memory(8 << 20);
  make_string_index("cdptree", pool.get(), small())->upsert("k", 1);
  pool->at<CRoot>(*pool->root_word())->base.magic = kCStringRootMagicR6;
  expect_error([&] { make_index("cdptree", pool.get(), {}); }, Errc::wrong_index,
               "--key-type string", "a string pool of the previous shard logs opened as integers");
  expect_error([&] { make_string_index("cdptree", pool.get(), small()); }, Errc::version_mismatch,
               "start each page afresh (CDPStrR6)", "a pool of the previous shard logs opened");
}

TEST(CDPTreeStringsDamaged, LogRecordsAndTablesAreCheckedOnOpen) {
  using namespace detail;  // NOLINT: the layout vocabulary
  // The first record of a shard's log that another record follows: damaged, it ends the log
  // as a torn one would, and the whole record after it shows the damage.
  auto record = [](pm::Pool& p, CRoot& r) -> u64* {
    const u64* t = p.at<u64>(r.log_table[r.base.gv & kVersionBit].off);
    for (std::size_t s = 0; s < r.partitions; ++s) {
      if (!t[s]) continue;
      // The log's first record: after its mark in a page it inherited.
      const std::size_t per = (std::stoul(small().at("log_page_size")) - 64) / 8;
      u64* w = p.at<u64>(t[s] + 64);
      w += inherited_start(p, t[s], w, per);
      if (string_record_length(w[string_record_words(string_record_length(*w))]) != 0) return w;
    }
    ADD_FAILURE() << "no shard's log holds two records";
    static u64 none = 0;
    return &none;
  };
  expect_open_corrupt(
      [&](pm::Pool& p, CRoot& r) {
        u64* first = record(p, r);
        *first = (*first & ~(u64{0xffff} << 1)) | (u64{2000} << 1);  // still a valid bit
      },
      "lies after the end of its log");
  expect_open_corrupt([](pm::Pool&, CRoot& r) { r.log_table[0].off += 64; }, "log header table");
  expect_open_corrupt([](pm::Pool&, CRoot& r) { r.base.gv |= u64{1} << 20; }, "gv");
}

}  // namespace
}  // namespace dptree::testing
