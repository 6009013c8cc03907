// Concurrent base-tree reads, lock-bit metadata rebuild, in-place update; see base.h.
#include "cdptree/base.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"

namespace dptree::cdp {

namespace {

u64* value_word(Leaf lf, std::size_t s) {
  return reinterpret_cast<u64*>(lf.entry(s) + lf.L->kbytes);
}

std::atomic_ref<u64> value_ref(Leaf lf, std::size_t s) {
  return std::atomic_ref<u64>(*value_word(lf, s));
}

}  // namespace

Leaf BaseCtx::leaf(u64 off) const {
  return Leaf{pool.at(off), &L};
}

namespace {

// A snapshot of `leaves` with max keys `max` (filled in later when empty), no leaf fresh.
BaseSnapshot* new_snapshot(const BaseCtx& cx, std::vector<u64> leaves, std::vector<u64> max, int v,
                           u64 count) {
  auto* s = new BaseSnapshot;
  s->v = v;
  s->count = count;
  s->leaf = std::move(leaves);
  const std::size_t n = s->leaf.size();
  s->max = std::move(max);
  s->max.resize(n);
  s->tombstoned = std::make_unique<std::atomic<bool>[]>(n);
  s->fresh = std::make_unique<std::atomic<std::uint8_t>[]>(n);
  s->any_leaf_tombstoned = cx.restarted;
  return s;
}

}  // namespace

BaseSnapshot* recovered_snapshot(const BaseCtx& cx, std::vector<u64> leaves, std::vector<u64> max,
                                 int v, u64 count) {
  BaseSnapshot* s = new_snapshot(cx, std::move(leaves), std::move(max), v, count);
  s->search.build(s->max);
  return s;
}

void read_piece(const BaseCtx& cx, u64 head, u64 tail, int v, SnapshotPiece& p) {
  p = {};
  for (u64 l = head;;) {
    const Leaf lf = cx.leaf(l);
    std::atomic_ref<u64> rc(lf.rc(v));
    p.leaf.push_back(l);
    p.max.push_back(lf.max_key(v));
    p.fresh.push_back(rc.load(std::memory_order_acquire) == cx.restart_count);
    if (l == tail) return;
    l = lf.next(v).off;
  }
}

void append_piece(SnapshotPiece& all, SnapshotPiece& p) {
  all.leaf.insert(all.leaf.end(), p.leaf.begin(), p.leaf.end());
  all.max.insert(all.max.end(), p.max.begin(), p.max.end());
  all.fresh.insert(all.fresh.end(), p.fresh.begin(), p.fresh.end());
  p = {};
}

BaseSnapshot* snapshot_of(const BaseCtx& cx, SnapshotPiece&& all, int v, u64 count) {
  BaseSnapshot* s = new_snapshot(cx, std::move(all.leaf), std::move(all.max), v, count);
  for (std::size_t i = 0; i < all.fresh.size(); ++i)
    s->fresh[i].store(all.fresh[i], std::memory_order_relaxed);
  s->search.build(s->max);
  return s;
}

void ensure_meta(const BaseCtx& cx, Leaf lf, int v) {
  std::atomic_ref<u64> rc(lf.rc(v));
  const u64 now = cx.restart_count;
  for (;;) {
    u64 cur = rc.load(std::memory_order_acquire);
    if (cur == now) return;
    if (cur == (now | kRcLock)) {  // another thread rebuilds it in this run
      std::this_thread::yield();
      continue;
    }
    // Unlocked, or locked under an older restart (a crash's leftover: void).
    if (!pm::update(&lf.rc(v), [&](std::atomic_ref<u64> w) {
          return w.compare_exchange_strong(cur, now | kRcLock, std::memory_order_acquire);
        }))
      continue;
    detail::rebuild_leaf_meta(lf, v);
    pm::store_release(&lf.rc(v), now);
    pm::CategoryScope cat(pm::Category::node);
    pm::persist(&lf.rc(v), 8);
    cx.rebuilds.fetch_add(1, std::memory_order_relaxed);
    return;
  }
}

namespace {

// ensure_meta behind the snapshot's DRAM flag (a reader that sees the flag set also sees the
// rebuild that preceded it: release / acquire).
void ensure_fresh(const BaseCtx& cx, const BaseSnapshot& s, std::size_t i, Leaf lf) {
  if (s.fresh[i].load(std::memory_order_acquire)) return;
  ensure_meta(cx, lf, s.v);
  s.fresh[i].store(1, std::memory_order_release);
}

long find_slot(const BaseCtx& cx, const BaseSnapshot& s, u64 k, Leaf& lf, std::size_t& i) {
  const u64 h = detail::hash_key(k);
  i = s.index_of(k);
  if (i == s.leaf.size()) return -1;
  lf = cx.leaf(s.leaf[i]);
  detail::leaf_prefetch(lf, s.v, h);  // the leaf's lines load while the flag is checked
  ensure_fresh(cx, s, i, lf);
  return detail::leaf_find(lf, s.v, k, h);
}

}  // namespace

std::optional<u64> base_lookup(const BaseCtx& cx, const BaseSnapshot& s, u64 k) {
  Leaf lf{nullptr, &cx.L};
  std::size_t i;
  long slot = find_slot(cx, s, k, lf, i);
  if (slot < 0) return std::nullopt;
  return value_ref(lf, static_cast<std::size_t>(slot)).load(std::memory_order_acquire);
}

bool base_collect(const BaseCtx& cx, const BaseSnapshot& s, u64 start, std::size_t n,
                  std::vector<KVPair>& out) {
  auto leaf_at = [&](std::size_t i) {
    Leaf lf = cx.leaf(s.leaf[i]);
    ensure_fresh(cx, s, i, lf);
    return lf;
  };
  return detail::leaves_collect(s.index_of(start), s.leaf.size(), s.v, start, n, out, leaf_at,
                                [](Leaf lf, std::size_t slot) {
                                  return value_ref(lf, slot).load(std::memory_order_acquire);
                                });
}

bool base_update_in_place(const BaseCtx& cx, BaseSnapshot& s, u64 k, u64 v) {
  Leaf lf{nullptr, &cx.L};
  std::size_t i;
  long slot = find_slot(cx, s, k, lf, i);
  if (slot < 0) return false;
  auto ref = value_ref(lf, static_cast<std::size_t>(slot));
  // The caller holds k's leaf lock in the Front: no other writer of k runs now.
  if (ref.load(std::memory_order_relaxed) & detail::kTombstone) return false;
  if (v == detail::kTombstone) {
    // Before the store: the merge that drops it (which starts only after the caller's
    // W_FW is gone) must find the leaf marked.
    s.tombstoned[i].store(true, std::memory_order_relaxed);
    s.tombstones.fetch_add(1, std::memory_order_relaxed);
  }
  pm::store_release(value_word(lf, static_cast<std::size_t>(slot)), v);
  pm::CategoryScope cat(pm::Category::node);
  pm::persist(lf.entry(static_cast<std::size_t>(slot)) + cx.L.kbytes, 8);
  return true;
}

}  // namespace dptree::cdp
