// The merge of §2.3 (Algorithms 1-3) over ranges of base leaves; see merge.h.
#include "engine/merge.h"
#include "dptree/testing/phases.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "engine/phase.h"
#include "format/string_leaf.h"

namespace dptree::detail {

Leaf MergeContext::leaf(u64 off) const {
  return Leaf{pool.at(off), &L};
}

namespace {

// The word linking the successor of `prev` inside the range (the range's head for prev = 0).
LeafPtr* link_of(const MergeContext& cx, RangeMerge& r, u64 prev) {
  return prev ? &cx.leaf(prev).next(cx.nv) : &r.head;
}

// Algorithm 2 lines 6-8 on leaf `off`, its written slots noted for phase 4.
void upsert_noted(RangeMerge& r, u64 off, Leaf lf, int nv, std::span<const KVPair> es) {
  thread_local std::vector<std::uint16_t> written;  // per merge worker; leaf_upsert flushes nothing
  written.clear();
  leaf_upsert(lf, nv, es, written);
  r.dirty.wrote(off, written);
}

// A new zeroed leaf, owned by a directory slot recorded in pendingLeaves before the leaf is
// activated (§2.4), so recovery reclaims it if the merge does not commit.
u64 create_leaf(const MergeContext& cx, RangeMerge& r) {
  u64 slot = cx.dir.take_slot();
  u64 off;
  auto& alloc = cx.pool.allocator();
  try {
    pm::CategoryScope cat(pm::Category::alloc);
    off = alloc.reserve(cx.L.bytes);
  } catch (...) {
    cx.dir.return_slot(slot);
    throw;
  }
  pm::fill_bytes(cx.pool.at(off), 0, cx.L.bytes);
  Leaf lf = cx.leaf(off);
  pm::store(&lf.owner_slot(), OwnerSlotPtr(slot));
  pm::store(&lf.type(), kLeafType);
  try {
    cx.pending.add(slot);
  } catch (...) {
    alloc.cancel(off);
    cx.dir.return_slot(slot);
    throw;
  }
  pm::flush(cx.pool.at(off), 64);  // the header line, ordered by activate's first fence
  {
    pm::CategoryScope cat(pm::Category::alloc);
    alloc.activate(cx.pool.get(OwnerSlotPtr(slot))->word(), off);
  }
  r.dirty.created(off);
  ++r.counters.created;
  return off;
}

// Leaves filled at `fill` with es (§2.3, Algorithm 2 line 10), the last with max key
// max_key, linked in version nv in order (the last one's next left to the caller). nleaves
// = 0: as many as the fill rate needs.
std::vector<u64> build_leaves(const MergeContext& cx, RangeMerge& r, std::span<const KVPair> es,
                              u64 max_key, double fill, std::size_t nleaves = 0) {
  const std::size_t n = es.size();
  auto per =
      std::max<std::size_t>(1, static_cast<std::size_t>(fill * static_cast<double>(cx.L.cap)));
  if (!nleaves) nleaves = std::max<std::size_t>(1, (n + per - 1) / per);
  std::vector<u64> out;
  for (std::size_t i = 0; i < nleaves; ++i) {
    std::size_t a = i * n / nleaves, b = (i + 1) * n / nleaves;
    u64 off = create_leaf(cx, r);
    Leaf lf = cx.leaf(off);
    leaf_fill(lf, cx.nv, es.subspan(a, b - a));
    pm::store(&lf.max_key(cx.nv), i + 1 == nleaves ? max_key : es[b - 1].first);
    pm::store(&lf.rc(cx.nv), cx.restart_count);
    out.push_back(off);
    if (i) pm::store(&cx.leaf(out[i - 1]).next(cx.nv), LeafPtr(off));
  }
  return out;
}

// §3.4 (concurrent DPTree): the entries of version nv whose base value is a tombstone
// written in place are marked deleted in nv.
void drop_tombstoned(Leaf lf, int nv) {
  std::vector<u64> ks;
  for (std::size_t i = 0; i < lf.count(nv); ++i) {
    std::size_t s = lf.order(nv)[i];
    if (lf.value(s) & kTombstone) ks.push_back(lf.key(s));
  }
  if (!ks.empty()) leaf_delete(lf, nv, ks);
}

// Merges sorted a and b, b winning on equal keys; tombstones of b remove the key.
void merge_sorted(const std::vector<KVPair>& a, std::span<const KVPair> b,
                  std::vector<KVPair>& out) {
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
      out.push_back(a[i++]);
      continue;
    }
    if (i < a.size() && a[i].first == b[j].first) ++i;
    if (!(b[j].second & kTombstone)) out.push_back(b[j]);
    ++j;
  }
}

