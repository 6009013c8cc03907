// Damage the pool fuzzer found or that open-time checks must catch (src/engine/validate.h):
// each damaged image is refused with Error(corrupt) naming the structure and its offset,
// never a crash or a hang.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>

#include "cdptree/cdptree_impl.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "engine/plog.h"
#include "format/dir_blocks.h"
#include "format/layout.h"
#include "fuzz/pool_fuzz.h"

namespace dptree::fuzz {
namespace {

using detail::Root;
using detail::u64;

// A seed pool of `index` (its workload ran, then it was closed) as a pool to damage.
std::unique_ptr<pm::Pool> seed_pool(const std::string& index) {
  Bytes b = make_seeds(target(index)).back();
  return pm::Pool::open_image(pm::Image{pm::Buffer::copy_of(std::as_bytes(std::span(b)))});
}

// `index` over `p` with the seeds' options (pool_fuzz.cc), `extra` over them: opened, or
// created in an empty pool.
std::unique_ptr<Index> open_index(pm::Pool& p, const std::string& index,
                                  const std::map<std::string, std::string>& extra = {}) {
  IndexConfig c;
  c.pool = &p;
  c.options = target(index).options;
  for (const auto& [k, v] : extra) c.options[k] = v;
  return find_index(index).create(c);
}

u64& word(pm::Pool& p, u64 off) {
  return *p.at<u64>(off);
}

// Opens a copy of `p` as `index` and expects Error(corrupt) whose message holds every `says`.
void expect_refused(const pm::Pool& p, const std::string& index,
                    std::initializer_list<std::string> says, Errc code = Errc::corrupt) {
  Bytes b(reinterpret_cast<const std::uint8_t*>(p.base()),
          reinterpret_cast<const std::uint8_t*>(p.base()) + p.size());
  try {
    run_one(target(index), b.data(), b.size());
    // run_one swallows dptree::Error: open again to see it.
    auto pool = pm::Pool::open_image(pm::Image{pm::Buffer::copy_of(std::as_bytes(std::span(b)))});
    open_index(*pool, index);
    ADD_FAILURE() << index << ": the damaged pool was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& s : says)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos)
          << "expected '" << s << "' in: " << e.what();
  }
}

Root& dptree_root(pm::Pool& p) {
  return *p.at<Root>(*p.root_word());
}

// The first leaf of the current version of the seed's tree (8-slot leaves, pool_fuzz.cc).
struct FirstLeaf {
  Root& root;
  int cv;
  detail::LeafLayout L;
  detail::Leaf leaf;
  explicit FirstLeaf(pm::Pool& p)
      : root(dptree_root(p)), cv(static_cast<int>(root.gv & 1)), leaf{nullptr, &L} {
    L.init(8, 8, 8);
    leaf.p = p.at(root.head[cv].off);
  }
};

TEST(DamagedPool, RootWordNotAnOwnedBlock) {
  for (const char* index : {"dptree", "cdptree"}) {
    auto p = seed_pool(index);
    *p->root_word() += 3;  // unaligned, inside the root block
    expect_refused(*p, index, {"root", "live block"});
  }
}

TEST(DamagedPool, LeafNextOutsideThePool) {
  for (const char* index : {"dptree", "cdptree"}) {
    auto p = seed_pool(index);
    FirstLeaf f(*p);
    f.leaf.next(f.cv) = detail::LeafPtr(p->size() + 4096);
    expect_refused(*p, index,
                   {"leaf list of version", std::to_string(p->offset_of(&f.leaf.next(f.cv))),
                    "not a leaf the directory owns"});
  }
}

TEST(DamagedPool, LeafListCycle) {
  auto p = seed_pool("dptree");
  FirstLeaf f(*p);
  ASSERT_TRUE(f.leaf.next(f.cv)) << "the seed needs two leaves";
  detail::Leaf second{p->at(f.leaf.next(f.cv).off), &f.L};
  second.next(f.cv) = f.root.head[f.cv];
  expect_refused(*p, "dptree", {"has a cycle", std::to_string(f.root.head[f.cv].off)});
}

TEST(DamagedPool, LogChainIntoALeaf) {
  auto p = seed_pool("dptree");
  Root& r = dptree_root(*p);
  int cv = static_cast<int>(r.gv & 1);
  r.log_head[cv] = detail::LogPagePtr(r.head[cv].off);
  expect_refused(*p, "dptree", {"log: the word", "not a log page the directory owns"});
}

TEST(DamagedPool, BaseCountAboveTheLeaves) {
  auto p = seed_pool("dptree");
  Root& r = dptree_root(*p);
  r.base_count[r.gv & 1] = u64{1} << 60;  // once sized the bloom filter: bad_alloc
  expect_refused(*p, "dptree", {"base count"});
}

TEST(DamagedPool, RestartCountOfALeafAheadOfTheRoot) {
  auto p = seed_pool("dptree");
  FirstLeaf f(*p);
  f.leaf.rc(f.cv) = f.root.restart_count + 1;  // its count and order would be trusted
  expect_refused(*p, "dptree", {"restart count ahead"});
}

TEST(DamagedPool, UnknownGvBitsAndImpossibleFormat) {
  auto p = seed_pool("dptree");
  dptree_root(*p).gv |= 16;
  expect_refused(*p, "dptree", {"gv word"});
  p = seed_pool("dptree");
  dptree_root(*p).leaf_capacity = 1;
  expect_refused(*p, "dptree", {"stores a setting out of range"}, Errc::stored_setting);
  // An entry width whose bits wrap to 0 divided by zero laying out log records (libFuzzer).
  p = seed_pool("dptree");
  dptree_root(*p).value_bytes = (u64{1} << 61) - 8;
  expect_refused(*p, "dptree", {"stores a setting out of range"}, Errc::stored_setting);
}

TEST(DamagedPool, CdptreeLogTableTailIntoTheDirectory) {
  auto p = seed_pool("cdptree");
  auto* r = p->at<cdp::CRoot>(*p->root_word());
  ASSERT_TRUE(r->log_table[0]);
  word(*p, r->log_table[0].off) = r->base.dir.off;
  expect_refused(*p, "cdptree", {"not a log page the directory owns"});
  p = seed_pool("cdptree");
  r = p->at<cdp::CRoot>(*p->root_word());
  r->log_table[1] = r->log_table[0];
  expect_refused(*p, "cdptree", {"log header table", "not a live block owned by the word"});
}

TEST(DamagedPool, DirectorySlotOwningAStranger) {
  auto p = seed_pool("dptree");
  Root& r = dptree_root(*p);
  word(*p, r.dir.off + 8 * 5) = *p->root_word();  // the root block, owned by the root word
  expect_refused(*p, "dptree", {"owner directory slot", std::to_string(r.dir.off + 40)});
}

// Expects `fn` to throw Error(corrupt) whose message holds every one of `says`.
void expect_corrupt(const std::function<void()>& fn, std::initializer_list<std::string> says) {
  try {
    fn();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::corrupt) << e.what();
    for (const auto& s : says)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos)
          << "expected '" << s << "' in: " << e.what();
  }
}

