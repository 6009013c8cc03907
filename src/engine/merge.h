// The crash-consistent merge of §2.3 (Algorithms 1-3), cut so that it runs over a RANGE of
// consecutive base leaves (the partitions of §3.3, Algorithm 9) as well as over the whole
// tree:
//
//   begin_merge      set and persist in_merge (Algorithm 1 line 2), start pendingLeaves (its
//                    first block comes with the first new leaf)
//   merge_range      phases 1-3 (upsert merge with splits at FR, delete merge, consolidation
//                    below CT) on one range, given the sorted buffer entries of its key range
//   flush_range      phase 4: write back what the range changed, no fence
//   commit_merge     head and base count of version nv, the fence, the version flip (phase 6)
//                    that also sets kInGc
//   collect_garbage  phase 7: L_cv - L_nv walked backwards, leaves created but not kept,
//                    then pendingLeaves destroyed and kInGc cleared (idempotent: recovery
//                    re-runs it)
//   abort_merge      a merge that failed (pool_full) is undone online: created leaves freed,
//                    in_merge cleared; version cv was never touched
//   reclaim_interrupted_merge  Algorithm 4 lines 2-4 (also the core of abort_merge)
//   finish_interrupted_merge   Algorithm 4 lines 2-5, for both trees' recovery
//
// merge_range and flush_range keep all their state in the RangeMerge they are given and use
// only thread-safe services (allocator, OwnerDir, PendingLeaves), so different ranges may run
// on different threads. A parallel merge: begin_merge; merge_range per partition; link each
// partition's tail (next of version nv) to the following partition's head; flush_range per
// partition; commit_merge with the first head and the summed counts; collect_garbage.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "engine/base_leaf.h"
#include "engine/dirty_leaves.h"
#include "engine/owner_dir.h"
#include "format/layout.h"

namespace dptree::pm {
class Pool;
}

namespace dptree::detail {

// in_place: §2.3. out_of_place: the paper's Figure 8d comparison, every merge writes the
// whole range anew (all entries, packed into new leaves); the old leaves become garbage.
using dptree::MergeMode;
using dptree::SplitMode;

// What every range of one merge shares, read-only.
struct MergeContext {
  pm::Pool& pool;
  OwnerDir& dir;
  PendingLeaves& pending;
  const LeafLayout& L;
  double fill_rate = 0.7;               // FR
  double consolidate_threshold = 0.34;  // CT
  MergeMode mode = MergeMode::in_place;
  u64 restart_count = 0;
  int cv = 0, nv = 1;
  // rebuild: Algorithm 2 as written (the default here, so callers that do not set it keep
  // it); keep_last: a split keeps the old leaf for the last part of its range; thirds: a
  // split rewrites the leaf with the next one of its range (merge.cc).
  SplitMode split = SplitMode::rebuild;
  // keep_last only: split a leaf one merge early (merge.cc). Off for a merge retried after
  // pool_full: an early split takes a new leaf that an in-place merge would not need.
  bool split_early = true;
  // The concurrent DPTree's §3.4 delete in place leaves kTombstone as a base value: in the
  // leaves this names (empty: none), such entries are dropped from version nv.
  std::function<bool(u64 leaf)> may_hold_tombstone = {};

