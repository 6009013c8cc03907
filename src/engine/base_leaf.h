// One base-tree leaf (§2.2, Figure 3): operations on a Leaf view (layout.h) of one version's
// metadata (2-bit bitmap, next, max key, restart counter; count, order array, fingerprints)
// and the key-value pool, organised by hashing with linear probing.
//
// Every function touches only the leaf it is given (and counts what it persists on the
// calling thread), so merge workers may run them on different leaves at once (§3.3).
// Reading a leaf whose metadata may be stale after a restart goes through ensure_leaf_meta
// first (partial persistence, §2.2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "dptree/dptree_options.h"
#include "format/layout.h"

namespace dptree::detail {

using KVPair = std::pair<u64, u64>;

// How a lookup searches a leaf (dptree_options.h, the paper's Figure 10, §4.3):
//   both        : hash to the home slot, probe linearly, compare the one-byte fingerprint
//                 before reading a key (DPTree's scheme, §2.2)
//   linear      : the same probe sequence, reading every probed key (no fingerprints)
//   fingerprint : FPTree style: scan the fingerprints of every occupied slot, read the keys
//                 whose fingerprint matches (no use of the hash position)
using dptree::ProbeMode;

// The hash's top byte, moved off the two codes an empty or deleted slot's byte holds.
inline std::uint8_t fingerprint_of(u64 hash) {
  const auto f = static_cast<std::uint8_t>(hash >> 56);
  return f <= kFpDeleted ? static_cast<std::uint8_t>(f + 2) : f;
}
inline std::size_t home_slot(u64 hash, std::size_t cap) {
  return static_cast<std::size_t>(hash % cap);
}

// Rebuilds count, order and fingerprints of version v from the bitmap and the pool.
void rebuild_leaf_meta(Leaf lf, int v);
// The first empty or deleted slot of version v whose fingerprint byte is not its state's
// code (kFpEmpty, kFpDeleted), which a probe relies on; -1 when there is none.
long leaf_bad_fp_code(Leaf lf, int v);
// Partial persistence (§2.2, Algorithm 2 lines 2-4): if the leaf's restart counter of
// version v lags `restart_count`, rebuilds and persists the counter. True if it rebuilt.
bool ensure_leaf_meta(Leaf lf, int v, u64 restart_count);

// Slot of key k in version v, or -1; `h` is hash_key(k).
long leaf_find(Leaf lf, int v, u64 k, u64 h, ProbeMode mode = ProbeMode::both);
inline long leaf_find(Leaf lf, int v, u64 k, ProbeMode mode = ProbeMode::both) {
  return leaf_find(lf, v, k, hash_key(k), mode);
}
// Prefetches what leaf_find(lf, v, k, h, mode) reads first: the home block's fingerprints
// (its bitmap word for the linear scheme) and the home slot's entry. A lookup then waits
// for one miss, not two.
void leaf_prefetch(Leaf lf, int v, u64 h, ProbeMode mode = ProbeMode::both);
// Position in version v's order array of the first key >= k.
std::size_t leaf_lower_bound(Leaf lf, int v, u64 k);
// Requests the entry at position i of version v's order array (none past its count). A scan
// reads entries in key order from slots the hash chose, a miss each; requesting them this
// many positions ahead of the one it reads lets their misses overlap.
inline constexpr std::size_t kScanAhead = 8;
// A scan's batches of base entries after its first (which asks for exactly what the scan
// wants): at least this many, so that removed keys hiding base entries cost few rounds.
inline constexpr std::size_t kScanBatchFloor = 16;
inline void leaf_prefetch_at(Leaf lf, int v, std::size_t i) {
  if (i < lf.count(v)) __builtin_prefetch(lf.entry(lf.order(v)[i]));
}
// The entries at positions from .. from + n - 1: where a scan starts in a leaf.
inline void leaf_prefetch_from(Leaf lf, int v, std::size_t from, std::size_t n = kScanAhead) {
  for (std::size_t i = from; i < from + n; ++i) leaf_prefetch_at(lf, v, i);
}
// Requests the lines of version v's count and order array as a full leaf has them. The count
// shares its line with the array's start, so a scan that requests both before reading the
// count waits for one miss where reading the count first and then the array took two.
inline void leaf_prefetch_order(Leaf lf, int v) {
  const std::byte* b = lf.p + lf.L->meta_v[v];  // line-aligned (LeafLayout)
  for (std::size_t off = 0; off < 8 + 2 * lf.L->cap; off += 64) __builtin_prefetch(b + off);
}
// Appends version v's entries at order positions pos, pos + 1, ... to out, at most n of them,
// and returns how many: a scan's loop over one leaf, in both trees. Each read requests the
// entry kScanAhead positions on, so the misses of the hashed slots overlap; past the leaf's
// last positions that is the first entries of `next` (the leaf the scan reads after this one,
// whose order array the caller requested; null when the scan ends in this leaf), so a scan
// that crosses a leaf does not wait for the next leaf's first entries one at a time.
// `value_of(slot)` reads a slot's value (the concurrent tree loads it with acquire: it is
// updated in place).
template <class ValueOf>
std::size_t leaf_collect(Leaf lf, int v, std::size_t pos, std::size_t n, std::vector<KVPair>& out,
                         ValueOf value_of, const Leaf* next = nullptr) {
  const std::size_t cnt = lf.count(v), end = cnt - pos < n ? cnt : pos + n;
  if (pos >= end) return 0;
  const std::uint16_t* order = lf.order(v);
  leaf_prefetch_from(lf, v, pos);
  for (std::size_t i = pos; i < end; ++i) {
    if (i + kScanAhead < cnt)
      __builtin_prefetch(lf.entry(order[i + kScanAhead]));
    else if (next)
      leaf_prefetch_at(*next, v, i + kScanAhead - cnt);
    const std::size_t slot = order[i];
    out.emplace_back(lf.key(slot), value_of(slot));
  }
  return end - pos;
}
// A scan's walk over a leaf list, in both trees: from leaf `li` of `nleaves` (the one whose
// range holds start), appends version v's entries from the first key >= start to out, at most
// n. `leaf_at(i)` gives leaf i with its metadata current; `value_of(leaf, slot)` reads a value.
// True when the entries reach the end of the list (fewer than n may then be appended); false
// when n were appended and more may follow. When the scan will go past a leaf, the next one is
// taken (its metadata made current) as the scan enters this one and its order array is
// requested, so its lines arrive while this leaf is read.
template <class LeafAt, class ValueOf>
bool leaves_collect(std::size_t li, std::size_t nleaves, int v, u64 start, std::size_t n,
                    std::vector<KVPair>& out, LeafAt leaf_at, ValueOf value_of) {
  if (li == nleaves) return true;
  Leaf lf = leaf_at(li);
  std::size_t pos = leaf_lower_bound(lf, v, start);
  for (;;) {
    const std::size_t cnt = lf.count(v), left = pos < cnt ? cnt - pos : 0;
    const bool go_on = n > left && li + 1 < nleaves;
    Leaf next{nullptr, lf.L};
    if (go_on) {
      next = leaf_at(li + 1);
      leaf_prefetch_order(next, v);
    }
    n -= leaf_collect(
        lf, v, pos, n, out, [&](std::size_t s) { return value_of(lf, s); },
        go_on ? &next : nullptr);
    if (n == 0) return false;
    if (++li == nleaves) return true;
    lf = go_on ? next : leaf_at(li);
    pos = 0;
  }
}
// Appends version v's entries to out, in key order.
void leaf_entries(Leaf lf, int v, std::vector<KVPair>& out);
// Slots free for new entries in version nv: free in nv and not holding an entry of 1 - nv.
std::size_t leaf_free_slots(Leaf lf, int nv);

// Fills an empty (zeroed) leaf's version nv with sorted entries (a new leaf, Figure 4).
void leaf_fill(Leaf lf, int nv, std::span<const KVPair> es);
// Algorithm 2 lines 6-8 (Figure 5): upserts sorted entries into version nv out of place:
// each goes into a slot neither version uses, an older slot of the same key is marked
// deleted in nv, the order array is merged. The caller checked there is room. The slots
// written are appended to `written` (in the order written).
void leaf_upsert(Leaf lf, int nv, std::span<const KVPair> es, std::vector<std::uint16_t>& written);
// Algorithm 3: marks the sorted keys ks deleted in version nv and rebuilds its order and
// count. Returns how many were present.
std::size_t leaf_delete(Leaf lf, int nv, std::span<const u64> ks);

// Turns the deleted slots of version v that no probe crosses (none lies between an occupied
// slot's home and the slot) back into empty slots, so lookups of absent keys stop early;
// returns how many. Used by a split that keeps the old leaf (merge.cc), which leaves half
// its slots deleted. Afterwards a slot may be empty in v yet hold an entry of the other
// version; leaf_upsert marks such a slot deleted when it probes past it.
std::size_t leaf_clear_unreached_deleted(Leaf lf, int v);
// Writes back the cache lines holding the given slots (sorted), each line once (no fence).
void flush_leaf_slots(Leaf lf, std::span<const std::uint16_t> slots);
// Writes back the lines holding the slots occupied in version v, each line once (no fence).
// It keeps no list of them: a crash-simulator hook may run a whole merge on this thread
// inside pm::flush (the crash tests recover captured images there), so no thread_local
// scratch may be live across a flush.
void flush_occupied_slots(Leaf lf, int v);
// Writes back every line of version nv's crash-consistent metadata (no fence): a line that
// ends a merge as PM held it passed through other states, and one of them may be in PM.
void flush_leaf_meta(Leaf lf, int nv);

}  // namespace dptree::detail
