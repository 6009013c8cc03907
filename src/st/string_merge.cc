// The merge of DPTree's string form (string_tree.h, §2.3 with leaves rewritten): the buffer's
// entries in key order meet the leaves of the current version cv; a leaf whose key range
// receives none is kept as it is, every other one is rewritten, with its new entries, into new
// leaves (split by entry count; one left below the consolidation threshold is rewritten
// together with the next). The new leaves are recorded in pendingLeaves before they are
// activated (§2.4), the list of version nv is linked through the next words of version nv
// (which version cv never reads), and the version flip publishes it: a crash before the flip
// leaves version cv untouched and recovery frees the new leaves; after it, recovery finishes
// the garbage collection of the replaced leaves. A rewrite copies entries (prefix, length,
// record offset, value) and fingerprints, never key bytes: those stay in their log records,
// whose pages become key pages (key_pages.h) when the merge's log is released.
#include <algorithm>
#include <atomic>
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
#include "st/merge.h"
#include "st/phase.h"
#include "st/string_base.h"
#include "st/string_tree.h"

namespace dptree::detail {

namespace {
using Span = BufferedSpan;

std::atomic<std::size_t> g_part_limit{0};  // set_dptree_string_merge_part
thread_local bool g_in_part = false;       // dptree_string_merge_in_part

// An entry of a leaf being written, and its fingerprint.
struct Merged {
  StringEntry e;
  std::uint16_t fp;  // string_fingerprint
};
using MergedEntries = std::vector<Merged>;

// A buffered key new to the leaves: its entry names its latest log record.
Merged merged_of(std::string_view k, const StringSlot& s) {
  const u64 rec = k.size() > 8 ? s.rec : 0;
  return {{key_prefix(k), StringEntry::make_meta(k.size(), rec), s.value},
          string_fingerprint(hash_string(k))};
}

// The first entry of `es` above k.
std::size_t above(Span es, std::string_view k) {
  return static_cast<std::size_t>(std::upper_bound(es.begin(), es.end(), k,
                                                   [](std::string_view a, const auto& b) {
                                                     return StringKeyLess{}(a, b.first);
                                                   }) -
                                  es.begin());
}

// Leaf lf's entries with the sorted entries `es` of its key range applied, appended to
// `merged`; the records of long keys added go to r.named, those of long keys removed to
// r.unnamed. An updated key keeps its entry's record (the same bytes), so the update's record
// need not outlive its log.
void merge_leaf(StringLeaf lf, Span es, MergedEntries& merged, StringMergeResult& r) {
  char buf[8];
  std::size_t i = 0, b = 0;
  const std::size_t n = lf.count();
  const StringEntry* le = lf.entries();
  while (i < n || b < es.size()) {
    bool take_buffer = i >= n, same = false;
    if (!take_buffer && b < es.size()) {
      const u64 bp = key_prefix(es[b].first);
      if (bp != le[i].prefix) {
        take_buffer = bp < le[i].prefix;
      } else {  // a tie on the prefixes: compare the keys
        const std::string_view lk = lf.key(i, buf), bk = es[b].first;
        same = bk == lk;
        take_buffer = bk <= lk;
      }
    }
    if (!take_buffer) {
      merged.push_back({le[i], lf.fps()[i]});
      ++i;
      continue;
    }
    const StringSlot& s = es[b].second;
    const bool removed = (s.value & kTombstone) != 0;
    if (same) {  // replaced or deleted
      if (removed) {
        if (le[i].len() > 8) r.unnamed.push_back(le[i].rec());
      } else {
        merged.push_back({{le[i].prefix, le[i].meta, s.value}, lf.fps()[i]});
      }
      ++i;
    } else if (!removed) {
      merged.push_back(merged_of(es[b].first, s));
      if (es[b].first.size() > 8) r.named.push_back(s.rec);
    }
    ++b;
  }
}

// Entries es[from, to) in a new leaf: written whole, then recorded in pendingLeaves, then
// activated (its first fence writes it back).
u64 create_leaf(TreeParts& t, const MergedEntries& es, std::size_t from, std::size_t to) {
  const std::size_t count = to - from, bytes = StringLeaf::bytes(count);
  u64 slot = t.dir->take_slot();
  u64 off;
  try {
    pm::CategoryScope cat(pm::Category::alloc);
    off = t.alloc.reserve(bytes);
  } catch (...) {
    t.dir->return_slot(slot);
    throw;
  }
  // The image is built in DRAM, every byte of it written (no clearing first), and stored at once.
  thread_local std::vector<std::byte> img;
  if (img.size() < bytes) img.resize(bytes);
  StringLeaf lf{img.data(), nullptr};
  lf.h() = StringLeafHeader{
      OwnerSlotPtr(slot), kStringLeafType, {LeafPtr{}, LeafPtr{}}, count, {0, 0, 0}};
  std::memset(img.data() + 64 + 2 * count, 0, StringLeaf::fp_bytes(count) - 2 * count);
  StringEntry* e = lf.entries(count);
  for (std::size_t i = 0; i < count; ++i) {
    lf.fps()[i] = es[from + i].fp;
    e[i] = es[from + i].e;
  }
  pm::store_bytes(t.pool.at(off), img.data(), bytes);
  try {
    t.pending->add(slot);
  } catch (...) {
    t.alloc.cancel(off);
    t.dir->return_slot(slot);
    throw;
  }
  pm::flush(t.pool.at(off), bytes);
  {
    pm::CategoryScope cat(pm::Category::alloc);
    t.alloc.activate(t.pool.get(OwnerSlotPtr(slot))->word(), off);
  }
  return off;
}

// es in new leaves, appended to r.out: as few as the leaf capacity allows, of about equal
// counts.
void write_leaves(TreeParts& t, std::size_t cap, const MergedEntries& es, StringMergeResult& r) {
  const std::size_t nleaves = (es.size() + cap - 1) / cap;
  const std::size_t per = nleaves ? (es.size() + nleaves - 1) / nleaves : 0;
  std::size_t from = 0;
  while (from < es.size()) {
    const std::size_t to = std::min(es.size(), from + per);
    r.out.push_back(create_leaf(t, es, from, to));
    ++r.created;
    from = to;
  }
  r.count += es.size();
}
}  // namespace

std::size_t string_entries_above(Span es, std::string_view k) {
  return above(es, k);
}

void merge_string_leaves(TreeParts& t, std::size_t cap, std::size_t small, const StringBase& base,
                         Span es, StringMergeResult& r) {
  merge_string_leaves(t, cap, small, base, 0, base.leaves.size(), es, r);
}

void merge_string_leaves(TreeParts& t, std::size_t cap, std::size_t small, const StringBase& base,
                         std::size_t first, std::size_t end, Span es, StringMergeResult& r) {
  MergedEntries merged;
  if (base.empty()) {
    for (const auto& [k, s] : es) {
      if (s.value & kTombstone) continue;
      merged.push_back(merged_of(k, s));
      if (k.size() > 8) r.named.push_back(s.rec);
    }
    write_leaves(t, cap, merged, r);
    return;
  }
  std::size_t lo = 0;
  for (std::size_t li = first; li < end; ++li) {
    const bool last = li + 1 == end;  // of the run: its rewrites are not carried past it
    const std::size_t hi = last ? es.size() : above(es, base.last[li]);
    StringLeaf lf{t.pool.at(base.leaves[li]), t.pool.base()};
    if (lo == hi && merged.empty()) {  // untouched: kept
      r.out.push_back(base.leaves[li]);
      r.count += lf.count();
      continue;
    }
    merge_leaf(lf, es.subspan(lo, hi - lo), merged, r);
    lo = hi;
    ++r.rewritten;
    if (!last && merged.size() < small) continue;  // consolidated with the next leaf
    write_leaves(t, cap, merged, r);
    merged.clear();
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

namespace {
// Appends a record of each of `es` to the log at `head` of version `ver`; `recs` gets their
// offsets. May throw pool_full.
void log_entries(PLog& log, LogPagePtr* head, int ver, Span es, std::vector<u64>& recs) {
  PhaseScope ph(DPTreePhase::log_append);
  for (const auto& [k, s] : es) recs.push_back(append_string_record(log, head, ver, k, s.value));
}
}  // namespace

// §2.3 over the buffer. A merge writes every leaf the buffer touches anew before the flip
// frees the old ones, so it needs about the base tree's size free. When it does not fit, the
// buffer is merged in key-ordered parts, each a whole merge cycle (merge_part), halving the
// part until one fits: in a pool too full for one merge the tree keeps merging instead of
// refusing writes, and a pool holds about as many string keys as it has room for. Only when
// a part of one entry does not fit is the merge undone and writes refused (MergeBlock).
void StringDPTree::merge() {
  if (buffer_.empty()) return;
  BufferedEntries es;
  es.reserve(buffer_.size());
  for (auto it = buffer_.begin(); it.valid(); ++it) es.emplace_back(it.key(), it.value());
  std::size_t part = es.size();
  for (std::size_t from = 0; from < es.size(); from += part) {
    try {
      part = merge_fitting_part(
          std::min(part, es.size() - from), [&](std::size_t n) { merge_part(es, from, from + n); },
          [&] { ++failed_merges_; });
    } catch (const Error& e) {
      if (e.code() != Errc::pool_full) throw;
      ++failed_merges_;
      merge_block_.fail(e);
    }
  }
  merge_block_.clear();
}

// One merge cycle over es[from, to): begin, the leaves of those entries, flip, garbage
// collection. The entries after `to` stay in the buffer: before the flip they are written to
// the log of the new version (empty until then: the last merge's collection released it), so
// the flip that makes the merged leaves current makes a log of exactly the entries left the
// current log too. A crash before the flip finds the old log whole (the new one is released
// by recovery as the other version's); after it, the new one. pool_full undoes the cycle:
// leaves reclaimed, the new log's pages back in the cache, nothing else changed.
void StringDPTree::merge_part(BufferedEntries& es, std::size_t from, std::size_t to) {
  const int cv = static_cast<int>(root_->gv & kVersionBit), nv = 1 - cv;
  const Span part(es.data() + from, to - from), rest(es.data() + to, es.size() - to);
  StringMergeResult m;
  std::vector<u64> rest_recs;
  auto next = std::make_unique<PLog>(t_.pool, t_.codec, *t_.pages);
  const InMergePart in_part(!rest.empty() || from > 0);
  try {
    {
      PhaseScope ph(DPTreePhase::merge_start);
      begin_merge(t_.pool, root_, *t_.pending);
    }
    {
      PhaseScope ph(DPTreePhase::upsert_merge);
      merge_string_leaves(t_, opt_.leaf_capacity,
                          static_cast<std::size_t>(opt_.consolidate_threshold *
                                                   static_cast<double>(opt_.leaf_capacity)),
                          base_, part, m);
    }
    if (!rest.empty()) log_entries(*next, &root_->log_head[nv], nv, rest, rest_recs);
    created_ += m.created;
    rewritten_ += m.rewritten;
    PhaseScope fl(DPTreePhase::flush);
    link_string_leaves(t_.pool, m.out, nv);
  } catch (const Error& e) {
    if (e.code() != Errc::pool_full) throw;
    created_ += m.created;
    reclaim_interrupted_merge(t_.pool, root_, *t_.dir, *t_.pending);
    PLog::release_chain(t_.pool, &root_->log_head[nv], nv);
    next->hand_over(nv);
    throw;
  }
  {
    PhaseScope ph(DPTreePhase::version_flip);
    commit_merge(root_, nv, LeafPtr(m.out.empty() ? 0 : m.out.front()), m.count);
  }
  rebuild_inner();
  ++merges_;
  parts_ += !rest.empty() || from > 0;
  {
    PhaseScope ph(DPTreePhase::garbage_collection);
    freed_ += collect_garbage(t_.pool, root_, *t_.dir, *t_.pending, string_next(t_.pool), cv, nv);
    const std::size_t used = log_->pages().size();
    key_pages_.name(m.named);
    release_key_pages(m.unnamed);
    const auto keep = [this](u64 page) { return key_pages_.named(page); };
    PLog::release_chain(t_.pool, &root_->log_head[cv], cv, keep);
    log_->hand_over(cv, keep);
    log_ = std::move(next);
    // Cache capacity C_size (§2.1): the pages this log took, as records differ in length.
    t_.pages->trim(used + 2, nv);
  }
  // The entries left now name their records in the new log (the old one's pages are reused).
  for (std::size_t i = 0; i < rest_recs.size(); ++i) es[to + i].second.rec = rest_recs[i];
  keep_in_buffer(rest);
}

// After the flip's garbage collection (no entry of version cv is reachable): the key pages no
// entry names any more are freed. Only key pages of released logs can be unnamed here; one of
// the log being released (none of its records named) goes with that log.
void StringDPTree::release_key_pages(std::span<const u64> unnamed) {
  PhaseScope ph(DPTreePhase::key_page_release);
  const std::vector<u64> free = key_pages_.unname(unnamed);
  const std::unordered_set<u64> live(log_->pages().begin(), log_->pages().end());
  for (u64 pg : free)
    if (!live.contains(pg)) {
      key_pages_.free_page(*t_.dir, pg);
      ++key_pages_freed_;
    }
}

// The buffer and its filter hold exactly `rest` (the entries a merge part left).
void StringDPTree::keep_in_buffer(Span rest) {
  buffer_.clear();
  reset_bloom();
  for (const auto& [k, s] : rest) {
    buffer_.insert_or_assign(k, s);
    bloom_.add_hashed(hash_string(k));
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
}  // namespace dptree