  Leaf leaf(u64 off) const;
};

struct MergeCounters {
  std::size_t splits = 0, consolidations = 0, created = 0;
  std::size_t lazy_rebuilds = 0;     // leaves whose metadata the merge rebuilt (§2.2)
  std::size_t kept_splits = 0;       // splits that kept the old leaf (SplitMode::keep_last)
  std::size_t pair_splits = 0;       // splits of a leaf with its neighbour (SplitMode::thirds)
  std::size_t pair_leaves_kept = 0;  // old leaves those kept (0, 1 or 2 each)
  MergeCounters& operator+=(const MergeCounters& o) {
    splits += o.splits;
    kept_splits += o.kept_splits;
    pair_splits += o.pair_splits;
    pair_leaves_kept += o.pair_leaves_kept;
    lazy_rebuilds += o.lazy_rebuilds;
    consolidations += o.consolidations;
    created += o.created;
    return *this;
  }
};

struct RangeMerge {
  // Input: `nleaves` consecutive leaves of version cv from `first_cv` (nleaves = 0 only for
  // an empty base tree). first_range / last_range: whether the range starts / ends the leaf
  // list (the last range's last leaf has max key 2^64-1; only there an empty leaf is dropped).
  u64 first_cv = 0;
  std::size_t nleaves = 0;
  bool first_range = true, last_range = true;
  // nleaves = 0: the max key of the last leaf made for the range's entries. An empty base may
  // be merged in several such ranges, each of consecutive entries, every one but the last
  // ending at its last entry's key; the caller then makes the tree's last leaf's max key
  // 2^64-1.
  u64 last_max = ~u64{0};
  // Output of merge_range: the version nv chain head..tail of the range (head null: the range
  // is empty: the whole tree, or a range of an empty base that holds only tombstones). tail's next
  // (version nv) is `end`, the cv successor of the range: the caller relinks it to the next range's
  // head.
  LeafPtr head;  // the word a caller links the range by
  u64 tail = 0, end = 0;
  u64 count = 0;      // live entries in the chain
  DirtyLeaves dirty;  // what phase 4 writes back
  MergeCounters counters;
};

// Algorithm 1 line 2: persist in_merge, then start pendingLeaves (empty: the first new leaf
// creates its first block, and may throw pool_full there).
void begin_merge(pm::Pool& pool, Root* root, PendingLeaves& pending);
// Phases 1-3 on one range. `es` holds the buffer's entries (tombstones included) with keys
// in the range: above the previous range's last max key, at most this range's last max key.
// May throw pool_full.
void merge_range(const MergeContext& cx, RangeMerge& r, std::span<const KVPair> es);
// Phase 4 on a range merged by merge_range (after the caller relinked the tails).
void flush_range(const MergeContext& cx, RangeMerge& r);
// Phase 4's last words and phase 6: head[nv], base_count[nv], fence, gv = nv | kInGc persisted.
void commit_merge(Root* root, int nv, LeafPtr head, u64 count);
// The next word of a leaf in version v: the leaf formats differ (layout.h, string_leaf.h),
// the garbage collection over their lists does not. Every leaf's first word is its owner slot.
using LeafNext = std::function<u64(u64 leaf, int v)>;
LeafNext leaf_next(const pm::Pool& pool, const LeafLayout& L);

// Phase 7. Returns the number of leaves freed. Run again after a crash, it frees only blocks
// that are still leaves: a concurrent writer's log page may hold a slot or block freed before.
std::size_t collect_garbage(pm::Pool& pool, Root* root, OwnerDir& dir, PendingLeaves& pending,
                            const LeafNext& next, int old, int cur);
inline std::size_t collect_garbage(pm::Pool& pool, Root* root, OwnerDir& dir,
                                   PendingLeaves& pending, const LeafLayout& L, int old, int cur) {
  return collect_garbage(pool, root, dir, pending, leaf_next(pool, L), old, cur);
}
// Phase 7 right after a merge, whose caller holds both lists in DRAM: `old_list` the leaves of
// the old version in list order (the inner index before the merge) and `cur_list` those of the
// new one. It frees what the walking form frees, in the same order, without walking either list
// in PM (a miss per leaf, three per old leaf). Recovery uses the walking form.
std::size_t collect_garbage(pm::Pool& pool, Root* root, OwnerDir& dir, PendingLeaves& pending,
                            std::span<const u64> old_list, std::span<const u64> cur_list);
// Phase 7 computed per range of a merge run in ranges, by the thread that merged it: the
// owner slots of the range's old leaves (`old_leaves`, in list order) that its new chain
// (`new_leaves`) lacks, last first, into old_slots, and of the leaves the range created that
// the chain lacks, into created_slots. A range's chain holds only its own old leaves and the
// ones it created. Freeing the ranges' old_slots from the last range back, then every
// created_slots, then end_collection, frees what collect_garbage frees in its order (so a
// crash between frees is finished by recovery as any crash in phase 7); a merge in steps
// frees a few at a time.
void range_garbage(const pm::Pool& pool, std::span<const u64> old_leaves,
                   std::span<const u64> new_leaves, const RangeMerge& r,
                   std::vector<u64>& old_slots, std::vector<u64>& created_slots);
// Phase 7's end: pendingLeaves destroyed, then kInGc cleared and persisted.
void end_collection(Root* root, PendingLeaves& pending);
// Undoes a merge that threw: writes back the version nv metadata the ranges changed (so a
// later merge may trust its "durable" copies), frees the created leaves, clears in_merge.
void abort_merge(const MergeContext& cx, Root* root, std::span<RangeMerge* const> ranges);
// Algorithm 4 lines 2-4: frees the leaves pendingLeaves records (not a log page that took a
// slot freed by an earlier run), destroys it, clears in_merge.
void reclaim_interrupted_merge(pm::Pool& pool, Root* root, OwnerDir& dir, PendingLeaves& pending);
// Algorithm 4 lines 2-5: reclaims a merge the crash interrupted before its flip, or finishes
// the garbage collection of one interrupted after it (kInGc; or pendingLeaves left by a pool
// written before that bit). Returns the number of leaves freed.
std::size_t finish_interrupted_merge(pm::Pool& pool, Root* root, OwnerDir& dir,
                                     PendingLeaves& pending, const LeafNext& next);
inline std::size_t finish_interrupted_merge(pm::Pool& pool, Root* root, OwnerDir& dir,
                                            PendingLeaves& pending, const LeafLayout& L) {
  return finish_interrupted_merge(pool, root, dir, pending, leaf_next(pool, L));
}

}  // namespace dptree::detail
