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

#include "dptree/error.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"
#include "st/merge.h"
#include "st/phase.h"
#include "st/string_tree.h"

namespace dptree::detail {

namespace {
std::size_t heap_of(std::string_view k) {
  return k.size() > 8 ? k.size() : 0;
}
}  // namespace

// Leaf li's entries with the buffer's entries of its key range applied, appended to `merged`.
void StringDPTree::merge_leaf(std::size_t li, Entries& merged) {
  const bool last = li + 1 == leaves_.size();
  auto bi = li == 0 ? buffer_.begin() : buffer_.upper_bound(last_[li - 1]);
  auto be = last ? buffer_.end() : buffer_.upper_bound(last_[li]);
  StringLeaf lf = leaf(leaves_[li]);
  char buf[8];
  std::size_t i = 0;
  const std::size_t n = lf.count();
  while (i < n || bi != be) {
    std::string_view lk = i < n ? lf.key(i, buf) : std::string_view();
    if (bi != be && (i >= n || std::string_view(bi->first) <= lk)) {
      if (i < n && bi->first == lk) ++i;  // replaced or deleted
      if (!(bi->second & kTombstone)) merged.emplace_back(bi->first, bi->second);
      ++bi;
    } else {
      merged.emplace_back(std::string(lk), lf.entries()[i].value);
      ++i;
    }
  }
}

// Entries es[from, to) in a new leaf whose key heap holds `heap` bytes: written whole, then
// recorded in pendingLeaves, then activated (its first fence writes it back).
u64 StringDPTree::create_leaf(const Entries& es, std::size_t from, std::size_t to,
                              std::size_t heap) {
  const std::size_t count = to - from, bytes = StringLeaf::bytes(count, heap);
  u64 slot = t_.dir->take_slot();
  u64 off;
  try {
    pm::CategoryScope cat(pm::Category::alloc);
    off = t_.alloc.reserve(bytes);
  } catch (...) {
    t_.dir->return_slot(slot);
    throw;
  }
  std::vector<std::byte> img(bytes, std::byte{0});
  StringLeaf lf{img.data()};
  lf.h().owner_slot = slot;
  lf.h().type = kStringLeafType;
  lf.h().count = count;
  lf.h().heap_bytes = heap;
  std::size_t at = lf.heap_start();
  for (std::size_t i = 0; i < count; ++i) {
    const std::string& k = es[from + i].first;
    StringEntry& e = lf.entries()[i];
    e.prefix = key_prefix(k);
    e.len = static_cast<std::uint32_t>(k.size());
    e.value = es[from + i].second;
    if (k.size() > 8) {
      e.off = static_cast<std::uint32_t>(at);
      std::memcpy(img.data() + at, k.data(), k.size());
      at += k.size();
    }
  }
  pm::store_bytes(t_.pool.at(off), img.data(), bytes);
  try {
    t_.pending->add(slot);
  } catch (...) {
    t_.alloc.cancel(off);
    t_.dir->return_slot(slot);
    throw;
  }
  pm::flush(t_.pool.at(off), bytes);
  {
    pm::CategoryScope cat(pm::Category::alloc);
    t_.alloc.activate(t_.pool.at<u64>(slot), off);
  }
  ++created_;
  return off;
}

// es in new leaves, appended to `out`: as few as the leaf capacity allows, of about equal
// counts, each cut early where its keys would exceed kStringLeafHeap bytes.
void StringDPTree::write_leaves(const Entries& es, std::vector<u64>& out) {
  const std::size_t cap = opt_.leaf_capacity;
  const std::size_t nleaves = (es.size() + cap - 1) / cap;
  const std::size_t per = nleaves ? (es.size() + nleaves - 1) / nleaves : 0;
  std::size_t from = 0;
  while (from < es.size()) {
    std::size_t to = from, heap = 0;
    while (to < es.size() && to - from < per) {
      const std::size_t h = heap_of(es[to].first);
      if (to > from && heap + h > kStringLeafHeap) break;
      heap += h;
      ++to;
    }
    out.push_back(create_leaf(es, from, to, heap));
    from = to;
  }
}

// The list of version nv: each leaf's next word of version nv, written back where it changed.
void StringDPTree::link(const std::vector<u64>& out, int nv) {
  pm::CategoryScope cat(pm::Category::node);
  for (std::size_t i = 0; i < out.size(); ++i) {
    u64& next = leaf(out[i]).h().next[nv];
    const u64 want = i + 1 < out.size() ? out[i + 1] : 0;
    if (next == want) continue;
    pm::store(&next, want);
    pm::flush(&next, 8);
  }
}

void StringDPTree::merge() {
  if (buffer_.empty()) return;
  const int cv = static_cast<int>(root_->gv & kVersionBit), nv = 1 - cv;
  std::vector<u64> out;
  u64 count = 0;
  try {
    {
      PhaseScope ph(DPTreePhase::merge_start);
      begin_merge(t_.pool, root_, *t_.pending);
    }
    PhaseScope ph(DPTreePhase::upsert_merge);
    const auto small = static_cast<std::size_t>(opt_.consolidate_threshold *
                                                static_cast<double>(opt_.leaf_capacity));
    Entries merged;
    if (leaves_.empty()) {
      for (const auto& [k, v] : buffer_)
        if (!(v & kTombstone)) merged.emplace_back(k, v);
    }
    for (std::size_t li = 0; li < leaves_.size(); ++li) {
      const bool last = li + 1 == leaves_.size();
      auto lo = li == 0 ? buffer_.begin() : buffer_.upper_bound(last_[li - 1]);
      auto hi = last ? buffer_.end() : buffer_.upper_bound(last_[li]);
      if (lo == hi && merged.empty()) {  // untouched: kept
        out.push_back(leaves_[li]);
        count += leaf(leaves_[li]).count();
        continue;
      }
      merge_leaf(li, merged);
      ++rewritten_;
      if (!last && merged.size() < small) continue;  // consolidated with the next leaf
      count += merged.size();
      write_leaves(merged, out);
      merged.clear();
    }
    if (leaves_.empty()) {
      count = merged.size();
      write_leaves(merged, out);
    }
    PhaseScope fl(DPTreePhase::flush);
    link(out, nv);
  } catch (const Error& e) {
    if (e.code() != Errc::pool_full) throw;
    reclaim_interrupted_merge(t_.pool, root_, *t_.dir, *t_.pending);
    ++failed_merges_;
    merge_block_.fail(e);
  }
  {
    PhaseScope ph(DPTreePhase::version_flip);
    commit_merge(root_, nv, out.empty() ? 0 : out.front(), count);
  }
  rebuild_inner();
  ++merges_;
  {
    PhaseScope ph(DPTreePhase::garbage_collection);
    const pm::Pool& pool = t_.pool;
    freed_ += collect_garbage(
        t_.pool, root_, *t_.dir, *t_.pending,
        [&pool](u64 l, int v) { return pool.at<StringLeafHeader>(l)->next[v]; }, cv, nv);
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