// A cdptree pool whose owner directory spans several blocks, opened with two recovery threads,
// so that open checks the directory's slots in two chunks at once (engine/validate.cc): damage in
// the second chunk is found, and with damage in the first chunk too the refusal names the
// first, as a check in one thread does. Then the undamaged pool opens with every key.
TEST(DamagedPool, DirectorySlotsCheckedOnTwoThreadsNameTheFirstDamage) {
  auto made = pm::Pool::create_in_memory(32 << 20);
  constexpr u64 kKeys = 12000;
  const std::map<std::string, std::string> opt = {{"leaf_capacity", "8"},
                                                  {"recovery_threads", "2"}};
  {
    IndexConfig c;
    c.pool = made.get();
    c.options = opt;
    auto t = find_index("cdptree").create(c);
    for (u64 k = 1; k <= kKeys; ++k) t->upsert(k * 7, k);
    t->drain();
  }
  auto copy = [&] {
    return pm::Pool::open_image(pm::Image{pm::Buffer::copy_of(
        std::span(reinterpret_cast<const std::byte*>(made->base()), made->size()))});
  };
  auto open = [&](pm::Pool& p) {
    IndexConfig c;
    c.pool = &p;
    c.options = opt;
    return find_index("cdptree").create(c);
  };
  const auto blocks = detail::dir_blocks(*made, dptree_root(*made).dir);
  ASSERT_GE(blocks.size(), 3U) << "the directory must span chunks";
  const u64 first = detail::dir_slot(blocks.front(), 5).off;
  const u64 last = detail::dir_slot(blocks.back(), 5).off;
  {
    auto p = copy();
    word(*p, last) = *p->root_word();  // the root block, owned by the root word
    expect_corrupt([&] { open(*p); }, {"owner directory slot at offset " + std::to_string(last)});
  }
  {
    auto p = copy();
    word(*p, last) = *p->root_word();
    word(*p, first) = *p->root_word();
    expect_corrupt([&] { open(*p); }, {"owner directory slot at offset " + std::to_string(first)});
  }
  auto p = copy();
  auto t = open(*p);
  for (u64 k = 1; k <= kKeys; ++k) ASSERT_EQ(t->lookup(k * 7), k) << k;
  EXPECT_TRUE(t->check().ok) << t->check().problems.front();
}

