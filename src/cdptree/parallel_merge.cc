// The integer form's merge: the merge driver's hooks (merge_driver.h: Algorithm 7's trigger,
// hand-over and retirement are shared with the string form) and the parallel tree merge
// (§3.3, Algorithm 9) over the single-threaded tree's range merge (engine/merge.h).
#include <algorithm>
#include <exception>

#include "cdptree/cdptree_impl.h"
#include "cdptree/overlay.h"
#include "cdptree/phase.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"

namespace dptree {

using namespace detail;  // NOLINT: the layout vocabulary

namespace {

// The Middle's entries in key order. With `newer` (a retry after pool_full, or recovery),
// the entries of the Front are laid over them: its removes then cancel the Middle's inserts
// and delete base entries, so the retried merge needs fewer leaves. The Front keeps them (and
// its log), so reads and a replay after a crash still find them first; merging them again
// later writes the same values.
void entries_to_merge(const cdp::Cpbt* m, const cdp::Cpbt* newer, std::vector<KVPair>& es) {
  es.clear();
  m->tree.for_each_frozen([&](u64 k, u64 v) { es.emplace_back(k, v); });
  if (!newer) return;
  // Writers may still take removes in the Front: an optimistic scan sees each key's value at
  // one moment (only values already logged: the log is written first, §3.1).
  std::vector<KVPair> fr;
  newer->tree.scan(0, [&](u64 k, u64 v) {
    fr.emplace_back(k, v);
    return true;
  });
  es = overlay_sorted(std::move(es), fr);
}

// Algorithm 9 line 1: partitions of `ps` consecutive leaves of `old`, each with the entries
// of its key range [P.MKS, P.MKE) (ranges and input are sized to the partition count).
void partition(const cdp::BaseSnapshot& old, std::size_t ps, const std::vector<KVPair>& es,
               std::vector<RangeMerge>& ranges, std::vector<std::span<const KVPair>>& input) {
  const std::size_t nl = old.leaf.size(), np = ranges.size();
  std::size_t e0 = 0;
  for (std::size_t i = 0; i < np; ++i) {
    std::size_t a = i * ps, b = std::min(nl, a + ps);
    RangeMerge& r = ranges[i];
    r.first_cv = nl ? old.leaf[a] : 0;
    r.nleaves = b - a;
    r.first_range = i == 0;
    r.last_range = i + 1 == np;
    std::size_t e1 = es.size();
    if (i + 1 < np) {
      u64 mk = old.max[b - 1];
      e1 = static_cast<std::size_t>(
          std::upper_bound(es.begin() + static_cast<long>(e0), es.end(), mk,
                           [](u64 key, const KVPair& e) { return key < e.first; }) -
          es.begin());
    }
    input[i] = std::span<const KVPair>(es.data() + e0, e1 - e0);
    e0 = e1;
  }
}

}  // namespace

// ------------------------------------------------------------------ the driver's hooks

bool CDPTree::Impl::front_due(const cdp::Cpbt& f, bool force) const {
  const std::size_t sz = f.log.approx_size();
  return sz != 0 && (force || sz >= merge_thresh.load());
}

// Algorithm 7 line 17. `retry`: the Middle's merge failed before (pool_full) and the Front
// took removes since; the Front's entries are merged too (see entries_to_merge).
bool CDPTree::Impl::run_merge(bool retry) {
  try {
    parallel_tree_merge(gp_m.load(std::memory_order_seq_cst),
                        retry ? gp_f.load(std::memory_order_seq_cst) : nullptr);
  } catch (const std::exception&) {
    // pool_full (merge_range, flush_range, begin_merge): the merge was undone (abort_merge).
    return false;
  }
  return true;
}

// Cache capacity C_size (§2.1): a merge trigger's worth of pages and one per partition.
void CDPTree::Impl::after_merge() {
  pages->trim(threshold(gp_b.load()->count) / codec.G.per_page + opt.log_partitions,
              gp_b.load()->v);
}

// Algorithm 9, kept in one function (about 100 lines) so that its numbered lines read in order
// from the start of the merge to the version flip and garbage collection.
void CDPTree::Impl::parallel_tree_merge(cdp::Cpbt* m, const cdp::Cpbt* newer) {
  std::vector<KVPair>& es = merge_entries;
  entries_to_merge(m, newer, es);
  merge_entries_bytes.store(es.capacity() * sizeof(KVPair), std::memory_order_relaxed);
  cdp::BaseSnapshot* old = gp_b.load(std::memory_order_seq_cst);
  const int cvv = cv(), nv = 1 - cvv;
  {
    cdp::PhaseScope ph(CDPTreePhase::merge_start);
    begin_merge(pool, &root->base, *pending);  // Algorithm 1 line 2
  }
  MergeContext cx{pool,
                  *dir,
                  *pending,
                  L,
                  opt.fill_rate,
                  opt.consolidate_threshold,
                  MergeMode::in_place,
                  root->base.restart_count,
                  cvv,
                  nv};
  cx.may_hold_tombstone = tombstone_filter(*old);  // §3.4 deletes in place (cdptree.cc)
  cx.split = opt.split;
  // Line 1: partitions of PSize consecutive leaves, each with the buffer entries of its key
  // range [P.MKS, P.MKE).
  const std::size_t nl = old->leaf.size(), ps = opt.psize;
  const std::size_t np = nl ? (nl + ps - 1) / ps : 1;
  std::vector<RangeMerge> ranges(np);
  std::vector<std::span<const KVPair>> input(np);
  partition(*old, ps, es, ranges, input);
  const auto bcx = base_ctx();
  const cdp::BaseSnapshot* snap = nullptr;  // the new inner index, once made
  try {
    // Lines 3-7: upsert merge, delete merge and consolidation per partition. The leaves'
    // metadata of version cv is made current first under its lock bit (§3.2): readers may
    // be rebuilding the same leaves after a restart.
    workers->run(np, merge_workers(), [&](std::size_t i) {
      cdp::PhaseScope ph(CDPTreePhase::merge_range);
      cdp::WorkerFence fe;  // early write-backs (delete merge, consolidation) too
      std::size_t a = i * ps;
      for (std::size_t j = a; j < std::min(nl, a + ps); ++j)
        cdp::ensure_meta(bcx, bcx.leaf(old->leaf[j]), cvv);
      merge_range(cx, ranges[i], input[i]);
    });
    // Line 8: reconnect consecutive partitions through the next pointers of version nv.
    detail::LeafPtr head;
    RangeMerge* prev = nullptr;
    for (auto& r : ranges) {
      if (!r.head) continue;
      if (prev)
        pm::store(&cx.leaf(prev->tail).next(nv), r.head);
      else
        head = r.head;
      prev = &r;
    }
    if (prev) pm::store(&cx.leaf(prev->tail).next(nv), detail::LeafPtr::null());
    // Lines 9-12: flush in parallel. Each worker fences its own flushes: a fence orders only
    // the flushes of the thread that issues it, and the flip (on this thread) must not reach
    // PM before any of them.
    workers->run(np, merge_workers(), [&](std::size_t i) {
      cdp::PhaseScope ph(CDPTreePhase::flush);
      cdp::WorkerFence fe;  // early write-backs (delete merge, consolidation) too
      flush_range(cx, ranges[i]);
    });
    u64 count = 0;
    MergeCounters mc;
    for (auto& r : ranges) {
      count += r.count;
      mc += r.counters;
    }
    // Line 13: the inner index rebuilt and published atomically.
    auto* made = cdp::make_snapshot(bcx, head, nv, count);
    gp_b.store(made, std::memory_order_seq_cst);
    snap = made;
    // Line 14: readers of the old inner index (and so of version cv's metadata, which the
    // next merge rewrites) are waited out.
    sm.spin_until_no_ref(cdp::kBR, old);
    {
      cdp::PhaseScope ph(CDPTreePhase::version_flip);
      commit_merge(&root->base, nv, head, count);  // line 15 (clears kTwoLogs too)
    }
    splits += mc.splits;
    consolidations += mc.consolidations;
    created += mc.created;
    merge_partitions += np;
  } catch (...) {  // from merge_range or flush_range (pool_full): before anything is published
    std::vector<RangeMerge*> rp;
    for (auto& r : ranges) rp.push_back(&r);
    abort_merge(cx, &root->base, rp);
    throw;
  }
  {
    cdp::PhaseScope ph(CDPTreePhase::garbage_collection);  // line 16
    // Both inner indexes list their version's leaves in order: no walk of either list.
    freed += collect_garbage(pool, &root->base, *dir, *pending, old->leaf, snap->leaf);
  }
  m->log.release();  // the Middle's log: its pages to the freelist of the next flavor
  delete old;
}

}  // namespace dptree
