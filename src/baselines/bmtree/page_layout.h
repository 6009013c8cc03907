// The page formats of bm-btree (docs/bm-btree.md). Every page starts with a 64-byte header
// line: kind (u32 @0), count (u32 @4), next leaf (u64 @8, leaves), level (u32 @16, inner pages:
// 1 when the children are leaves). After it:
//   hash leaf    an occupancy bitmap, then `hash_cap` 16-byte key-value slots, linear probing
//                from the key's hash, removal by backward shift (no tombstones);
//   sorted leaf  `sorted_cap` key-value slots in key order;
//   inner page   `inner_cap` keys, then inner_cap + 1 children (pool offsets of pages).
// Images are built in DRAM by these helpers (splits, the first page) and logged whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dptree/index.h"

namespace dptree::baselines::bmtree {

enum Kind : std::uint32_t { kInner = 1, kHashLeaf = 2, kSortedLeaf = 3 };

inline constexpr std::uint32_t kKindOff = 0, kCountOff = 4, kNextOff = 8, kLevelOff = 16;
inline constexpr std::uint32_t kHeader = 64, kSlot = 16;

struct Slot {  // a leaf's key-value slot, as stored
  Key key;
  Value value;
};
static_assert(sizeof(Slot) == kSlot);

template <class T>
T get_at(const std::byte* p, std::size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof v);
  return v;
}
template <class T>
void put_at(std::byte* p, std::size_t off, T v) {
  std::memcpy(p + off, &v, sizeof v);
}

inline std::uint64_t mix(std::uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  return k ^ (k >> 33);
}

struct Layout {
  std::uint32_t page = 0;
  std::uint32_t hash_cap = 0, hash_slots = 0;       // the bitmap starts at kHeader
  std::uint32_t sorted_cap = 0;                     // slots start at kHeader
  std::uint32_t inner_cap = 0, inner_children = 0;  // keys start at kHeader

  explicit Layout(std::uint32_t page_bytes) : page(page_bytes) {
    for (hash_cap = (page - kHeader) / kSlot; hash_cap; --hash_cap) {
      hash_slots = kHeader + ((hash_cap + 63) / 64 * 8 + 63) / 64 * 64;
      if (hash_slots + hash_cap * kSlot <= page) break;
    }
    sorted_cap = (page - kHeader) / kSlot;
    inner_cap = (page - kHeader - 8) / 16;
    inner_children = kHeader + inner_cap * 8;
  }
  std::uint32_t cap(Kind leaf) const { return leaf == kHashLeaf ? hash_cap : sorted_cap; }
  // A leaf splits before an insert when it holds this many: linear probing stays short.
  std::uint32_t split_at(Kind leaf) const {
    return leaf == kHashLeaf ? hash_cap * 7 / 8 : sorted_cap;
  }
  std::uint32_t home(Key k) const { return static_cast<std::uint32_t>(mix(k) % hash_cap); }
  std::uint32_t slot_off(Kind leaf, std::uint32_t i) const {
    return (leaf == kHashLeaf ? hash_slots : kHeader) + i * kSlot;
  }
  // Bytes of a fresh page that must be logged whole (header, and the hash leaf's bitmap).
  std::uint32_t meta(Kind k) const { return k == kHashLeaf ? hash_slots : kHeader; }
};

// A leaf image holding `kv` (fewer than its split size, keys unique).
inline void build_leaf(std::byte* img, const Layout& L, Kind kind, const std::vector<KV>& kv,
                       std::uint64_t next) {
  std::memset(img, 0, L.page);
  put_at<std::uint32_t>(img, kKindOff, kind);
  put_at<std::uint32_t>(img, kCountOff, static_cast<std::uint32_t>(kv.size()));
  put_at<std::uint64_t>(img, kNextOff, next);
  for (std::uint32_t i = 0; i < kv.size(); ++i) {
    std::uint32_t s = i;
    if (kind == kHashLeaf) {
      for (s = L.home(kv[i].first);; s = (s + 1) % L.hash_cap) {
        auto w = get_at<std::uint64_t>(img, kHeader + s / 64 * 8);
        if (!((w >> (s % 64)) & 1)) {
          put_at<std::uint64_t>(img, kHeader + s / 64 * 8, w | std::uint64_t{1} << (s % 64));
          break;
        }
      }
    }
    put_at<Key>(img, L.slot_off(kind, s), kv[i].first);
    put_at<Value>(img, L.slot_off(kind, s) + 8, kv[i].second);
  }
}

// An inner image: keys.size() + 1 == children.size().
inline void build_inner(std::byte* img, const Layout& L, std::uint32_t level,
                        const std::vector<Key>& keys, const std::vector<std::uint64_t>& children) {
  std::memset(img, 0, L.page);
  put_at<std::uint32_t>(img, kKindOff, kInner);
  put_at<std::uint32_t>(img, kCountOff, static_cast<std::uint32_t>(keys.size()));
  put_at<std::uint32_t>(img, kLevelOff, level);
  for (std::size_t i = 0; i < keys.size(); ++i) put_at<Key>(img, kHeader + i * 8, keys[i]);
  for (std::size_t i = 0; i < children.size(); ++i)
    put_at<std::uint64_t>(img, L.inner_children + i * 8, children[i]);
}

}  // namespace dptree::baselines::bmtree
