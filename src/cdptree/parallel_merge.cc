// The integer form's merge: the merge driver's hooks (merge_driver.h: Algorithm 7's trigger,
// hand-over and retirement are shared with the string form) and the parallel tree merge
// (§3.3, Algorithm 9) over the single-threaded tree's range merge (engine/merge.h).
#include <algorithm>
#include <exception>
#include <memory>

#include "cdptree/cdptree_impl.h"
#include "cdptree/overlay.h"
#include "cdptree/phase.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"

namespace dptree {

using namespace detail;  // NOLINT: the layout vocabulary

namespace {

// The Middle's entries with keys in [from, to], in key order. With `newer` (a retry after
// pool_full, or recovery), the entries of the Front in that range are laid over them: its
// removes then cancel the Middle's inserts and delete base entries, so the retried merge
// needs fewer leaves. The Front keeps them (and its log), so reads and a replay after a crash
// still find them first; merging them again later writes the same values.
void range_entries(const cdp::Cpbt* m, const cdp::Cpbt* newer, u64 from, u64 to,
                   std::vector<KVPair>& es) {
  // Writers may still take removes in the Front: an optimistic scan sees each key's value at
  // one moment (only values already logged: the log is written first, §3.1). The Middle
  // takes no writes: the same scan reads it without a restart.
  auto collect = [from, to](const cdp::Cpbt* b, std::vector<KVPair>& out) {
    out.clear();
    b->tree.scan(from, [&](u64 k, u64 v) {
      if (k > to) return false;
      out.emplace_back(k, v);
      return true;
    });
  };
  collect(m, es);
  if (!newer) return;
  std::vector<KVPair> fr;
  collect(newer, fr);
  es = overlay_sorted(std::move(es), fr);
}

// A merge in steps frees this many replaced leaves a step (each an owner slot and a block
// freed and persisted): a step about as long as a partition's.
constexpr std::size_t kFreesPerStep = 64;

// Algorithm 9 line 1: partitions of `ps` consecutive leaves of `old`, each with its key range
// [P.MKS, P.MKE] (the first from key 0, the last to the largest key).
struct Partition {
  RangeMerge r;
  u64 from = 0, to = ~u64{0};
  cdp::SnapshotPiece piece;  // its leaves in the new snapshot
  // Phase 7's share (engine/merge.h, range_garbage): owner slots of old leaves the new chain
  // lacks (last first), and of created leaves it lacks.
  std::vector<u64> old_garbage, created_garbage;
};

// An empty base: ranges of `per` consecutive entries of the Middle (tombstones included; with
// `newer`, of the Front's laid over them), each building its own leaves, the last leaf of each
// but the last ending at its range's last key (RangeMerge::last_max). Cut by a scan that keeps
// only the cut keys, made in parts for a merge in steps: each call of scan() reads up to
// `budget` more entries from where the last one stopped (the Middle takes no writes while it
// merges). The Front laid over is the rare retry: cut whole in the first call.
class EmptyBaseCut {
 public:
  EmptyBaseCut(const cdp::Cpbt* m, const cdp::Cpbt* newer, std::size_t per)
      : m_(m), newer_(newer), per_(per) {}

  // Returns whether the whole buffer is scanned.
  bool scan(std::size_t budget) {
    if (newer_) {
      std::vector<KVPair> all;
      range_entries(m_, newer_, 0, ~u64{0}, all);
      for (const KVPair& e : all) count(e.first);
      return true;
    }
    std::size_t read = 0;
    bool stopped = false;
    m_->tree.scan(next_, [&](u64 k, u64) {
      count(k);
      if (++read < budget || k == ~u64{0}) return true;
      next_ = k + 1;
      stopped = true;
      return false;
    });
    return !stopped;
  }

  std::vector<Partition> partitions() {
    if (!cuts_.empty() && n_ % per_ == 0) cuts_.pop_back();  // its range would be the last, empty
    std::vector<Partition> parts(cuts_.size() + 1);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      Partition& p = parts[i];
      p.r.first_range = i == 0;
      p.r.last_range = i + 1 == parts.size();
      if (i > 0) p.from = cuts_[i - 1] + 1;
      if (i < cuts_.size()) p.to = p.r.last_max = cuts_[i];
    }
    return parts;
  }

 private:
  void count(u64 k) {
    if (++n_ % per_ == 0) cuts_.push_back(k);
  }

  const cdp::Cpbt *m_, *newer_;
  std::size_t per_, n_ = 0;
  u64 next_ = 0;           // the scan's next first key
  std::vector<u64> cuts_;  // the last key of every range but the last
};

// A merge in steps scans this many partitions' worth of an empty base's entries a step.
constexpr std::size_t kCutPartitionsPerStep = 4;

void partition(const cdp::BaseSnapshot& old, std::size_t ps, std::vector<Partition>& parts) {
  const std::size_t nl = old.leaf.size(), np = parts.size();
  for (std::size_t i = 0; i < np; ++i) {
    std::size_t a = i * ps, b = std::min(nl, a + ps);
    Partition& p = parts[i];
    p.r.first_cv = nl ? old.leaf[a] : 0;
    p.r.nleaves = b - a;
    p.r.first_range = i == 0;
    p.r.last_range = i + 1 == np;
    if (i > 0) p.from = old.max[a - 1] + 1;  // only the last leaf has the largest key
    if (i + 1 < np) p.to = old.max[b - 1];
  }
}

}  // namespace

