// Merge initiation (Algorithm 7 lines 6-23) and the parallel tree merge (§3.3, Algorithm 9)
// over the single-threaded tree's range merge (engine/merge.h).
#include <algorithm>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "cdptree/cdptree_impl.h"
#include "cdptree/overlay.h"
#include "cdptree/phase.h"
#include "dptree/error.h"
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

// Algorithm 7 lines 6-16: one writer wins MergeState nomerge -> premerge, turns the Front
// into the Middle, installs a new Front, waits for the writers of the old one and starts the
// merge.
void CDPTree::Impl::maybe_start_merge(bool force) {
  for (;;) {
    int st = merge_state.load(std::memory_order_seq_cst);
    if (st == cdp::kPreMerge) {  // line 7
      std::this_thread::yield();
      continue;
    }
    if (st != cdp::kNoMerge) return;
    int expect = cdp::kNoMerge;
    if (merge_state.compare_exchange_strong(expect, cdp::kPreMerge)) break;  // line 8
  }
  cdp::Cpbt* f = gp_f.load(std::memory_order_seq_cst);  // line 10
  std::size_t sz = f->log.approx_size();
  if (sz == 0 || (!force && sz < merge_thresh.load())) {  // another merge already took it
    std::lock_guard g(done_mu);
    merge_state.store(cdp::kNoMerge);
    done_cv.notify_all();
    return;
  }
  {
    // Two logs are live from the first write to the new Front until the version flip.
    cdp::PhaseScope ph(CDPTreePhase::merge_start);
    pm::CategoryScope cat(pm::Category::node);
    pm::store(&root->base.gv, root->base.gv | cdp::kTwoLogs);
    pm::persist(&root->base.gv, 8);
  }
  cdp::Cpbt* f2 = new_cpbt(1 - cv());                           // line 9
  gp_m.store(f, std::memory_order_seq_cst);                     // line 11
  gp_f.store(f2, std::memory_order_seq_cst);                    // line 12
  sm.spin_until_no_ref(cdp::kFW, f);                            // line 13
  merge_thresh.store(threshold(gp_b.load()->count));            // line 14: GP_B.size * R
  merge_state.store(cdp::kMerging, std::memory_order_seq_cst);  // line 15
  if (!opt.background_merge) {
    merge_task(false);
    return;
  }
  workers->post([this] { merge_task(false); });  // line 16: a pool thread, not a new one
}

// Algorithm 7 lines 17-23. `retry`: the Middle's merge failed before (pool_full) and the
// Front took removes since; the Front's entries are merged too (see parallel_tree_merge).
void CDPTree::Impl::merge_task(bool retry) {
  cdp::Cpbt* m = gp_m.load(std::memory_order_seq_cst);
  try {
    parallel_tree_merge(m, retry ? gp_f.load(std::memory_order_seq_cst) : nullptr);  // line 17
  } catch (const std::exception&) {
    // pool_full (merge_range, flush_range, begin_merge): the merge was undone (abort_merge); the
    // Middle stays readable and durable (two logs stay live; recovery retries the merge too). New
    // values are refused from now on, so the Front stops growing; removes are taken and retry the
    // merge (note_remove).
    failed_merges.fetch_add(1);
    std::lock_guard g(done_mu);
    // Back-off: a leaf's worth of removes before the first retry, twice as many before each
    // next one, at most a merge trigger's worth (so a full pool does not merge on every
    // remove).
    std::size_t next = std::max<std::size_t>(L.cap, 2 * retry_after.load());
    retry_after.store(std::min(next, threshold(gp_b.load()->count)));
    removes_since_fail.store(0);
    refusing.store(true);
    merge_broken.store(true);
    done_cv.notify_all();
    return;
  }
  gp_m.store(nullptr, std::memory_order_seq_cst);  // lines 18-19
  sm.spin_until_no_ref(cdp::kFR, m);               // line 20
  sm.spin_until_no_ref(cdp::kMR, m);               // line 21
  delete m;                                        // line 22
  pages->trim(threshold(gp_b.load()->count) / codec.G.per_page + opt.log_partitions,
              gp_b.load()->v);
  merges.fetch_add(1);
  std::lock_guard g(done_mu);
  refusing.store(false);
  retry_after.store(0);
  merge_state.store(cdp::kNoMerge, std::memory_order_seq_cst);  // line 23
  done_cv.notify_all();
}

// ------------------------------------------------------------------ a full pool

void CDPTree::Impl::refuse_values() {
  if (!refusing.load(std::memory_order_relaxed)) return;
  // The back-off doubles, so the removes a user makes can stop short of its next step: a
  // write then restarts the merge, if a leaf's worth of removes (the back-off's floor) came
  // since it last failed. An inline merge that fits lets this write go ahead; a background
  // one lets the writes after it.
  if (removes_since_fail.load() >= L.cap && retry_merge(true) && !refusing.load()) return;
  throw Error(Errc::pool_full,
              "pool '" + pool.name() +
                  "' is full: the last cdptree merge did not fit, so new values are refused "
                  "(nothing was written); remove keys (a write after enough removes retries "
                  "the merge, or call merge()) or use a bigger pool");
}

void CDPTree::Impl::note_remove() {
  if (!refusing.load(std::memory_order_relaxed)) return;
  if (removes_since_fail.fetch_add(1) + 1 >= retry_after.load()) retry_merge(false);
}

// Restarts the merge of the Middle that failed, if it is parked (merge_broken) and, unless
// forced, enough removes came since (the back-off of merge_task). Returns whether it started.
bool CDPTree::Impl::retry_merge(bool force) {
  {
    std::lock_guard g(done_mu);
    if (!merge_broken.load()) return false;  // no failed merge, or its retry runs
    if (!force && removes_since_fail.load() < retry_after.load()) return false;
    merge_broken.store(false);
    merge_retries.fetch_add(1);
  }
  if (opt.background_merge)
    workers->post([this] { merge_task(true); });
  else
    merge_task(true);
  return true;
}

// CDPTree::merge: a parked merge is retried, else the Front is merged; pool_full when the
// merge waited for did not fit.
void CDPTree::Impl::merge_now(bool wait) {
  if (!retry_merge(true)) maybe_start_merge(true);
  if (!wait) return;
  wait_idle();
  if (merge_broken.load())
    throw Error(Errc::pool_full, "pool '" + pool.name() +
                                     "' is full: the cdptree merge did not fit and was undone "
                                     "(every write is still in the buffers and their logs); "
                                     "remove keys or use a bigger pool");
}

void CDPTree::Impl::wait_idle() const {
  std::unique_lock lk(done_mu);
  done_cv.wait(lk, [&] { return merge_state.load() == cdp::kNoMerge || merge_broken.load(); });
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