// A split that keeps the old leaf `cur` (SplitMode::keep_last). Algorithm 2 would fill k
// new leaves at FR with `all` (cur's entries merged with es) and free cur; here the last
// part of the key range (the last of the k equal parts, or less if the buffer's entries
// there would not fit) stays in cur: version nv of cur drops the keys that moved and takes
// the buffer's entries of its part in free slots, as an in-place merge does (Algorithm 2
// lines 6-8). Only the moved entries and those new entries are written, not every entry of
// cur again. Version cv of cur is untouched (§2.3's principle), so a crash finds it as it
// was; cur stays in L_nv, so garbage collection keeps it. False (nothing changed) when
// Algorithm 2 would create one leaf or cur would keep no more than CT; the caller then
// splits as Algorithm 2 does.
bool split_keep_last(const MergeContext& cx, RangeMerge& r, u64 prev, u64 cur,
                     std::span<const KVPair> es, const std::vector<KVPair>& all) {
  const int nv = cx.nv;
  const double cap = static_cast<double>(cx.L.cap);
  Leaf lf = cx.leaf(cur);
  auto per = std::max<std::size_t>(1, static_cast<std::size_t>(cx.fill_rate * cap));
  const std::size_t k = (all.size() + per - 1) / per;
  if (k < 2) return false;
  // Balanced as in Algorithm 2 (the last of k equal parts stays), moved right if the buffer
  // entries of that part do not fit in cur's free slots (Algorithm 2 line 6's test).
  std::size_t a = (k - 1) * all.size() / k;
  // Free: not holding an entry of version cv (a slot dropped from nv is still cv's).
  const std::size_t fits = lf.count(cx.cv) + 1 < cx.L.cap ? cx.L.cap - lf.count(cx.cv) - 1 : 0;
  if (es.size() > fits) {
    u64 last_moved = es[es.size() - fits - 1].first;
    auto at = std::lower_bound(all.begin(), all.end(), last_moved,
                               [](const KVPair& e, u64 key) { return e.first < key; });
    a = std::max(a, static_cast<std::size_t>(at - all.begin()) + 1);
  }
  // cur must keep more than CT (or consolidation would rewrite it at once).
  auto ct = static_cast<std::size_t>(cx.consolidate_threshold * cap);
  if (a >= all.size() || all.size() - a <= ct) return false;
  const u64 split_key = all[a - 1].first;
  auto rest = std::upper_bound(es.begin(), es.end(), split_key,
                               [](u64 key, const KVPair& e) { return key < e.first; });
  auto nl = build_leaves(cx, r, std::span(all).first(a), split_key, cx.fill_rate);
  std::vector<u64> moved;
  for (std::size_t i = 0; i < lf.count(nv); ++i) {
    u64 key = lf.key(lf.order(nv)[i]);
    if (key > split_key) break;
    moved.push_back(key);
  }
  leaf_delete(lf, nv, moved);
  upsert_noted(r, cur, lf, nv, std::span(rest, es.end()));
  leaf_clear_unreached_deleted(lf, nv);  // in the bitmap line written back anyway
  pm::store(link_of(cx, r, prev), LeafPtr(nl.front()));
  // cur's next and max key (version nv) stay.
  pm::store(&cx.leaf(nl.back()).next(nv), LeafPtr(cur));
  ++r.counters.splits;
  ++r.counters.kept_splits;
  note_kept_split();
  return true;
}

// The next leaf of a range, which a split=thirds split takes with the leaf before it.
struct PairInput {
  u64 leaf = 0;                  // none: the leaf splits alone
  std::span<const KVPair> rest;  // the buffer's entries from that leaf's key range on
  bool taken = false;            // out: split with it (split_pair)
  std::size_t used = 0;          // out: the entries of rest that were its
};

// What a leaf kept by a pair split changes in its version nv to hold `part` (a run of the
// pair's merged entries): the keys it holds outside the run go (`out`), the run's entries it
// does not hold with that value come in (`in`), each sorted. `has`: its entries now.
struct KeptPart {
  std::vector<u64> out;
  std::vector<KVPair> in;
};
KeptPart kept_part(std::span<const KVPair> has, std::span<const KVPair> part) {
  KeptPart kp;
  const u64 lo = part.front().first, hi = part.back().first;
  for (const KVPair& e : has)
    if (e.first < lo || e.first > hi) kp.out.push_back(e.first);
  auto h = has.begin();
  for (const KVPair& e : part) {
    while (h != has.end() && h->first < e.first) ++h;
    if (h == has.end() || h->first != e.first || h->second != e.second) kp.in.push_back(e);
  }
  return kp;
}

