// The merge of DPTree's string form (string_tree.h, §2.3 with leaves rewritten): the buffer's
// entries in key order meet the leaves of the current version cv; a leaf whose key range
// receives none is kept as it is, every other one is rewritten, with its new entries, into new
// leaves (split by entry count and key bytes; one left below the consolidation threshold is
// rewritten together with the next). The new leaves are recorded in pendingLeaves before they
// are activated (§2.4), the list of version nv is linked through the next words of version nv
// (which version cv never reads), and the version flip publishes it: a crash before the flip
// leaves version cv untouched and recovery frees the new leaves; after it, recovery finishes
// the garbage collection of the replaced leaves. A key's bytes live in its leaf, so they are
// created, published and freed with it.
#include <algorithm>
#include <cstring>
#include <span>

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
using Span = std::span<const std::pair<std::string, u64>>;

// An entry of a leaf being written: its key's bytes stay where they are (the buffer's entry or
// the old leaf, both alive until the merge's garbage collection), only pointed to.
struct Merged {
  u64 prefix;
  std::uint32_t len;
  std::uint16_t fp;   // string_fingerprint
  const char* bytes;  // the whole key when len > 8; unused otherwise (the prefix holds it)
  u64 value;
};
using MergedEntries = std::vector<Merged>;

Merged merged_of(std::string_view k, u64 v) {
  return {key_prefix(k), static_cast<std::uint32_t>(k.size()), string_fingerprint(hash_string(k)),
          k.data(), v};
}
std::size_t heap_of(const Merged& m) {
  return m.len > 8 ? m.len : 0;
}

// The first entry of `es` above k.
std::size_t above(Span es, std::string_view k) {
  return static_cast<std::size_t>(std::upper_bound(es.begin(), es.end(), k,
                                                   [](std::string_view a, const auto& b) {
                                                     return StringKeyLess{}(a, b.first);
                                                   }) -
                                  es.begin());
}

// Leaf lf's entries with the sorted entries `es` of its key range applied, appended to `merged`.
void merge_leaf(StringLeaf lf, Span es, MergedEntries& merged) {
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
    if (take_buffer) {
      if (same) ++i;  // replaced or deleted
      if (!(es[b].second & kTombstone)) merged.push_back(merged_of(es[b].first, es[b].second));
      ++b;
    } else {
      merged.push_back({le[i].prefix, le[i].len, lf.fps()[i],
                        reinterpret_cast<const char*>(lf.p + le[i].off), le[i].value});
      ++i;
    }
  }
}

// Entries es[from, to) in a new leaf whose key heap holds `heap` bytes: written whole, then
// recorded in pendingLeaves, then activated (its first fence writes it back).
u64 create_leaf(TreeParts& t, const MergedEntries& es, std::size_t from, std::size_t to,
                std::size_t heap) {
  const std::size_t count = to - from, bytes = StringLeaf::bytes(count, heap);
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
  StringLeaf lf{img.data()};
  lf.h() = StringLeafHeader{slot, kStringLeafType, {LeafPtr{}, LeafPtr{}}, count, heap, {0, 0}};
  std::memset(img.data() + 64 + 2 * count, 0, StringLeaf::fp_bytes(count) - 2 * count);
  std::size_t at = lf.heap_start();
  for (std::size_t i = 0; i < count; ++i) {
    const Merged& m = es[from + i];
    lf.fps()[i] = m.fp;
    const bool long_key = m.len > 8;
    lf.entries()[i] =
        StringEntry{m.prefix, m.len, long_key ? static_cast<std::uint32_t>(at) : 0, m.value};
    if (long_key) {
      std::memcpy(img.data() + at, m.bytes, m.len);
      at += m.len;
    }
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
    t.alloc.activate(t.pool.at<u64>(slot), off);
  }
  return off;
}

