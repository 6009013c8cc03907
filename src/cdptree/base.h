// Concurrent reads of the base tree (DPTree paper §3.2, §3.4). The merge never modifies the
// version readers use (§2.3), so readers need no lock, with two exceptions handled here:
//   - the partially persistent metadata of a leaf (count, order, fingerprints) is rebuilt
//     after a restart by the first reader or merge worker that touches the leaf (§2.2); it
//     takes the lock bit of the leaf's restart counter (§3.2, "Synchronization for Metadata
//     Rebuild"), the others wait for it. The lock word is stamped with the restart count it
//     was taken under, so a lock bit left by a crash belongs to an older restart and is void:
//     this clears every lock bit on recovery without touching the leaves;
//   - §3.4 writes a value in place: values are read and written as 8-byte atomics. A delete
//     in place writes the tombstone (kTombstone) over the value: readers take such an entry
//     as absent, and the next merge drops it (engine/merge.h, MergeContext::may_hold_tombstone);
//     the snapshot counts and marks these leaves so that merge reads only them.
// The inner index is an immutable snapshot (max keys and leaves of one version) published
// through GP_B and retired once no reader holds it (W_BR).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/base_leaf.h"
#include "engine/key_search.h"
#include "format/layout.h"

namespace dptree::pm {
class Pool;
}

namespace dptree::cdp {

using detail::KVPair;
using detail::Leaf;
using detail::LeafLayout;
using detail::u64;

inline constexpr u64 kRcLock = u64{1} << 63;  // lock bit of a leaf's restart counter

struct BaseSnapshot {
  int v = 0;                   // the version its leaves are read in
  std::vector<u64> max, leaf;  // max key and offset of every leaf, in order
  u64 count = 0;               // keys (Root::base_count of the version), tombstones included
  // §3.4 deletes in place on this snapshot: how many, and which leaves got one. After a
  // restart, tombstones written before it may be in any leaf (any_leaf_tombstoned).
  std::atomic<u64> tombstones{0};
  std::unique_ptr<std::atomic<bool>[]> tombstoned;
  bool any_leaf_tombstoned = false;
  // leaf[i]'s partially persistent metadata is current (§2.2): read from the line of its max
  // key when the snapshot is made, set by the first reader that rebuilds it, so a lookup
  // reads the restart counter of a leaf once per run, not once per lookup.
  std::unique_ptr<std::atomic<std::uint8_t>[]> fresh;
  detail::KeySearch search;  // over max, built once the snapshot is complete
  std::size_t index_of(u64 k) const { return search.find(k, leaf.data()); }
  u64 live() const { return count - std::min<u64>(count, tombstones.load()); }
};

struct BaseCtx {
  pm::Pool& pool;
  const LeafLayout& L;
  const u64& restart_count;  // Root::restart_count
  std::atomic<std::size_t>& rebuilds;
  bool restarted = false;  // no merge since the restart: the base may hold old tombstones
  Leaf leaf(u64 off) const;
};

// One merge partition's part of the next snapshot: its leaves of version v in order, their
// max keys and whether their metadata is current, read by the thread that merged and flushed
// them while their lines are in its cache (no walk of the whole chain at the end of a merge).
struct SnapshotPiece {
  std::vector<u64> leaf, max;
  std::vector<std::uint8_t> fresh;
};
// The chain of version v from `head` to `tail` (both included), into `p`.
void read_piece(const BaseCtx& cx, u64 head, u64 tail, int v, SnapshotPiece& p);
// `p` appended to `all` (the pieces of one merge, taken in key order), and emptied.
void append_piece(SnapshotPiece& all, SnapshotPiece& p);
// The snapshot of `count` keys over all the pieces (their vectors moved into it); of no
// pieces, a new tree's empty base.
BaseSnapshot* snapshot_of(const BaseCtx& cx, SnapshotPiece&& all, int v, u64 count);
// Recovery's snapshot (Algorithm 4, after line 7): `leaves` and their max keys as the
// open-time check read them (validate.h), no leaf read again. No leaf's metadata is current:
// the check refused a restart counter above the root's, and recovery has just raised it.
BaseSnapshot* recovered_snapshot(const BaseCtx& cx, std::vector<u64> leaves, std::vector<u64> max,
                                 int v, u64 count);
// §3.4: whether leaf `i` of the snapshot may hold a tombstone written in place.
inline bool may_hold_tombstone(const BaseSnapshot& s, std::size_t i) {
  return s.any_leaf_tombstoned || s.tombstoned[i].load(std::memory_order_relaxed);
}
// §3.2: rebuilds the leaf's metadata of version v under its lock bit if its restart counter
// lags; returns once the metadata is current.
void ensure_meta(const BaseCtx& cx, Leaf lf, int v);
// The value of k (raw: kTombstone if it was deleted in place).
std::optional<u64> base_lookup(const BaseCtx& cx, const BaseSnapshot& s, u64 k);
// Appends up to n entries with key >= start in order; returns true when the tree has no
// more entries after those appended.
bool base_collect(const BaseCtx& cx, const BaseSnapshot& s, u64 start, std::size_t n,
                  std::vector<KVPair>& out);
// §3.4: if k is live in the base tree (present, not deleted in place), writes v over its
// value with one failure-atomic 8-byte store and persists it; returns whether it did.
// v = kTombstone deletes k in place (counted and marked in the snapshot first).
bool base_update_in_place(const BaseCtx& cx, BaseSnapshot& s, u64 k, u64 v);

}  // namespace dptree::cdp