// Slots a kept leaf may take new entries in this merge: those no entry of version cv holds,
// less one left empty (as split_keep_last).
std::size_t kept_room(Leaf lf, int cv) {
  const std::size_t c = lf.count(cv), cap = lf.L->cap;
  return c + 1 < cap ? cap - c - 1 : 0;
}

// Version nv of a kept leaf (its metadata already copied from cv): `kp` applied as an
// in-place merge applies its entries (Algorithm 2 lines 6-8), new entries in slots neither
// version uses; the deleted slots no probe crosses are emptied (as split_keep_last).
void apply_kept_part(RangeMerge& r, u64 off, Leaf lf, int nv, const KeptPart& kp) {
  r.dirty.touched(off);
  if (!kp.out.empty()) leaf_delete(lf, nv, kp.out);
  if (!kp.in.empty()) upsert_noted(r, off, lf, nv, kp.in);
  leaf_clear_unreached_deleted(lf, nv);
}

// split=thirds: a leaf that must split is split together with `nxt`, the next leaf of its
// range: the two leaves' entries and their buffer entries (`all`) are cut into k equal parts
// filled at FR, three of about two-thirds when the two hold nearly two leaves' worth, two
// when the neighbour has room. A split in halves leaves two half-full leaves beside a
// neighbour that splits in halves soon after (the leaves of a range fill at the same rate);
// three of two-thirds start fuller.
//
// The old leaves are kept where they can be, as split_keep_last keeps one: cur takes the
// first part and nxt the last, each in its version nv only (the keys that leave are marked
// deleted, the entries that come go into slots neither version uses, as Algorithm 2 lines
// 6-8 put a merge's entries); the other parts go to new leaves, recorded in pendingLeaves.
// Version cv of a kept leaf is untouched and it stays in L_nv, so a crash finds version cv
// as it was and the garbage collection keeps it (§2.3's argument for the in-place merge). A
// leaf whose free slots cannot take its part's new entries is not kept: its part goes to a
// new leaf too, and the leaf leaves L_nv and is freed by the collection (Algorithm 2's split).
//
// `es` holds cur's buffer entries (no tombstone); `rest` the buffer's entries from nxt's key
// range on, tombstones included (the delete merge applies them afterwards). Returns the
// range's last leaf so far and sets `used` to the entries of `rest` that were nxt's.
u64 split_pair(const MergeContext& cx, RangeMerge& r, u64 prev, u64 cur, u64 nxt,
               std::span<const KVPair> es, std::span<const KVPair> rest, std::size_t& used) {
  const int cvv = cx.cv, nv = cx.nv;
  Leaf lf = cx.leaf(cur), nl = cx.leaf(nxt);
  r.counters.lazy_rebuilds += ensure_leaf_meta(nl, cvv, cx.restart_count);
  const u64 mk = nl.max_key(cvv);
  used = static_cast<std::size_t>(
      std::upper_bound(rest.begin(), rest.end(), mk,
                       [](u64 key, const KVPair& e) { return key < e.first; }) -
      rest.begin());
  // Both leaves' entries (cur's version nv: cv's less dropped tombstones; nxt's version cv
  // less its tombstones, what its version nv would hold), then both leaves' buffer entries.
  std::vector<KVPair> has_cur, has_nxt, old, add, all;
  leaf_entries(lf, nv, has_cur);
  leaf_entries(nl, cvv, has_nxt);
  const bool tomb = cx.may_hold_tombstone && cx.may_hold_tombstone(nxt);
  if (tomb)
    has_nxt.erase(std::remove_if(has_nxt.begin(), has_nxt.end(),
                                 [](const KVPair& e) { return (e.second & kTombstone) != 0; }),
                  has_nxt.end());
  old = has_cur;
  old.insert(old.end(), has_nxt.begin(), has_nxt.end());
  add.assign(es.begin(), es.end());
  for (const KVPair& e : rest.first(used))
    if (!(e.second & kTombstone)) add.push_back(e);
  all.reserve(old.size() + add.size());
  merge_sorted(old, add, all);
  const std::size_t n = all.size();
  const auto per = std::max<std::size_t>(
      1, static_cast<std::size_t>(cx.fill_rate * static_cast<double>(cx.L.cap)));
  const std::size_t k = std::max<std::size_t>(2, (n + per - 1) / per);
  // Part i is all[i n / k, (i + 1) n / k), as build_leaves cuts.
  const std::size_t first_end = n / k, last_begin = (k - 1) * n / k;
  const std::span<const KVPair> whole(all);
  KeptPart kc = kept_part(has_cur, whole.first(first_end));
  KeptPart kn = kept_part(has_nxt, whole.subspan(last_begin));
  const bool keep_cur = first_end > 0 && kc.in.size() <= kept_room(lf, cvv);
  const bool keep_nxt = last_begin < n && kn.in.size() <= kept_room(nl, cvv);
  ++r.counters.splits;
  ++r.counters.pair_splits;
  r.counters.pair_leaves_kept += keep_cur + keep_nxt;
  note_pair_split();
  // The parts of new leaves: all but the first if cur stays, all but the last if nxt stays.
  const std::size_t from = keep_cur ? first_end : 0, to = keep_nxt ? last_begin : n;
  std::vector<u64> out;
  if (from < to)
    out = build_leaves(cx, r, whole.subspan(from, to - from), keep_nxt ? all[to - 1].first : mk,
                       cx.fill_rate, k - keep_cur - keep_nxt);
  // What follows the new leaves (or cur, when none) in version nv.
  const LeafPtr after = keep_nxt ? LeafPtr(nxt) : nl.next(cvv);
  if (!out.empty()) pm::store(&cx.leaf(out.back()).next(nv), after);
  const LeafPtr first_new = out.empty() ? after : LeafPtr(out.front());
  if (keep_cur) {
    apply_kept_part(r, cur, lf, nv, kc);  // cur's metadata nv: copied by the caller
    pm::store(&lf.max_key(nv), all[first_end - 1].first);
    pm::store(&lf.next(nv), first_new);
  } else {
    pm::store(link_of(cx, r, prev), first_new);
  }
  if (!keep_nxt) return out.back();
  nl.copy_meta(cvv, nv);
  if (tomb) drop_tombstoned(nl, nv);
  apply_kept_part(r, nxt, nl, nv, kn);
  return nxt;  // its next and max key of version nv: cv's, copied
}

