// The merge of DPTree's string forms (string_base.h, §2.3 Algorithm 2 with string leaves): the
// buffer's entries in key order meet the leaves of the current version cv. A leaf whose key
// range receives none is kept as it is. One that receives some is merged in place when its
// entries of both versions fit its slots: each new or updated key's slot (its prefix and value,
// and its bytes 8..15 for a key of 9..16 bytes, else its length and, for a key longer than 16
// bytes, its latest log record's offset) and fingerprint go
// to a slot that version cv does not hold, then the metadata of version nv (bitmap, count,
// order array) is written whole from version cv's and the merged entries; version cv reads none
// of it. The merge compares the slots' prefixes and reads a key's record only on a tie. A leaf
// that would overflow is split: rewritten with its new entries into new leaves of FR x capacity
// entries; one left below CT is rewritten together with the next (consolidation). New leaves
// are recorded in pendingLeaves before their activation (§2.4). The list of version nv is
// linked through the next words of version nv, and the version flip publishes it all: a crash
// before the flip leaves version cv untouched and recovery frees the new leaves; after it,
// recovery finishes the garbage collection of the replaced leaves. The bytes of a key longer than
// 16 are never copied: they stay in their log records, whose pages become key pages
// (key_pages.h) when the merge's log is released.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <functional>
#include <span>
#include <unordered_set>

#include "dptree/error.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"
#include "engine/merge.h"
#include "engine/phase.h"
#include "engine/string_base.h"

namespace dptree::detail {

namespace {
using Span = BufferedSpan;

std::atomic<std::size_t> g_part_limit{0};  // set_dptree_string_merge_part
thread_local bool g_in_part = false;       // dptree_string_merge_in_part
thread_local const char* g_step = "";      // string_merge_step

// Sets this thread's string_merge_step for a scope.
class StepScope {
 public:
  explicit StepScope(const char* step) : saved_(g_step) { g_step = step; }
  ~StepScope() { g_step = saved_; }
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;

