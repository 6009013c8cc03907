// Base-tree leaf operations (§2.2, Algorithms 2 and 3); see base_leaf.h.
#include "engine/base_leaf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dptree::detail {

void rebuild_leaf_meta(Leaf lf, int v) {
  const std::size_t cap = lf.L->cap;
  thread_local std::vector<std::uint16_t> ord;
  ord.clear();
  for (std::size_t s = 0; s < cap; ++s) {
    const unsigned st = lf.state(v, s);
    if (st != kOccupied) {
      pm::store(&lf.fp(v)[s], fp_code(st));
      continue;
    }
    ord.push_back(static_cast<std::uint16_t>(s));
    pm::store(&lf.fp(v)[s], fingerprint_of(hash_key(lf.key(s))));
  }
  std::sort(ord.begin(), ord.end(),
            [&](std::uint16_t a, std::uint16_t b) { return lf.key(a) < lf.key(b); });
  pm::store_bytes(lf.order(v), ord.data(), ord.size() * sizeof ord[0]);
  pm::store(&lf.count(v), ord.size());
}

long leaf_bad_fp_code(Leaf lf, int v) {
  for (std::size_t s = 0; s < lf.L->cap; ++s) {
    const unsigned st = lf.state(v, s);
    if (st != kOccupied && lf.fp(v)[s] != fp_code(st)) return static_cast<long>(s);
  }
  return -1;
}

bool ensure_leaf_meta(Leaf lf, int v, u64 restart_count) {
  if (lf.rc(v) == restart_count) return false;
  rebuild_leaf_meta(lf, v);
  pm::store(&lf.rc(v), restart_count);
  pm::CategoryScope cat(pm::Category::node);
  pm::persist(&lf.rc(v), 8);
  return true;
}

namespace {
constexpr std::size_t kProbeBlock = 16;  // fingerprint bytes one SSE2 compare reads
}  // namespace

#if defined(__SSE2__)
namespace {

// The linear probe of §2.2 sixteen slots at a time, on the fingerprint bytes alone (an empty
// slot's byte is kFpEmpty, a deleted one's kFpDeleted, neither ever a key's fingerprint): two
// compares of sixteen bytes give the candidate slots and the first empty slot of a block, and
// the bitmap's line is not read. Keys are read only for candidates before the first empty
// slot, in probe order, so the answer is the scalar probe's; a long cluster (a leaf near
// full, or a kept split's deleted slots) costs a few blocks instead of dozens of steps.
long find_in_blocks(Leaf lf, int v, u64 k, std::uint8_t f, std::size_t home) {
  const std::size_t nblocks = lf.L->cap / kProbeBlock;
  const __m128i want = _mm_set1_epi8(static_cast<char>(f));
  const __m128i none = _mm_setzero_si128();  // kFpEmpty
  const std::uint8_t* fps = lf.fp(v);
  std::size_t blk = home / kProbeBlock;
  const unsigned first = 0xffffu << (home % kProbeBlock) & 0xffffu;
  // nblocks + 1 blocks: the home block again at the end, for the slots before home.
  for (std::size_t i = 0; i <= nblocks; ++i, blk = blk + 1 == nblocks ? 0 : blk + 1) {
    unsigned valid = i == 0 ? first : i == nblocks ? ~first & 0xffffu : 0xffffu;
    const __m128i bytes =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(fps + blk * kProbeBlock));
    auto match = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, want)));
    auto empty = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, none)));
    empty &= valid;
    unsigned cand = match & valid;
    if (empty) cand &= (empty & (0u - empty)) - 1;  // only slots before the first empty one
    for (; cand; cand &= cand - 1) {
      std::size_t s = blk * kProbeBlock + static_cast<std::size_t>(std::countr_zero(cand));
      if (lf.key(s) == k) return static_cast<long>(s);
    }
    if (empty) return -1;
  }
  return -1;
}

}  // namespace
#endif

void leaf_prefetch(Leaf lf, int v, u64 h, ProbeMode mode) {
  const std::size_t home = home_slot(h, lf.L->cap);
  if (mode == ProbeMode::linear) __builtin_prefetch(lf.bitmap(v) + home / 32);
  // The probe's first read is the 16 fingerprint bytes of home's block (find_in_blocks), and
  // the fingerprint array starts 8 bytes into a line: one block in four spans two lines.
  const std::uint8_t* block = lf.fp(v) + home / kProbeBlock * kProbeBlock;
  __builtin_prefetch(block);
  __builtin_prefetch(block + kProbeBlock - 1);
  __builtin_prefetch(lf.entry(home));
}