// Algorithm 2: LeafUpsertMerge. es holds no tombstone. Returns the range's last leaf so far.
u64 leaf_upsert_merge(const MergeContext& cx, RangeMerge& r, u64 prev, u64 cur,
                      std::span<const KVPair> es, PairInput& pair) {
  const int cvv = cx.cv, nv = cx.nv;
  Leaf lf = cx.leaf(cur);
  // Phase 4 writes all of version nv's crash-consistent metadata back, even a line that ends
  // as PM held it: the stores below pass it through other states, and a line evicted in one
  // of them would keep it after the flip if it were not written back again.
  r.dirty.touched(cur);
  lf.copy_meta(cvv, nv);  // line 1 (rc is current: the caller ran ensure_leaf_meta on cv)
  std::size_t freeslots = cx.L.cap - lf.count(nv);
  // After freeslots: a dropped slot is still version cv's, not free.
  if (cx.may_hold_tombstone && cx.may_hold_tombstone(cur)) drop_tombstoned(lf, nv);
  // keep_last splits a leaf one merge early: when this merge would leave it fewer free
  // slots than half its entries from the buffer, the next merge (bringing about as many)
  // could not keep it (split_keep_last needs the buffer entries of the kept half to fit).
  const bool fits = es.size() < freeslots;
  const bool keep = cx.split == SplitMode::keep_last;
  if (fits && (!keep || !cx.split_early || 2 * (freeslots - es.size()) >= es.size())) {
    if (!es.empty()) upsert_noted(r, cur, lf, nv, es);  // Algorithm 2 lines 6-8
    return cur;
  }
  if (cx.split == SplitMode::thirds && pair.leaf) {
    pair.taken = true;
    return split_pair(cx, r, prev, cur, pair.leaf, es, pair.rest, pair.used);
  }
  // Split (Figure 4): the leaf's entries merged with es (es wins) into new leaves at FR.
  std::vector<KVPair> old, all;
  leaf_entries(lf, nv, old);  // version cv's entries (copied above) less dropped tombstones
  all.reserve(old.size() + es.size());
  merge_sorted(old, es, all);
  if (keep && split_keep_last(cx, r, prev, cur, es, all)) return cur;
  if (fits) {  // an early split that could not keep the leaf: merge in place after all
    upsert_noted(r, cur, lf, nv, es);
    return cur;
  }
  auto nl = build_leaves(cx, r, all, lf.max_key(cvv), cx.fill_rate);
  pm::store(link_of(cx, r, prev), LeafPtr(nl.front()));
  pm::store(&cx.leaf(nl.back()).next(nv), lf.next(cvv));
  ++r.counters.splits;
  return nl.back();
}