// A damaged next word of an owner directory block: outside the pool or misaligned, the
// checked walk that open and recovery use refuses it naming the word's offset; inside the
// pool but not a directory block, open refuses it as a block the word does not own.
TEST(DamagedPool, DirectoryBlockNextLink) {
  for (const char* index : {"dptree", "cdptree"}) {
    auto p = seed_pool(index);
    Root& r = dptree_root(*p);
    detail::DirBlock* d = p->get(r.dir);
    ASSERT_NE(d, nullptr);
    ASSERT_FALSE(d->next) << index << ": the seed has one directory block";
    const std::string at = std::to_string(p->offset_of(&d->next));
    for (u64 bad : {u64{p->size() + 4096}, r.dir.off + 4}) {
      d->next = detail::DirBlockPtr(bad);
      expect_refused(*p, index,
                     {"owner directory block link at offset " + at, std::to_string(bad)});
      expect_corrupt([&] { detail::dir_blocks(*p, r.dir); },
                     {"owner directory block link at offset " + at});
    }
    d->next = r.dir;  // a cycle
    expect_refused(*p, index, {"owner directory", std::to_string(r.dir.off)});
    expect_corrupt([&] { detail::dir_blocks(*p, r.dir); }, {"owner directory", "a cycle"});
    d->next = detail::DirBlockPtr(*p->root_word());
    expect_refused(*p, index,
                   {"owner directory block at offset " + std::to_string(*p->root_word()),
                    "not a live block owned by the word at offset " + at});
  }
}

// The seed pool of `index` with a pendingLeaves block as a merge leaves it, whose one entry
// is the directory slot of the first leaf of the current version.
detail::PendingBlock* add_pending_block(pm::Pool& p) {
  Root& r = dptree_root(p);
  auto& a = p.allocator();
  const u64 b = a.reserve(detail::kPendingBlockBytes);
  std::memset(p.at(b), 0, detail::kPendingBlockBytes);
  a.activate(r.pending.word(), b);
  auto* blk = p.get(r.pending);
  blk->slot[0] = p.get(r.head[r.gv & 1])->owner_slot;
  return blk;
}

// pendingLeaves: a well-formed block opens (recovery runs the garbage collection it implies
// and removes the list); a damaged next word or an entry that is no directory slot is
// refused, naming the word's offset.
TEST(DamagedPool, PendingLeavesLinksAndEntries) {
  for (const char* index : {"dptree", "cdptree"}) {
    auto p = seed_pool(index);
    add_pending_block(*p);
    {
      auto idx = open_index(*p, index);
      EXPECT_TRUE(idx->check().ok) << index;
      EXPECT_FALSE(dptree_root(*p).pending) << index << ": recovery left pendingLeaves";
    }
    p = seed_pool(index);
    detail::PendingBlock* blk = add_pending_block(*p);
    const Root& r = dptree_root(*p);
    const std::string next_at = std::to_string(p->offset_of(&blk->next));
    blk->next = detail::PendingBlockPtr(p->size() - 8);
    expect_refused(*p, index, {"pendingLeaves block link at offset " + next_at});
    expect_corrupt([&] { detail::pending_entries(*p, r.pending); },
                   {"pendingLeaves block link at offset " + next_at});
    blk->next = r.pending;  // a cycle
    expect_refused(*p, index,
                   {"pendingLeaves block at offset " + std::to_string(r.pending.off),
                    "not a live block owned by the word at offset " + next_at});
    expect_corrupt([&] { detail::pending_blocks(*p, r.pending); }, {"pendingLeaves", "a cycle"});
    blk->next = detail::PendingBlockPtr();
    const std::string entry_at = std::to_string(p->offset_of(&blk->slot[1]));
    blk->slot[1] = detail::OwnerSlotPtr(*p->root_word());  // inside the pool, no slot
    expect_refused(*p, index,
                   {"pendingLeaves entry at offset " + entry_at, "not an owner directory slot"});
    blk->slot[1] = detail::OwnerSlotPtr(p->size());  // outside the pool
    expect_corrupt([&] { detail::pending_entries(*p, r.pending); },
                   {"a pendingLeaves entry at offset " + entry_at});
  }
}