long leaf_find(Leaf lf, int v, u64 k, u64 h, ProbeMode mode) {
  const std::size_t cap = lf.L->cap;
  const std::uint8_t f = fingerprint_of(h);
  const std::uint8_t* fp = lf.fp(v);
  if (mode == ProbeMode::fingerprint) {  // a matching byte is an occupied slot's
    for (std::size_t s = 0; s < cap; ++s)
      if (fp[s] == f && lf.key(s) == k) return static_cast<long>(s);
    return -1;
  }
  std::size_t s = home_slot(h, cap);
  if (mode == ProbeMode::linear) {  // the bitmap's states, every occupied slot's key read
    for (std::size_t n = 0; n < cap; ++n, s = (s + 1 == cap ? 0 : s + 1)) {
      unsigned st = lf.state(v, s);
      if (st == kEmpty) return -1;
      if (st == kOccupied && lf.key(s) == k) return static_cast<long>(s);
    }
    return -1;
  }
#if defined(__SSE2__)
  if (cap % kProbeBlock == 0) return find_in_blocks(lf, v, k, f, s);
#endif
  for (std::size_t n = 0; n < cap; ++n, s = (s + 1 == cap ? 0 : s + 1)) {
    if (fp[s] == kFpEmpty) return -1;
    if (fp[s] == f && lf.key(s) == k) return static_cast<long>(s);
  }
  return -1;
}

// A scan's start: a binary search through the order array, whose every step reads a key at
// a slot the hash chose, a miss each. The order array's lines are requested at once, with
// the count's (before the count is known: they arrive together), and each step requests the
// keys of the step after next (four candidates), so the misses of three steps overlap
// instead of following each other. The halving is branch-free: the candidates are known
// only by position, and a mispredicted step would waste them.
std::size_t leaf_lower_bound(Leaf lf, int v, u64 k) {
  const std::uint16_t* o = lf.order(v);
  leaf_prefetch_order(lf, v);
  std::size_t n = lf.count(v);
  if (n == 0) return 0;
  auto want = [&](const std::uint16_t* at) { __builtin_prefetch(lf.entry(*at)); };
  const std::uint16_t* base = o;
  {  // the first two steps' keys
    const std::size_t h0 = n / 2, h1 = (n - h0) / 2;
    want(base + h0);
    want(base + h1);
    want(base + h0 + h1);
  }
  while (n > 1) {
    const std::size_t half = n / 2, n1 = n - half, h1 = n1 / 2, h2 = (n1 - h1) / 2;
    if (n1 > 1) {  // the step after next compares one of these
      want(base + h2);
      want(base + h1 + h2);
      want(base + half + h2);
      want(base + half + h1 + h2);
    }
    base = lf.key(base[half]) < k ? base + half : base;
    n = n1;
  }
  return static_cast<std::size_t>(base - o) + (lf.key(*base) < k);
}

void leaf_entries(Leaf lf, int v, std::vector<KVPair>& out) {
  for (std::size_t i = 0; i < lf.count(v); ++i) {
    std::size_t s = lf.order(v)[i];
    out.emplace_back(lf.key(s), lf.value(s));
  }
}

std::size_t leaf_free_slots(Leaf lf, int nv) {
  std::size_t n = 0;
  for (std::size_t s = 0; s < lf.L->cap; ++s)
    n += lf.state(nv, s) != kOccupied && lf.state(1 - nv, s) != kOccupied;
  return n;
}

void leaf_fill(Leaf lf, int nv, std::span<const KVPair> es) {
  const std::size_t cap = lf.L->cap;
  std::size_t n = 0;
  for (const auto& [k, v] : es) {
    u64 h = hash_key(k);
    std::size_t s = home_slot(h, cap);
    while (lf.state(nv, s) != kEmpty) s = s + 1 == cap ? 0 : s + 1;
    lf.set_entry(s, k, v);
    lf.set_state(nv, s, kOccupied);
    pm::store(&lf.fp(nv)[s], fingerprint_of(h));
    pm::store(&lf.order(nv)[n++], static_cast<std::uint16_t>(s));
  }
  pm::store(&lf.count(nv), n);
}