// Phase 3 inside the range: leaves below CT are merged into the next leaf when it has room,
// otherwise the two are rebuilt as two leaves of about equal occupancy (§2.3). A range's
// last leaf has no next leaf in the range and stays (dropped when empty at the tree's end).
void consolidate(const MergeContext& cx, RangeMerge& r) {
  const int nv = cx.nv;
  auto ct = static_cast<std::size_t>(cx.consolidate_threshold * static_cast<double>(cx.L.cap));
  u64 prev = 0, cur = r.head.off;
  while (cur && cur != r.end) {
    Leaf lf = cx.leaf(cur);
    u64 nxt = lf.next(nv).off;
    std::size_t c = lf.count(nv);
    if (c >= ct) {
      prev = cur;
      cur = nxt;
      continue;
    }
    if (nxt == r.end) {
      if (c == 0 && r.last_range && (prev || r.first_range)) {
        // An empty last leaf: drop it, its predecessor takes the key range.
        pm::store(link_of(cx, r, prev), LeafPtr(nxt));
        if (prev) pm::store(&cx.leaf(prev).max_key(nv), lf.max_key(nv));
        ++r.counters.consolidations;
      }
      break;
    }
    std::vector<KVPair> es;
    leaf_entries(lf, nv, es);
    Leaf nl = cx.leaf(nxt);
    if (c == 0 || c < leaf_free_slots(nl, nv)) {
      if (c) {
        // Written back now, no fence (like the delete merge): the same write-back as in
        // phase 4, only earlier, so a crash inside consolidation finds it under way.
        std::vector<std::uint16_t> written;
        leaf_upsert(nl, nv, es, written);
        std::sort(written.begin(), written.end());
        flush_leaf_slots(nl, written);
      }
      pm::store(link_of(cx, r, prev), LeafPtr(nxt));
      ++r.counters.consolidations;
      cur = nxt;
      continue;
    }
    leaf_entries(nl, nv, es);
    auto two = build_leaves(cx, r, es, nl.max_key(nv), cx.fill_rate, 2);
    pm::store(link_of(cx, r, prev), LeafPtr(two[0]));
    pm::store(&cx.leaf(two[1]).next(nv), nl.next(nv));
    ++r.counters.consolidations;
    prev = two[1];
    cur = nl.next(nv).off;
  }
}

// Requests every line of leaf `off`. A merge reads most of a leaf, each key where the order
// array points, so its misses come one after another; requested a leaf ahead, they overlap
// with the work on the leaf before it.
void prefetch_leaf(const MergeContext& cx, u64 off) {
  const auto* p = reinterpret_cast<const char*>(cx.pool.at(off));
  for (std::size_t b = 0; b < cx.L.bytes; b += 64) __builtin_prefetch(p + b);
}