// Whether idx.check() fails with a problem that holds every one of `parts`.
bool check_names(const Index& idx, std::initializer_list<std::string> parts) {
  CheckReport rep = idx.check();
  for (const auto& s : rep.problems) {
    bool all = true;
    for (const auto& part : parts) all = all && s.find(part) != std::string::npos;
    if (all) return !rep.ok;
  }
  return false;
}

// check() of an open tree walks the directory checked too: a next link damaged after open is
// reported, naming its offset, not followed.
TEST(DamagedPool, CheckReportsADamagedDirectoryLink) {
  for (const char* index : {"dptree", "cdptree"}) {
    auto p = seed_pool(index);
    auto idx = open_index(*p, index);
    ASSERT_TRUE(idx->check().ok) << index;
    detail::DirBlock* d = p->get(dptree_root(*p).dir);
    d->next = detail::DirBlockPtr(p->size() + 64);
    EXPECT_TRUE(check_names(
        *idx, {"owner directory block link at offset " + std::to_string(p->offset_of(&d->next))}))
        << index;
    d->next = detail::DirBlockPtr();
  }
}

// check() reads a leaf's owner_slot word checked: one damaged after open to point outside the
// pool is reported, not followed.
TEST(DamagedPool, CheckReportsADamagedOwnerSlotWord) {
  for (const char* index : {"dptree", "cdptree"}) {
    auto p = seed_pool(index);
    auto idx = open_index(*p, index);
    FirstLeaf f(*p);
    const detail::OwnerSlotPtr kept = f.leaf.owner_slot();
    f.leaf.owner_slot() = detail::OwnerSlotPtr(p->size() + 64);
    EXPECT_TRUE(check_names(*idx, {"leaf 0", "its owner slot does not point to it"})) << index;
    f.leaf.owner_slot() = kept;
  }
}

// The log pages of the live logs of `index` in a seed pool (both versions).
std::set<u64> live_log_pages(pm::Pool& p, const std::string& index) {
  std::set<u64> in_log;
  if (index == "dptree") {
    Root& r = dptree_root(p);
    for (int v = 0; v < 2; ++v)
      for (u64 pg = r.log_head[v].off; pg; pg = p.at<u64>(pg)[2]) in_log.insert(pg);
    return in_log;
  }
  auto* r = p.at<cdp::CRoot>(*p.root_word());
  for (int v = 0; v < 2; ++v)
    for (u64 part = 0; part < r->partitions; ++part)
      for (u64 pg = p.at<u64>(r->log_table[v].off)[part]; pg; pg = p.at<u64>(pg)[2])
        in_log.insert(pg);
  return in_log;
}

// A closed pool of `index` whose log page cache holds pages: a merge released logs of
// several full pages (the cdptree seed merges before a page fills, and a release returns
// pages not wholly written to the allocator).
std::unique_ptr<pm::Pool> pool_with_free_log_pages(const std::string& index) {
  if (index == "dptree") return seed_pool(index);
  auto p = pm::Pool::create_in_memory(4u << 20);
  // Full pages: a release caches only those.
  auto idx = open_index(*p, index, {{"min_merge_records", "1000"}});
  for (Key k = 0; k < 400; ++k) idx->upsert(k * 7, k);
  idx->drain();
  return p;
}