// ------------------------------------------------------------------ the driver's hooks

bool CDPTree::Impl::front_due(const cdp::Cpbt& f, bool force) const {
  const std::size_t sz = f.log.approx_size();
  return sz != 0 && (force || sz >= merge_thresh.load());
}

// Algorithm 7 line 17. `retry`: the Middle's merge failed before (pool_full) and the Front
// took removes since; the Front's entries are merged too (see range_entries).
bool CDPTree::Impl::run_merge(bool retry) {
  try {
    merge_steps(retry).finish();
  } catch (const std::exception&) {
    // pool_full (merge_range, flush_range, begin_merge): the merge was undone (abort_merge).
    return false;
  }
  return true;
}

cdp::Steps CDPTree::Impl::merge_steps(bool retry) {
  return parallel_tree_merge(gp_m.load(std::memory_order_seq_cst),
                             retry ? gp_f.load(std::memory_order_seq_cst) : nullptr);
}

// Cache capacity C_size (§2.1): a merge trigger's worth of pages and one per partition.
void CDPTree::Impl::after_merge() {
  pages->trim(threshold(gp_b.load()->count) / codec.G.per_page + opt.log_partitions,
              gp_b.load()->v);
}

// Algorithm 9, kept in one function (about 130 lines) so that its numbered lines read in order
// from the start of the merge to the version flip and garbage collection. With merge_steps it
// pauses after each partition's merge and flush (the writers resume it, merge_driver.h);
// otherwise it runs to its end and each parallel phase runs on the merge workers.
cdp::Steps CDPTree::Impl::parallel_tree_merge(cdp::Cpbt* m, const cdp::Cpbt* newer) {
  const bool stepped = opt.merge_steps;
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
  // Line 1: partitions of PSize consecutive leaves, each with its key range [P.MKS, P.MKE].
  // An empty base has no leaves to cut: its entries are cut instead, as many a partition as
  // PSize leaves take at the fill rate, so that a partition's work is about the same.
  const std::size_t nl = old->leaf.size(), ps = opt.psize;
  std::vector<Partition> parts;
  std::size_t cut_steps = 0;
  if (nl) {
    parts.resize((nl + ps - 1) / ps);
    partition(*old, ps, parts);
  } else {
    const auto per = std::max<std::size_t>(
        1, static_cast<std::size_t>(static_cast<double>(ps * L.cap) * opt.fill_rate));
    // The pace (merge_driver.h, step_due) needs the step count before the cut knows it.
    const std::size_t guess = m->log.approx_size() / per + 1;
    planned_steps.store(2 * guess + guess / kCutPartitionsPerStep + 6, std::memory_order_relaxed);
    EmptyBaseCut cut(m, newer, per);
    while (!cut.scan(stepped ? kCutPartitionsPerStep * per : ~std::size_t{0})) {
      ++cut_steps;
      co_yield cdp::Steps::kPause;
    }
    parts = cut.partitions();
  }
  const std::size_t np = parts.size();
  // A merge and a flush per partition; the start, the next inner index's build, its
  // publication, the collection's end, the log's release, the old snapshot's, the partitions'
  // array's and the retirement; the collection's frees (below); an empty base's cut.
  planned_steps.store(2 * np + 8 + cut_steps, std::memory_order_relaxed);
  const auto bcx = base_ctx();
  // The next inner index's leaves, max keys and freshness, taken from each partition after
  // its flush (reserved now: no copy of the whole as the merge ends).
  cdp::SnapshotPiece next;
  next.leaf.reserve(nl + nl / 4 + 16);
  next.max.reserve(next.leaf.capacity());
  next.fresh.reserve(next.leaf.capacity());
  std::size_t garbage = 0;  // phase 7's frees, summed over the partitions after their flush
  if (stepped) co_yield cdp::Steps::kPause;
  try {
    // Lines 3-7: upsert merge, delete merge and consolidation per partition, over the buffer
    // entries of its key range. The leaves' metadata of version cv is made current first
    // under its lock bit (§3.2): readers may be rebuilding the same leaves after a restart.
    auto merge_part = [&](std::size_t i) {
      cdp::PhaseScope ph(CDPTreePhase::merge_range);
      cdp::WorkerFence fe;  // early write-backs (delete merge, consolidation) too
      std::size_t a = i * ps;
      for (std::size_t j = a; j < std::min(nl, a + ps); ++j)
        cdp::ensure_meta(bcx, bcx.leaf(old->leaf[j]), cvv);
      std::vector<KVPair> es;
      range_entries(m, newer, parts[i].from, parts[i].to, es);
      merge_range(cx, parts[i].r, es);
    };
    if (!stepped) workers->run(np, merge_workers(), merge_part);
    for (std::size_t i = 0; stepped && i < np; ++i) {
      merge_part(i);
      co_yield cdp::Steps::kPause;
    }
    // Line 8: reconnect consecutive partitions through the next pointers of version nv.
    detail::LeafPtr head;
    RangeMerge* prev = nullptr;
    for (auto& p : parts) {
      if (!p.r.head) continue;
      if (prev)
        pm::store(&cx.leaf(prev->tail).next(nv), p.r.head);
      else
        head = p.r.head;
      prev = &p.r;
    }
    if (prev) {
      pm::store(&cx.leaf(prev->tail).next(nv), detail::LeafPtr::null());
      // An empty base's last range may hold only tombstones: the tree's last leaf is then
      // another range's, made ending at its own last key. It was made by this merge, so its
      // metadata is written back whole (flush_range).
      if (!nl) pm::store(&cx.leaf(prev->tail).max_key(nv), ~u64{0});
    }
    // Lines 9-12: flush in parallel. Each worker fences its own flushes: a fence orders only
    // the flushes of the thread that issues it, and the flip (on this thread) must not reach
    // PM before any of them. Each also reads its leaves for the new inner index.
    auto flush_part = [&](std::size_t i) {
      cdp::PhaseScope ph(CDPTreePhase::flush);
      cdp::WorkerFence fe;  // early write-backs (delete merge, consolidation) too
      Partition& p = parts[i];
      flush_range(cx, p.r);
      if (p.r.head) cdp::read_piece(bcx, p.r.head.off, p.r.tail, nv, p.piece);
      const std::size_t a = std::min(nl, i * ps), b = std::min(nl, a + ps);
      range_garbage(pool, std::span<const u64>(old->leaf).subspan(a, b - a), p.piece.leaf, p.r,
                    p.old_garbage, p.created_garbage);
      p.r.dirty.release();  // written back; freed here, not all at once when the merge ends
    };
    if (!stepped) {
      workers->run(np, merge_workers(), flush_part);
      for (auto& p : parts) cdp::append_piece(next, p.piece);
    }
    for (std::size_t i = 0; stepped && i < np; ++i) {
      flush_part(i);
      cdp::append_piece(next, parts[i].piece);
      co_yield cdp::Steps::kPause;
    }
    u64 count = 0;
    MergeCounters mc;
    for (auto& p : parts) {
      count += p.r.count;
      mc += p.r.counters;
      garbage += p.old_garbage.size() + p.created_garbage.size();
    }
    // Line 13: the inner index rebuilt and published atomically. A merge in steps builds it in
    // a step of its own (0.4-2.5 ms at 2^27 records) before the step that publishes it.
    std::unique_ptr<cdp::BaseSnapshot> made(cdp::snapshot_of(bcx, std::move(next), nv, count));
    if (stepped) co_yield cdp::Steps::kPause;
    gp_b.store(made.release(), std::memory_order_seq_cst);
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
    for (auto& p : parts) rp.push_back(&p.r);
    abort_merge(cx, &root->base, rp);
    throw;
  }
  // Line 16: the leaves each partition replaced, the old ones from the last back, then the
  // created ones no chain kept (range_garbage); no walk of either list. A merge in steps frees
  // kFreesPerStep a step. Each partition's list is dropped once freed: the blocks of every
  // partition (9,600 at 2^27 records) left to the array's destruction took 3.5-6.9 ms there.
  {
    planned_steps.fetch_add(garbage / kFreesPerStep, std::memory_order_relaxed);
    std::size_t done = 0;
    for (const bool made : {false, true}) {
      for (std::size_t j = 0; j < np; ++j) {
        Partition& p = made ? parts[j] : parts[np - 1 - j];
        std::vector<u64>& slots = made ? p.created_garbage : p.old_garbage;
        for (const u64 slot : slots) {
          if (stepped && done % kFreesPerStep == 0) co_yield cdp::Steps::kPause;
          ++done;
          cdp::PhaseScope ph(CDPTreePhase::garbage_collection);
          dir->free_owned(slot);
        }
        std::vector<u64>().swap(slots);  // `slots = {}` would keep the block
      }
    }
    if (stepped) co_yield cdp::Steps::kPause;
    cdp::PhaseScope ph(CDPTreePhase::garbage_collection);
    end_collection(&root->base, *pending);
    freed += done;
  }
  if (stepped) co_yield cdp::Steps::kPause;
  m->log.release();  // the Middle's log: its pages to the freelist of the next flavor
  if (stepped) co_yield cdp::Steps::kPause;
  delete old;
  // The partitions' array (3.5 MB at 2^27 records) in a step of its own: 0.1-0.3 ms there
  // once their own blocks are gone.
  if (stepped) co_yield cdp::Steps::kPause;
  std::vector<Partition>().swap(parts);
}

}  // namespace dptree