void merge_range_in_place(const MergeContext& cx, RangeMerge& r, std::span<const KVPair> es) {
  const int cvv = cx.cv, nv = cx.nv;
  // Whether es holds a tombstone: without one the delete merge's walk of the range's leaves,
  // a miss on each, has nothing to do.
  bool deletes = false;
  {
    PhaseScope ph(DPTreePhase::upsert_merge);
    pm::CategoryScope cat(pm::Category::node);
    r.head = LeafPtr(r.first_cv);
    u64 prev = 0, cur = r.first_cv;
    std::size_t it = 0;
    std::vector<KVPair> sel;
    if (r.nleaves) prefetch_leaf(cx, cur);
    for (std::size_t i = 0; i < r.nleaves; ++i) {
      Leaf lf = cx.leaf(cur);
      r.counters.lazy_rebuilds += ensure_leaf_meta(lf, cvv, cx.restart_count);
      u64 mk = lf.max_key(cvv), nxt = lf.next(cvv).off;
      if (i + 1 < r.nleaves) prefetch_leaf(cx, nxt);
      sel.clear();
      for (; it < es.size() && es[it].first <= mk; ++it) {
        if (es[it].second & kTombstone)
          deletes = true;
        else
          sel.push_back(es[it]);
      }
      PairInput pair;
      if (cx.split == SplitMode::thirds && i + 1 < r.nleaves) {
        pair.leaf = nxt;
        pair.rest = es.subspan(it);
      }
      prev = leaf_upsert_merge(cx, r, prev, cur, sel, pair);
      cur = nxt;
      if (pair.taken) {  // nxt was split with cur: its entries are used, its successor is next
        for (const KVPair& e : pair.rest.first(pair.used)) deletes |= (e.second & kTombstone) != 0;
        it += pair.used;
        cur = cx.leaf(nxt).next(cvv).off;
        if (++i + 1 < r.nleaves) prefetch_leaf(cx, cur);
      }
    }
    r.end = r.nleaves ? cur : 0;
    // Line 11: entries beyond every leaf (only when the base tree is empty).
    sel.clear();
    for (; it < es.size(); ++it) {
      if (r.nleaves)
        throw std::logic_error("merge_range: an entry beyond the range's last max key");
      if (es[it].second & kTombstone)
        deletes = true;
      else
        sel.push_back(es[it]);
    }
    if (!sel.empty()) {
      auto nl = build_leaves(cx, r, sel, r.last_max, cx.fill_rate);
      pm::store(link_of(cx, r, prev), LeafPtr(nl.front()));
      pm::store(&cx.leaf(nl.back()).next(nv), LeafPtr(r.end));
    }
  }
  if (deletes) {
    PhaseScope ph(DPTreePhase::delete_merge);
    pm::CategoryScope cat(pm::Category::node);
    std::size_t it = 0;
    std::vector<u64> ks;
    for (u64 cur = r.head.off; cur != r.end && it < es.size(); cur = cx.leaf(cur).next(nv).off) {
      Leaf lf = cx.leaf(cur);
      ks.clear();
      u64 mk = lf.max_key(nv);
      for (; it < es.size() && es[it].first <= mk; ++it)
        if (es[it].second & kTombstone) ks.push_back(es[it].first);
      // A delete needs only the bitmap written back (§2.3 phase 4): do it now, no fence.
      if (!ks.empty() && leaf_delete(lf, nv, ks)) flush_leaf_meta(lf, nv);
    }
  }
  {
    PhaseScope ph(DPTreePhase::consolidation);
    pm::CategoryScope cat(pm::Category::node);
    consolidate(cx, r);
  }
}

// Figure 8d's out-of-place merge: every entry of the range, merged with the buffer's, is
// written into new leaves packed full; every old leaf becomes garbage.
void merge_range_out_of_place(const MergeContext& cx, RangeMerge& r, std::span<const KVPair> es) {
  PhaseScope ph(DPTreePhase::upsert_merge);
  pm::CategoryScope cat(pm::Category::node);
  std::vector<KVPair> old, all;
  u64 cur = r.first_cv, mk = ~u64{0};
  for (std::size_t i = 0; i < r.nleaves; ++i) {
    Leaf lf = cx.leaf(cur);
    r.counters.lazy_rebuilds += ensure_leaf_meta(lf, cx.cv, cx.restart_count);
    leaf_entries(lf, cx.cv, old);
    mk = lf.max_key(cx.cv);
    cur = lf.next(cx.cv).off;
  }
  r.end = r.nleaves ? cur : 0;
  if (r.nleaves && !es.empty() && es.back().first > mk)
    throw std::logic_error("merge_range: an entry beyond the range's last max key");
  all.reserve(old.size() + es.size());
  merge_sorted(old, es, all);
  r.head = LeafPtr::null();
  if (all.empty() && r.first_range && r.last_range) return;  // the tree became empty
  auto nl = build_leaves(cx, r, all, mk, 1.0);
  r.head = LeafPtr(nl.front());
  pm::store(&cx.leaf(nl.back()).next(cx.nv), LeafPtr(r.end));
  r.counters.splits += r.nleaves;
}

}  // namespace

void begin_merge(pm::Pool& pool, Root* root, PendingLeaves& pending) {
  (void)pool;
  PhaseScope ph(DPTreePhase::merge_start);
  pm::CategoryScope cat(pm::Category::node);
  pm::store(&root->gv,
            root->gv | kInMerge);  // line 2: recovery reclaims what an interrupted merge created
  pm::persist(&root->gv, 8);
  pending.start();  // its first block comes with the first new leaf
}