// check() (not open) catches a cached free log page holding a valid record of the log that
// will take it: the state a log release that cleared the log head before the page's flavour
// word was durable would leave, whose stale records replay once the page is reused. Both
// trees; a whole record, and a single word of one.
TEST(DamagedPool, CheckFindsAValidRecordOnAFreeLogPage) {
  for (const std::string index : {"dptree", "cdptree"})
    for (bool whole : {true, false}) {
      auto p = pool_with_free_log_pages(index);
      const std::set<u64> in_log = live_log_pages(*p, index);
      u64 free_page = 0;
      for (detail::DirBlockPtr b : detail::dir_blocks(*p, dptree_root(*p).dir))
        for (const detail::OwnerSlot& s : p->get(b)->slot) {
          const u64 blk = s.off;
          if (!free_page && blk && p->at<u64>(blk)[1] == detail::kPageType &&
              !in_log.contains(blk) && p->at<u64>(blk)[3] <= 1)
            free_page = blk;
        }
      ASSERT_NE(free_page, 0u) << index << ": the seed needs a cached free log page";
      const int fl = static_cast<int>(p->at<u64>(free_page)[3]);
      detail::RecordCodec codec;
      codec.init(8, 8, 1024);
      u64* rec = p->at<u64>(free_page + codec.G.offset(2));
      if (whole)
        codec.encode(17, 4242, detail::log_valid_bit(fl), rec);
      else
        rec[0] = (rec[0] & ~u64{1}) | detail::log_valid_bit(fl);
      auto idx = open_index(*p, index);
      EXPECT_TRUE(check_names(
          *idx, {"free log page at " + std::to_string(free_page), "record 2 holds a word valid"}))
          << index << (whole ? ", whole record" : ", one word")
          << ": check() did not name the free page's stale record";
    }
}

// check() of a running tree catches a word of the current log version in a record slot no
// append has written yet (DPTree: at the end of the log; cdptree: an unclaimed slot of a
// partition's tail page): a later torn append there could complete it into a record.
TEST(DamagedPool, CheckFindsAWordOfTheLiveLogPastItsRecords) {
  for (const std::string index : {"dptree", "cdptree"}) {
    auto p = pm::Pool::create_in_memory(4u << 20);
    // No merge: the writes stay in the log.
    auto idx = open_index(*p, index, {{"min_merge_records", "1000"}});
    for (Key k = 1; k <= 5; ++k) idx->upsert(k, k);
    ASSERT_TRUE(idx->check().ok) << index;
    detail::RecordCodec codec;
    codec.init(8, 8, 1024);
    const int v = static_cast<int>(dptree_root(*p).gv & 1);
    u64 page = dptree_root(*p).log_head[v].off;
    if (index == "cdptree") {
      auto* r = p->at<cdp::CRoot>(*p->root_word());
      page = p->at<u64>(r->log_table[v].off)[0];  // partition 0's tail page
    }
    ASSERT_NE(page, 0u) << index;
    // The last slot of the page: no append has reached it (5 records in all).
    const std::size_t last = codec.G.per_page - 1;
    u64* rec = p->at<u64>(page + codec.G.offset(last));
    rec[1] = (rec[1] & ~u64{1}) | detail::log_valid_bit(v);
    EXPECT_TRUE(
        check_names(*idx, {"log page at " + std::to_string(page), "record " + std::to_string(last),
                           "holds a word of the current version"}))
        << index << ": check() did not name the stray word";
  }
}

// A running cdptree whose key 1 was written 40 times (no merge): its partition's log holds
// two pages, 30 records each at most; `earlier` is the full one, which the log's release
// would cache for the next flavor.
struct TwoPageLog {
  std::unique_ptr<pm::Pool> pool = pm::Pool::create_in_memory(4u << 20);
  std::unique_ptr<Index> idx;
  detail::RecordCodec codec;
  int v = 0;
  u64 earlier = 0;
  TwoPageLog() {
    idx = open_index(*pool, "cdptree", {{"min_merge_records", "1000"}});
    for (Value x = 1; x <= 40; ++x) idx->upsert(1, x);
    codec.init(8, 8, 1024);
    auto* r = pool->at<cdp::CRoot>(*pool->root_word());
    v = static_cast<int>(r->base.gv & 1);
    for (u64 part = 0; part < r->partitions; ++part)
      if (u64 tail = pool->at<u64>(r->log_table[v].off)[part]) earlier = pool->at<u64>(tail)[2];
  }
  u64* record(std::size_t r) { return pool->at<u64>(earlier + codec.G.offset(r)); }
};

// A slot of a full page that does not hold a whole record would turn valid in the freelist
// of the next flavor (its old words carry that log's bit). The replay of the log still gives
// the buffer (key 1's last value is on the tail page), so only the page check sees it.
TEST(DamagedPool, CdptreeTornRecordOnALogPageTheReleaseKeeps) {
  TwoPageLog t;
  ASSERT_EQ(t.codec.G.per_page, 30u);
  ASSERT_NE(t.earlier, 0u) << "the partition's log needs two pages";
  ASSERT_TRUE(t.idx->check().ok);
  u64* rec = t.record(5);
  rec[1] = (rec[1] & ~u64{1}) | detail::log_valid_bit(1 - t.v);  // one word not written
  EXPECT_TRUE(check_names(
      *t.idx, {"log page at " + std::to_string(t.earlier), "record 5 is not a whole record"}));
  EXPECT_EQ(t.idx->check().problems.size(), 1u);
}