 private:
  const char* saved_;
};

// An entry a split writes to a new leaf: its slot and fingerprint.
struct Merged {
  StringEntry e;
  std::uint16_t fp;
};
using MergedEntries = std::vector<Merged>;

// One leaf's entries of version nv in key order: the slot each comes from (kNewSlot: a new or
// updated key, whose slot is in `fresh`, in order) and its fingerprint. A kept entry is its
// slot number alone: an in-place merge neither reads nor moves its slot.
constexpr std::uint16_t kNewSlot = 0xffff;  // above any slot (capacity <= 4096)
struct LeafMerge {
  std::vector<std::uint16_t> slot, fp;
  std::vector<StringEntry> fresh;
  void clear() {
    slot.clear();
    fp.clear();
    fresh.clear();
  }
  std::size_t size() const { return slot.size(); }
  bool empty() const { return slot.empty(); }
};

// The record a slot of key k names: none for a key its slot holds whole (up to 16 bytes).
u64 named_record(std::string_view k, const StringSlot& s) {
  return k.size() > kStringSlotKey ? s.rec : 0;
}

// k's slot (format/string_leaf.h): a key of 9..16 bytes whole and tagged, any other its length
// and record.
[[gnu::always_inline]] inline StringEntry entry_of(std::string_view k, const StringSlot& s) {
  if (string_key_in_slot(k.size()))
    return {key_prefix(k), key_prefix_at(k, kStringInlineKey), s.value | kSlotKeyTag};
  return {key_prefix(k), StringEntry::make_meta(k.size(), named_record(k, s)), s.value};
}

std::uint16_t fingerprint_of(std::string_view k) {
  return string_fingerprint(hash_string(k), k.size());
}

// The first entry of `es` above k.
std::size_t above(Span es, std::string_view k) {
  return static_cast<std::size_t>(std::upper_bound(es.begin(), es.end(), k,
                                                   [](std::string_view a, const auto& b) {
                                                     return StringKeyLess{}(a, b.first);
                                                   }) -
                                  es.begin());
}

// Leaf lf's entries in metadata copy c with the sorted entries `es` of its key range applied,
// appended to `merged`; the records of keys added or updated go to r.named, those of the
// entries removed or replaced to r.unnamed (keys longer than 16 bytes only). The keys are
// compared by their slots' prefixes (the slots requested by prefetch_for_merge), a record
// read only on a tie.
void merge_leaf(StringLeaf lf, int c, Span es, LeafMerge& m, StringMergeResult& r) {
  const std::size_t n = lf.count(c);
  const std::uint16_t* o = lf.order(c);
  const std::uint16_t* fps = lf.fps(c);
  const StringEntry* slots = lf.slots();
  m.slot.reserve(n + es.size());
  m.fp.reserve(n + es.size());
  std::size_t i = 0, b = 0;
  u64 bp = b < es.size() ? key_prefix(es[b].first) : 0;
  while (i < n || b < es.size()) {
    int d = i >= n ? 1 : b >= es.size() ? -1 : 0;  // < 0: the leaf's key first, 0: the same
    if (d == 0) d = lf.compare(slots[o[i]], fps[o[i]], es[b].first, bp);
    if (d < 0) {
      m.slot.push_back(o[i]);
      m.fp.push_back(fps[o[i]]);
      ++i;
      continue;
    }
    const StringSlot& s = es[b].second;
    if (d == 0) {  // replaced or removed
      if (const u64 rec = slots[o[i]].rec()) r.unnamed.push_back(rec);
      ++i;
    }
    if (!(s.value & kTombstone)) {
      m.slot.push_back(kNewSlot);
      m.fp.push_back(fingerprint_of(es[b].first));
      m.fresh.push_back(entry_of(es[b].first, s));
      if (const u64 rec = named_record(es[b].first, s)) r.named.push_back(rec);
    }
    if (++b < es.size()) bp = key_prefix(es[b].first);
  }
}

// m's entries appended to `out` whole (a split rewrites them), read from leaf lf's slots.
void append_whole(StringLeaf lf, const LeafMerge& m, MergedEntries& out) {
  std::size_t f = 0;
  for (std::size_t i = 0; i < m.size(); ++i)
    out.push_back({m.slot[i] == kNewSlot ? m.fresh[f++] : lf.slots()[m.slot[i]], m.fp[i]});
}

// Requests the lines a merge of leaf lf reads (metadata copy c, slots [0, hw)) in address
// order: the order array visits the slots at random, a dependent miss each when read as it
// goes, while a run of lines requested at once streams (§2.3's merge is bound by them).
void prefetch_for_merge(StringLeaf lf, int c, std::size_t hw) {
  const auto* meta = reinterpret_cast<const char*>(lf.bitmap(c));
  const std::size_t meta_bytes = 8 * lf.L->bm_words + 8 + 4 * lf.L->cap;
  for (std::size_t b = 0; b < meta_bytes; b += 64) __builtin_prefetch(meta + b);
  const auto* sl = reinterpret_cast<const char*>(lf.slots());
  for (std::size_t b = 0; b < hw * sizeof(StringEntry); b += 64) __builtin_prefetch(sl + b);
}

// Writes back the lines of the elements idx (ascending) of an array of `bytes`-long elements
// at `first`, each line once (no fence).
void flush_elements(const std::byte* first, std::size_t bytes, std::span<const std::uint16_t> idx) {
  std::uintptr_t done = 0;  // one past the last line written back
  for (std::uint16_t i : idx) {
    auto from = reinterpret_cast<std::uintptr_t>(first + i * bytes) & ~std::uintptr_t{63};
    const auto end = reinterpret_cast<std::uintptr_t>(first + (i + 1) * bytes);
    from = std::max(from, done);
    if (from < end) pm::flush(reinterpret_cast<const void*>(from), end - from);
    done = std::max(done, (end + 63) & ~std::uintptr_t{63});
  }
}

// Metadata copy c of a leaf whose entries in key order sit in slots `ord` (below hw) with
// fingerprints `fps`: bitmap, count and the fingerprints of slots [0, hw) (0 for a slot not live)
// stored at once, then the order array; both written back (no fence).
// Copy c's bitmap, count and fingerprints from `head` (the first `bytes` of that block) and its
// order array from `ord`: stored, then written back (no fence).
void store_meta_block(StringLeaf lf, int c, const u64* head, std::size_t bytes,
                      std::span<const std::uint16_t> ord) {
  pm::store_bytes(lf.bitmap(c), head, bytes);
  pm::store_bytes(lf.order(c), ord.data(), 2 * ord.size());
  // Two ranges of one line-aligned block: the line they may share is written back once.
  const auto* meta = reinterpret_cast<const std::byte*>(lf.bitmap(c));
  const auto* order = reinterpret_cast<const std::byte*>(lf.order(c));
  pm::flush(meta, bytes);
  const std::byte* from = std::max(order, meta + (bytes + 63) / 64 * 64);
  if (from < order + 2 * ord.size())
    pm::flush(from, static_cast<std::size_t>(order + 2 * ord.size() - from));
}

void store_meta(StringLeaf lf, int c, std::span<const std::uint16_t> ord,
                std::span<const std::uint16_t> fps, std::size_t hw) {
  const StringLeafLayout& L = *lf.L;
  std::vector<u64> head(L.bm_words + 1 + (2 * hw + 7) / 8, 0);
  auto* fp = reinterpret_cast<std::uint16_t*>(head.data() + L.bm_words + 1);
  for (std::size_t i = 0; i < ord.size(); ++i) {
    head[ord[i] / 64] |= u64{1} << (ord[i] % 64);
    fp[ord[i]] = fps[i];
  }
  head[L.bm_words] = ord.size();
  store_meta_block(lf, c, head.data(), 8 * L.bm_words + 8 + 2 * hw, ord);
}

// Points version nv of a leaf at metadata copy c (a word of the header line, written back).
void select_copy(StringLeaf lf, int nv, int c) {
  if (lf.h().copy[nv] == static_cast<u64>(c)) return;
  pm::store(&lf.h().copy[nv], static_cast<u64>(c));
  pm::flush(&lf.h().copy[nv], 8);
}

// Algorithm 2 lines 6-8 for a string leaf that fits `es` (version nv's entries in key order),
// version cv reading its metadata copy ccv: each new entry's slot goes to the lowest slot
// that copy does not hold, then the other copy is written whole (store_meta) and version nv
// pointed at it; every line written is written back, unfenced: commit_merge's fence orders
// them before the flip. What version cv reads (its copy, its slots, its copy[] word) is not
// written, so its readers (the concurrent tree's) and a crash before the flip see it whole.
void merge_in_place(StringLeaf lf, int nv, int ccv, const LeafMerge& m) {
  std::vector<std::uint16_t> ord(m.size()), written;
  written.reserve(m.fresh.size());
  std::size_t hw = 0;
  {
    const StepScope st("slots");
    pm::CategoryScope cat(pm::Category::node);
    const u64* held = lf.bitmap(ccv);
    std::size_t w = 0, f = 0;
    u64 free = ~held[0];  // the free slots of bitmap word w not taken yet
    for (std::size_t i = 0; i < m.size(); ++i) {
      std::size_t s = m.slot[i];
      if (s == kNewSlot) {  // the lowest free slot (the caller checked there are enough)
        while (free == 0) free = ~held[++w];
        s = 64 * w + static_cast<std::size_t>(std::countr_zero(free));
        free &= free - 1;
        pm::store(&lf.slots()[s], m.fresh[f++]);
        written.push_back(static_cast<std::uint16_t>(s));
      }
      ord[i] = static_cast<std::uint16_t>(s);
      hw = std::max(hw, s + 1);
    }
    flush_elements(reinterpret_cast<const std::byte*>(lf.slots()), sizeof(StringEntry), written);
  }
  const StepScope st("meta");
  pm::CategoryScope cat(pm::Category::node);
  store_meta(lf, 1 - ccv, ord, m.fp, hw);
  select_copy(lf, nv, 1 - ccv);
}

// The sorted entries `es` merged straight into leaf lf (§2.3, Algorithm 2 lines 6-8, as
// merge_in_place), version cv reading copy ccv whose highest live slot is below hw; the caller
// checked that every new entry finds a slot version cv does not hold. Most kept entries cost
// one prefix compare: runs of them are copied whole into the next order array, and the next
// copy's bitmap and fingerprints start as a copy of copy ccv's (a removed slot's bit cleared,
// a new slot's set). Returns the entries of version nv; 0: none, nothing written.
// The buffers merge_direct builds a leaf's next metadata copy in, kept across the leaves of
// one merge (not thread_local: a crash test's capture may run a recovery, and its merge, in the
// middle of a merge on the same thread).
struct DirectScratch {
  std::vector<u64> head;
  std::vector<std::uint16_t> ord, written;
};

std::size_t merge_direct(StringLeaf lf, int nv, int ccv, std::size_t hw, Span es,
                         StringMergeResult& r, DirectScratch& sc) {
  const StringLeafLayout& L = *lf.L;
  std::vector<u64>& head = sc.head;
  std::vector<std::uint16_t>&ord = sc.ord, &written = sc.written;
  head.assign(L.bm_words + 1 + (2 * L.cap + 7) / 8, 0);
  ord.resize(L.cap);
  written.clear();
  auto* fp = reinterpret_cast<std::uint16_t*>(head.data() + L.bm_words + 1);
  const u64* held = lf.bitmap(ccv);
  const std::uint16_t* held_fp = lf.fps(ccv);
  std::memcpy(head.data(), held, 8 * L.bm_words);
  std::memcpy(fp, held_fp, 2 * hw);
  const std::size_t n = lf.count(ccv);
  const std::uint16_t* o = lf.order(ccv);
  StringEntry* slots = lf.slots();
  std::size_t i = 0, k = 0, w = 0, top = hw;
  u64 free = ~held[0];  // the free slots of bitmap word w not taken yet
  {
    const StepScope st("slots");
    pm::CategoryScope cat(pm::Category::node);
    for (const auto& [key, s] : es) {
      const u64 kp = key_prefix(key);
      std::size_t j = i;
      while (j < n && slots[o[j]].prefix < kp) ++j;
      std::memcpy(&ord[k], o + i, 2 * (j - i));
      k += j - i;
      i = j;
      int d = 1;
      while (i < n && (d = lf.compare(slots[o[i]], held_fp[o[i]], key, kp)) < 0) ord[k++] = o[i++];
      if (i < n && d == 0) {  // replaced or removed: version nv no longer holds its slot
        head[o[i] / 64] &= ~(u64{1} << (o[i] % 64));
        if (const u64 rec = slots[o[i]].rec()) r.unnamed.push_back(rec);
        ++i;
      }
      if (s.value & kTombstone) continue;
      while (free == 0) free = ~held[++w];
      const std::size_t at = 64 * w + static_cast<std::size_t>(std::countr_zero(free));
      free &= free - 1;
      pm::store(&slots[at], entry_of(key, s));
      written.push_back(static_cast<std::uint16_t>(at));
      head[at / 64] |= u64{1} << (at % 64);
      fp[at] = fingerprint_of(key);
      ord[k++] = static_cast<std::uint16_t>(at);
      top = std::max(top, at + 1);
      if (const u64 rec = named_record(key, s)) r.named.push_back(rec);
    }
    std::memcpy(&ord[k], o + i, 2 * (n - i));
    k += n - i;
    flush_elements(reinterpret_cast<const std::byte*>(slots), sizeof(StringEntry), written);
  }
  if (k == 0) return 0;  // emptied: no slot written, the leaf leaves the list
  head[L.bm_words] = k;
  const StepScope st("meta");
  pm::CategoryScope cat(pm::Category::node);
  store_meta_block(lf, 1 - ccv, head.data(), 8 * L.bm_words + 8 + 2 * top, {ord.data(), k});
  select_copy(lf, nv, 1 - ccv);
  return k;
}

// Entries es[from, to) in a new leaf, in slots 0.. and metadata copy 0, which both versions
// name (version cv never reads the leaf: it is not on its list): written, then recorded in
// pendingLeaves, then activated (its first fence writes it back).
u64 create_leaf(TreeParts& t, const StringLeafLayout& L, const MergedEntries& es, std::size_t from,
                std::size_t to) {
  const std::size_t count = to - from;
  u64 slot = t.dir->take_slot();
  u64 off;
  try {
    pm::CategoryScope cat(pm::Category::alloc);
    off = t.alloc.reserve(L.bytes);
  } catch (...) {
    t.dir->return_slot(slot);
    throw;
  }
  const StringLeaf lf{t.pool.at(off), t.pool.base(), &L};
  std::vector<std::uint16_t> ord(count), fps(count);
  std::vector<StringEntry> entries(count);
  for (std::size_t i = 0; i < count; ++i) {
    ord[i] = static_cast<std::uint16_t>(i);
    fps[i] = es[from + i].fp;
    entries[i] = es[from + i].e;
  }
  const StringLeafHeader h{
      OwnerSlotPtr(slot), kStringLeafType, {LeafPtr{}, LeafPtr{}}, {0, 0}, {0, 0}};
  pm::store_bytes(lf.p, &h, sizeof h);
  pm::store_bytes(lf.slots(), entries.data(), sizeof(StringEntry) * count);
  try {
    t.pending->add(slot);
  } catch (...) {
    t.alloc.cancel(off);
    t.dir->return_slot(slot);
    throw;
  }
  pm::flush(lf.p, 64);
  pm::flush(lf.slots(), sizeof(StringEntry) * count);
  store_meta(lf, 0, ord, fps, count);
  {
    pm::CategoryScope cat(pm::Category::alloc);
    t.alloc.activate(t.pool.get(OwnerSlotPtr(slot))->word(), off);
  }
  return off;
}

// es in new leaves of FR x capacity entries (as few as that takes, of about equal counts),
// appended to r.out.
void write_leaves(TreeParts& t, const StringMergeSizes& sz, const StringLeafLayout& L,
                  const MergedEntries& es, StringMergeResult& r) {
  const StepScope st("split");
  const std::size_t fill = std::clamp<std::size_t>(sz.fill, 1, sz.cap);
  const std::size_t nleaves = (es.size() + fill - 1) / fill;
  const std::size_t per = nleaves ? (es.size() + nleaves - 1) / nleaves : 0;
  std::size_t from = 0;
  while (from < es.size()) {
    const std::size_t to = std::min(es.size(), from + per);
    r.out.push_back(create_leaf(t, L, es, from, to));
    ++r.created;
    from = to;
  }
  r.count += es.size();
}

// Whether m (version nv's entries of a leaf holding `held` in version cv) fits the leaf in
// place: every new entry needs a slot version cv does not hold.
bool fits_in_place(std::size_t cap, std::size_t held, const LeafMerge& m) {
  return held + m.fresh.size() <= cap;
}
}  // namespace

std::size_t string_entries_above(Span es, std::string_view k) {
  return above(es, k);
}

void merge_string_leaves(TreeParts& t, const StringMergeSizes& sz, const StringBase& base, Span es,
                         StringMergeResult& r) {
  merge_string_leaves(t, sz, base, 0, base.leaves.size(), es, r);
}

void merge_string_leaves(TreeParts& t, const StringMergeSizes& sz, const StringBase& base,
                         std::size_t first, std::size_t end, Span es, StringMergeResult& r) {
  const int nv = 1 - base.v;
  StringLeafLayout L;
  L.init(sz.cap);
  MergedEntries carried;  // entries rewritten into new leaves
  LeafMerge mine;
  DirectScratch scratch;
  if (base.empty()) {
    for (const auto& [k, s] : es) {
      if (s.value & kTombstone) continue;
      carried.push_back({entry_of(k, s), fingerprint_of(k)});
      if (const u64 rec = named_record(k, s)) r.named.push_back(rec);
    }
    write_leaves(t, sz, L, carried, r);
    return;
  }
  std::size_t lo = 0;
  for (std::size_t li = first; li < end; ++li) {
    const bool last = li + 1 == end;  // of the run: its rewrites are not carried past it
    const std::size_t hi = last ? es.size() : above(es, base.last[li]);
    const StringLeaf lf = base.leaf(t.pool, li);
    const int c = base.copy(li);
    if (lo == hi && carried.empty()) {  // untouched: kept, version nv reading its copy
      const StepScope st("meta");
      pm::CategoryScope cat(pm::Category::node);
      select_copy(lf, nv, c);
      r.out.push_back(base.leaves[li]);
      r.count += lf.count(c);
      continue;
    }
    prefetch_for_merge(lf, c, base.hw(li));
    const Span mine_es = es.subspan(lo, hi - lo);
    const std::size_t held = lf.count(c);
    std::size_t values = 0;  // each takes a new slot
    for (const auto& e : mine_es) values += !(e.second.value & kTombstone);
    // Whole in place when it surely fits and, unless last, surely keeps `small` entries.
    if (carried.empty() && held + values <= sz.cap &&
        (last || held + values >= mine_es.size() + sz.small)) {
      lo = hi;
      if (const std::size_t k = merge_direct(lf, nv, c, base.hw(li), mine_es, r, scratch)) {
        r.out.push_back(base.leaves[li]);
        r.count += k;
      }
      ++r.in_place;
      continue;
    }
    mine.clear();
    merge_leaf(lf, c, mine_es, mine, r);
    lo = hi;
    if (carried.empty() && fits_in_place(sz.cap, lf.count(c), mine) &&
        (last || mine.size() >= sz.small)) {
      if (!mine.empty()) {  // a leaf left empty leaves the list (the collection frees it)
        merge_in_place(lf, nv, c, mine);
        r.out.push_back(base.leaves[li]);
        r.count += mine.size();
      }
      ++r.in_place;
      continue;
    }
    append_whole(lf, mine, carried);
    ++r.rewritten;
    if (!last && carried.size() < sz.small) continue;  // consolidated with the next leaf
    write_leaves(t, sz, L, carried, r);
    carried.clear();
  }
}

void link_string_leaves(pm::Pool& pool, std::span<const u64> out, int nv, u64 after) {
  pm::CategoryScope cat(pm::Category::node);
  for (std::size_t i = 0; i < out.size(); ++i) {
    LeafPtr& next = pool.at<StringLeafHeader>(out[i])->next[nv];
    const LeafPtr want(i + 1 < out.size() ? out[i + 1] : after);
    if (next == want) continue;
    pm::store(&next, want);
    pm::flush(&next, 8);
  }
}

InMergePart::InMergePart(bool on) : saved(g_in_part) {
  g_in_part = on;
}
InMergePart::~InMergePart() {
  g_in_part = saved;
}

std::size_t merge_fitting_part(std::size_t total, const std::function<void(std::size_t)>& cycle,
                               const std::function<void()>& failed) {
  const std::size_t limit = g_part_limit.load(std::memory_order_relaxed);
  std::size_t part = limit ? std::min(limit, total) : total;
  for (;;) {
    try {
      cycle(part);
      return part;
    } catch (const Error& e) {
      if (e.code() != Errc::pool_full || part <= 1) throw;
      failed();
      part = (part + 1) / 2;
    }
  }
}

}  // namespace dptree::detail

namespace dptree {
void set_dptree_string_merge_part(std::size_t entries) {
  detail::g_part_limit.store(entries, std::memory_order_relaxed);
}
bool dptree_string_merge_in_part() {
  return detail::g_in_part;
}
const char* string_merge_step() {
  return detail::g_step;
}
}  // namespace dptree