void merge_range(const MergeContext& cx, RangeMerge& r, std::span<const KVPair> es) {
  r.dirty.set_slots_per_leaf(cx.L.cap);
  r.dirty.reserve(r.nleaves + r.nleaves / 8 + 16);  // every leaf, and some new ones
  if (cx.mode == MergeMode::out_of_place)
    merge_range_out_of_place(cx, r, es);
  else
    merge_range_in_place(cx, r, es);
  r.tail = 0;
  r.count = 0;
  for (u64 l = r.head.off; l && l != r.end; l = cx.leaf(l).next(cx.nv).off) {
    r.tail = l;
    r.count += cx.leaf(l).count(cx.nv);
  }
}

void flush_range(const MergeContext& cx, RangeMerge& r) {
  // Phase 4: new entries and the crash-consistent metadata, no fence (§2.3).
  PhaseScope ph(DPTreePhase::flush);
  pm::CategoryScope cat(pm::Category::node);
  const int nv = cx.nv;
  std::vector<std::uint16_t> slots;
  for (u64 l = r.head.off; l; l = cx.leaf(l).next(nv).off) {
    Leaf lf = cx.leaf(l);
    if (r.dirty.is_new(l)) {
      // A new leaf: its crash-consistent metadata and occupied slots; not the count / order
      // / fingerprints (partial persistence, §2.2) nor its empty slots.
      // The other (zeroed) set is not written back: nothing reads it before a merge copies
      // the current set over it, and that merge flushes all of it (flush_leaf_meta).
      pm::flush(lf.meta(nv), cx.L.meta_p_bytes);
      flush_occupied_slots(lf, nv);
    } else {
      flush_leaf_meta(lf, nv);
      r.dirty.written(l, slots);
      flush_leaf_slots(lf, slots);
    }
    if (l == r.tail) break;
  }
}

void commit_merge(Root* root, int nv, LeafPtr head, u64 count) {
  {
    PhaseScope ph(DPTreePhase::flush);
    pm::CategoryScope cat(pm::Category::node);
    pm::store(&root->head[nv], head);
    pm::store(&root->base_count[nv], count);
    pm::flush(&root->head[nv], 8);
    pm::flush(&root->base_count[nv], 8);
  }
  // Phase 6: the version flip. The fence first: no flushed line may trail the new gv.
  PhaseScope ph(DPTreePhase::version_flip);
  pm::CategoryScope cat(pm::Category::node);
  pm::fence();
  pm::store(&root->gv, static_cast<u64>(nv) | kInGc);
  pm::persist(&root->gv, 8);
}

LeafNext leaf_next(const pm::Pool& pool, const LeafLayout& L) {
  return [&pool, &L](u64 l, int v) { return Leaf{pool.at(l), &L}.next(v).off; };
}

namespace {

// Whether the block at `b` is a leaf (of either form). Garbage collection and the undoing of
// a merge free leaves while the concurrent trees' writers take log pages: such a page may get
// the slot or the block of a leaf freed a moment before. A crash before pendingLeaves is
// destroyed reruns the collection, which must then not take that page for the leaf.
bool is_leaf(const pm::Pool& pool, u64 b) {
  const u64 type = pool.get(LeafPtr(b))->type;
  return type == kLeafType || type == kStringLeafType;
}

// The leaf a pendingLeaves slot still owns; 0 when it owns nothing, or a log page that took
// the slot after an interrupted run freed its leaf.
u64 created_leaf(const pm::Pool& pool, u64 slot) {
  const u64 b = pool.get(OwnerSlotPtr(slot))->off;
  return b && is_leaf(pool, b) ? b : 0;
}

// Appends the owner slots of the leaves of `lold` (an old list, in list order) that `keep` (the
// new list, sorted) lacks, from the last one back, so that a rerun after a crash finds the
// freed ones at the end of the list.
void append_dropped(const pm::Pool& pool, std::span<const u64> keep, std::span<const u64> lold,
                    std::vector<u64>& out) {
  for (auto it = lold.rbegin(); it != lold.rend(); ++it)
    if (!std::binary_search(keep.begin(), keep.end(), *it))
      out.push_back(pool.get(LeafPtr(*it))->owner_slot.off);
}

// Those of the old list, then those of the created leaves the new list lacks.
std::vector<u64> garbage_of(const pm::Pool& pool, const PendingLeaves& pending,
                            std::span<const u64> keep, std::span<const u64> lold) {
  std::vector<u64> out;
  append_dropped(pool, keep, lold, out);
  for (u64 slot : pending.slots()) {
    const u64 l = created_leaf(pool, slot);
    if (l && !std::binary_search(keep.begin(), keep.end(), l)) out.push_back(slot);
  }
  return out;
}

// Frees those leaves, then ends the collection.
std::size_t free_garbage(pm::Pool& pool, Root* root, OwnerDir& dir, PendingLeaves& pending,
                         std::span<const u64> keep, std::span<const u64> lold) {
  const std::vector<u64> slots = garbage_of(pool, pending, keep, lold);
  for (u64 slot : slots) dir.free_owned(slot);
  end_collection(root, pending);
  return slots.size();
}

}  // namespace