void leaf_upsert(Leaf lf, int nv, std::span<const KVPair> es, std::vector<std::uint16_t>& written) {
  const std::size_t cap = lf.L->cap;
  const int cvv = 1 - nv;
  // Scratch kept per thread: a merge calls this once per leaf, merge workers in parallel.
  // Safe only because nothing here flushes (see flush_occupied_slots).
  thread_local std::vector<std::pair<u64, std::uint16_t>> added;
  thread_local std::vector<std::uint16_t> ord;
  added.clear();
  ord.clear();
  for (const auto& [k, v] : es) {
    const u64 h = hash_key(k);
    long old = leaf_find(lf, nv, k, h);
    std::size_t s = home_slot(h, cap);
    while (lf.state(nv, s) == kOccupied || lf.state(cvv, s) == kOccupied) {
      // A slot empty in nv may still hold an entry of cv (leaf_clear_unreached_deleted):
      // passing over it, mark it deleted so the probe from the key's home reaches s.
      if (lf.state(nv, s) == kEmpty) lf.set_state(nv, s, kDeleted);
      s = s + 1 == cap ? 0 : s + 1;
    }
    lf.set_entry(s, k, v);
    pm::store(&lf.fp(nv)[s], fingerprint_of(h));
    lf.set_state(nv, s, kOccupied);
    if (old >= 0) lf.set_state(nv, static_cast<std::size_t>(old), kDeleted);
    written.push_back(static_cast<std::uint16_t>(s));
    added.emplace_back(k, static_cast<std::uint16_t>(s));
  }
  // Merge the surviving old order with the added slots (both sorted by key).
  std::size_t j = 0;
  for (std::size_t i = 0; i < lf.count(nv); ++i) {
    std::uint16_t s = lf.order(nv)[i];
    if (lf.state(nv, s) != kOccupied) continue;
    while (j < added.size() && added[j].first < lf.key(s)) ord.push_back(added[j++].second);
    ord.push_back(s);
  }
  while (j < added.size()) ord.push_back(added[j++].second);
  pm::store_bytes(lf.order(nv), ord.data(), ord.size() * sizeof ord[0]);
  pm::store(&lf.count(nv), ord.size());
}

std::size_t leaf_delete(Leaf lf, int nv, std::span<const u64> ks) {
  std::size_t i = 0, j = 0, n = lf.count(nv), hit = 0;
  while (i < n && j < ks.size()) {
    std::uint16_t s = lf.order(nv)[i];
    u64 k = lf.key(s);
    if (k < ks[j]) {
      ++i;
    } else if (k == ks[j]) {
      lf.set_state(nv, s, kDeleted);
      ++hit;
      ++i;
      ++j;
    } else {
      ++j;
    }
  }
  if (!hit) return 0;
  std::size_t m = 0;  // line 13: order and count of version nv
  for (std::size_t x = 0; x < n; ++x)
    if (lf.state(nv, lf.order(nv)[x]) == kOccupied) pm::store(&lf.order(nv)[m++], lf.order(nv)[x]);
  pm::store(&lf.count(nv), m);
  return hit;
}

// A slot is on an entry's probe path when it lies in [home, slot) of that entry, cyclically.
// Each path adds 1 at its start and takes it off at its end in a difference array, and a
// running sum over the slots then counts the paths over each: one pass over the slots, where
// walking every path cost its length, which grows steeply as a leaf fills.
std::size_t leaf_clear_unreached_deleted(Leaf lf, int v) {
  const std::size_t cap = lf.L->cap;
  thread_local std::vector<int> starts;  // no flush here: see flush_occupied_slots
  starts.assign(cap + 1, 0);
  for (std::size_t s = 0; s < cap; ++s) {
    if (lf.state(v, s) != kOccupied) continue;
    const std::size_t home = home_slot(hash_key(lf.key(s)), cap);
    if (home == s) continue;
    ++starts[home];
    --starts[s];
    if (home > s) {  // the path wraps past the last slot
      --starts[cap];
      ++starts[0];
    }
  }
  std::size_t n = 0;
  int paths = 0;
  for (std::size_t s = 0; s < cap; ++s) {
    paths += starts[s];
    if (paths == 0 && lf.state(v, s) == kDeleted) {
      lf.set_state(v, s, kEmpty);
      ++n;
    }
  }
  return n;
}

namespace {

// Writes back the lines of one slot's entry after those of a lower slot, skipping the line
// the previous call ended in.
struct EntryFlusher {
  const std::byte* last = nullptr;
  void operator()(Leaf lf, std::size_t s) {
    auto a = reinterpret_cast<std::uintptr_t>(lf.entry(s));
    const auto* first_line = reinterpret_cast<const std::byte*>(a & ~std::uintptr_t{63});
    const std::byte* end = lf.entry(s) + lf.L->ebytes;
    const std::byte* from = first_line == last ? first_line + 64 : first_line;
    if (from < end) pm::flush(from, static_cast<std::size_t>(end - from));
    last = reinterpret_cast<const std::byte*>((reinterpret_cast<std::uintptr_t>(end) - 1) &
                                              ~std::uintptr_t{63});
  }
};

}  // namespace

void flush_leaf_slots(Leaf lf, std::span<const std::uint16_t> slots) {
  EntryFlusher flush;
  for (auto s : slots) flush(lf, s);
}

void flush_occupied_slots(Leaf lf, int v) {
  EntryFlusher flush;
  for (std::size_t s = 0; s < lf.L->cap; ++s)
    if (lf.state(v, s) == kOccupied) flush(lf, s);
}

void flush_leaf_meta(Leaf lf, int nv) {
  pm::flush(lf.meta(nv), lf.L->meta_p_bytes);
}

}  // namespace dptree::detail