// es in new leaves, appended to r.out: as few as the leaf capacity allows, of about equal
// counts, each cut early where its keys would exceed kStringLeafHeap bytes.
void write_leaves(TreeParts& t, std::size_t cap, const MergedEntries& es, StringMergeResult& r) {
  const std::size_t nleaves = (es.size() + cap - 1) / cap;
  const std::size_t per = nleaves ? (es.size() + nleaves - 1) / nleaves : 0;
  std::size_t from = 0;
  while (from < es.size()) {
    std::size_t to = from, heap = 0;
    while (to < es.size() && to - from < per) {
      const std::size_t h = heap_of(es[to]);
      if (to > from && heap + h > kStringLeafHeap) break;
      heap += h;
      ++to;
    }
    r.out.push_back(create_leaf(t, es, from, to, heap));
    ++r.created;
    from = to;
  }
  r.count += es.size();
}
}  // namespace

void merge_string_leaves(TreeParts& t, std::size_t cap, std::size_t small, const StringBase& base,
                         Span es, StringMergeResult& r) {
  MergedEntries merged;
  if (base.empty()) {
    for (const auto& [k, v] : es)
      if (!(v & kTombstone)) merged.push_back(merged_of(k, v));
    write_leaves(t, cap, merged, r);
    return;
  }
  std::size_t lo = 0;
  for (std::size_t li = 0; li < base.leaves.size(); ++li) {
    const bool last = li + 1 == base.leaves.size();
    const std::size_t hi = last ? es.size() : above(es, base.last[li]);
    StringLeaf lf{t.pool.at(base.leaves[li])};
    if (lo == hi && merged.empty()) {  // untouched: kept
      r.out.push_back(base.leaves[li]);
      r.count += lf.count();
      continue;
    }
    merge_leaf(lf, es.subspan(lo, hi - lo), merged);
    lo = hi;
    ++r.rewritten;
    if (!last && merged.size() < small) continue;  // consolidated with the next leaf
    write_leaves(t, cap, merged, r);
    merged.clear();
  }
}

void link_string_leaves(pm::Pool& pool, const std::vector<u64>& out, int nv) {
  pm::CategoryScope cat(pm::Category::node);
  for (std::size_t i = 0; i < out.size(); ++i) {
    LeafPtr& next = pool.at<StringLeafHeader>(out[i])->next[nv];
    const LeafPtr want(i + 1 < out.size() ? out[i + 1] : 0);
    if (next == want) continue;
    pm::store(&next, want);
    pm::flush(&next, 8);
  }
}

void StringDPTree::merge() {
  if (buffer_.empty()) return;
  const int cv = static_cast<int>(root_->gv & kVersionBit), nv = 1 - cv;
  StringMergeResult m;
  try {
    {
      PhaseScope ph(DPTreePhase::merge_start);
      begin_merge(t_.pool, root_, *t_.pending);
    }
    PhaseScope ph(DPTreePhase::upsert_merge);
    StringEntries es;
    es.reserve(buffer_.size());
    for (auto it = buffer_.begin(); it.valid(); ++it) es.emplace_back(it.key(), it.value());
    merge_string_leaves(t_, opt_.leaf_capacity,
                        static_cast<std::size_t>(opt_.consolidate_threshold *
                                                 static_cast<double>(opt_.leaf_capacity)),
                        base_, es, m);
    created_ += m.created;
    rewritten_ += m.rewritten;
    PhaseScope fl(DPTreePhase::flush);
    link_string_leaves(t_.pool, m.out, nv);
  } catch (const Error& e) {
    if (e.code() != Errc::pool_full) throw;
    created_ += m.created;
    reclaim_interrupted_merge(t_.pool, root_, *t_.dir, *t_.pending);
    ++failed_merges_;
    merge_block_.fail(e);
  }
  {
    PhaseScope ph(DPTreePhase::version_flip);
    commit_merge(root_, nv, LeafPtr(m.out.empty() ? 0 : m.out.front()), m.count);
  }
  rebuild_inner();
  ++merges_;
  {
    PhaseScope ph(DPTreePhase::garbage_collection);
    freed_ += collect_garbage(t_.pool, root_, *t_.dir, *t_.pending, string_next(t_.pool), cv, nv);
    const std::size_t used = log_->pages().size();
    PLog::release_chain(t_.pool, &root_->log_head[cv], cv);
    log_->hand_over(cv);
    buffer_.clear();
    // Cache capacity C_size (§2.1): the pages this log took, as records differ in length.
    t_.pages->trim(used + 2, nv);
  }
  merge_block_.clear();
  reset_bloom();
}

}  // namespace dptree::detail