std::size_t collect_garbage(pm::Pool& pool, Root* root, OwnerDir& dir, PendingLeaves& pending,
                            const LeafNext& next, int old, int cur) {
  auto owner_slot = [&](u64 l) { return pool.get(LeafPtr(l))->owner_slot; };
  auto owned_by = [&](OwnerSlotPtr s) { return pool.get(s)->off; };
  std::vector<u64> keep;  // sorted: one allocation, not one per leaf
  for (u64 l = root->head[cur].off; l; l = next(l, cur)) keep.push_back(l);
  std::sort(keep.begin(), keep.end());
  std::vector<u64> lold;
  for (u64 l = root->head[old].off; l; l = next(l, old)) {
    // Freed by an interrupted run (its slot or block may hold a log page since): the rest
    // of the list was freed before it.
    if (!is_leaf(pool, l) || owned_by(owner_slot(l)) != l) break;
    lold.push_back(l);
  }
  return free_garbage(pool, root, dir, pending, keep, lold);
}

std::size_t collect_garbage(pm::Pool& pool, Root* root, OwnerDir& dir, PendingLeaves& pending,
                            std::span<const u64> old_list, std::span<const u64> cur_list) {
  std::vector<u64> keep(cur_list.begin(), cur_list.end());
  std::sort(keep.begin(), keep.end());
  return free_garbage(pool, root, dir, pending, keep, old_list);
}

void range_garbage(const pm::Pool& pool, std::span<const u64> old_leaves,
                   std::span<const u64> new_leaves, const RangeMerge& r,
                   std::vector<u64>& old_slots, std::vector<u64>& created_slots) {
  std::vector<u64> keep(new_leaves.begin(), new_leaves.end());
  std::sort(keep.begin(), keep.end());
  append_dropped(pool, keep, old_leaves, old_slots);
  r.dirty.for_each([&](u64 off, bool is_new) {
    if (is_new && !std::binary_search(keep.begin(), keep.end(), off))
      created_slots.push_back(pool.get(LeafPtr(off))->owner_slot.off);
  });
}

void end_collection(Root* root, PendingLeaves& pending) {
  pending.destroy();
  pm::store(&root->gv,
            root->gv & ~kInGc);  // after the destroy: a crash before this line runs it all again
  pm::CategoryScope cat(pm::Category::node);
  pm::persist(&root->gv, 8);
}

void reclaim_interrupted_merge(pm::Pool& pool, Root* root, OwnerDir& dir, PendingLeaves& pending) {
  for (u64 slot : pending.slots())
    if (created_leaf(pool, slot)) dir.free_owned(slot);
  pending.destroy();
  pm::store(&root->gv, root->gv & ~kInMerge);
  pm::CategoryScope cat(pm::Category::node);
  pm::persist(&root->gv, 8);
}

std::size_t finish_interrupted_merge(pm::Pool& pool, Root* root, OwnerDir& dir,
                                     PendingLeaves& pending, const LeafNext& next) {
  const int cv = static_cast<int>(root->gv & kVersionBit);
  if (root->gv & kInMerge) {
    reclaim_interrupted_merge(pool, root, dir, pending);  // lines 2-4
    return 0;
  }
  if ((root->gv & kInGc) || pending.exists())
    return collect_garbage(pool, root, dir, pending, next, 1 - cv, cv);  // line 5
  return 0;
}

void abort_merge(const MergeContext& cx, Root* root, std::span<RangeMerge* const> ranges) {
  {
    pm::CategoryScope cat(pm::Category::node);
    for (RangeMerge* r : ranges)
      r->dirty.for_each([&](u64 off, bool is_new) {
        if (!is_new) flush_leaf_meta(cx.leaf(off), cx.nv);
      });
  }
  reclaim_interrupted_merge(cx.pool, root, cx.dir, cx.pending);
}

}  // namespace dptree::detail