// A page link of a running cdptree's log that leaves the pool: check() lists it as a problem
// of that partition (it does not throw), and goes on with the rest of the tree.
TEST(DamagedPool, CdptreeCheckListsABadLogPageLink) {
  TwoPageLog t;
  ASSERT_NE(t.earlier, 0u) << "the partition's log needs two pages";
  ASSERT_TRUE(t.idx->check().ok);
  auto* r = t.pool->at<cdp::CRoot>(*t.pool->root_word());
  u64 tail = 0;  // the tail page of the partition with two pages
  for (u64 part = 0; part < r->partitions; ++part)
    if (u64 pg = t.pool->at<u64>(r->log_table[t.v].off)[part]; pg && t.pool->at<u64>(pg)[2])
      tail = pg;
  ASSERT_NE(tail, 0u);
  t.pool->at<u64>(tail)[2] = t.pool->size() + 4096;  // the link to the earlier page
  CheckReport rep;
  ASSERT_NO_THROW(rep = t.idx->check());
  EXPECT_FALSE(rep.ok);
  EXPECT_TRUE(check_names(*t.idx, {"log partition", "a log partition's page link"}));
}

// A stale record of the current version in a log slot (what a freelist that broke its
// invariant would hand over): check() of the running tree finds that the log no longer
// replays to the buffer; recovery cannot tell it from a write (records carry no version) and
// replays it, after which nothing shows it. docs/cdptree.md, "Stale records", says why the
// freelists never hand one over.
TEST(DamagedPool, CdptreeStaleRecordInALogHole) {
  TwoPageLog t;
  ASSERT_NE(t.earlier, 0u);
  // A key of key 1's partition (cdptree/plog.cc partition_of, 2 partitions).
  auto part = [](u64 k) { return detail::hash_key(k ^ 0x9e3779b97f4a7c15ull) % 2; };
  Key k = 2;
  while (part(k) != part(1)) ++k;
  t.codec.encode(k, 777, detail::log_valid_bit(t.v), t.record(5));
  EXPECT_TRUE(check_names(*t.idx, {"replaying the log does not give the Front buffer"}));
  EXPECT_FALSE(t.idx->lookup(k).has_value());
  auto copy = pm::Pool::open_image(
      pm::Image{pm::Buffer::copy_of(std::span<const std::byte>(t.pool->base(), t.pool->size()))});
  auto reopened = open_index(*copy, "cdptree");
  EXPECT_EQ(reopened->lookup(k), std::optional<Value>(777));
  EXPECT_EQ(reopened->lookup(1), std::optional<Value>(40));
  EXPECT_TRUE(reopened->check().ok);
}

// libFuzzer inputs that failed (fuzz_target.cc's format: a seed byte, then 12-byte patches),
// replayed through the same harness; each must now be accepted or refused, and return.
Bytes from_hex(const std::string& hex) {
  Bytes b;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    b.push_back(static_cast<std::uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return b;
}

// A hang: a scan of a base whose keys lie outside their leaves' ranges went round forever
// (each round restarted below where it began).
TEST(FuzzerRegression, CdptreeScanOverKeysOutsideTheirLeaves) {
  const Bytes input = from_hex(
      "02c88a00ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
      "ffffffffffffffffff008a900400000000002a8900000702e2afc996ad3f37870000c0980f40000000002f"
      "8a0000ffffffffffffffffee860000c4669f0d660672ab70870000125b726f504008558d64000000000000"
      "00000000f48600000600000000000000228500008071010000000000888500001a00000000000000488800"
      "001d0000000000000048890000f0ff0f0000000000");
  ASSERT_EQ(input.size(), 193u);
  const auto seeds = make_seeds(target("cdptree"), kRegressionSeedBytes);
  Bytes img = apply_patches(seeds, input.data(), input.size());
  run_one(target("cdptree"), img.data(), img.size());  // returns: accepted or refused
}

}  // namespace
}  // namespace dptree::fuzz
