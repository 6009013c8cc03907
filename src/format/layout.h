// Persistent layout of DPTree: root, owner directory, base-tree leaves (§2.2, Figure 3) and
// the log page constants (§2.1, Figure 2; the record format is in log_page.h). Every offset is
// from the pool base (pm/pptr.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dptree/pm/pptr.h"
#include "dptree/pm/store.h"

namespace dptree::detail {

using u64 = std::uint64_t;
using pm::PPtr;

struct LeafHeader;
struct LogPageHeader;
struct DirBlock;
struct PendingBlock;
using LeafPtr = PPtr<LeafHeader>;
using LogPagePtr = PPtr<LogPageHeader>;
// The owner directory and pendingLeaves (below): their blocks, linked from the root and from
// each other; a directory slot, which holds the offset of a leaf or log page (both begin with
// a LeafHeader's two words: owner slot, type); and the offset of such a slot, which is what a
// pendingLeaves entry and the owner_slot word of a leaf or page hold.
using DirBlockPtr = PPtr<DirBlock>;
using PendingBlockPtr = PPtr<PendingBlock>;
using OwnerSlot = PPtr<LeafHeader>;
using OwnerSlotPtr = PPtr<OwnerSlot>;

// The first words of every leaf's header line (the rest of its layout is LeafLayout's or, in
// the string form, StringLeafHeader's), and the header of a log page (format/log_page.h): what
// the typed words linking leaves and log pages point to.
struct LeafHeader {
  OwnerSlotPtr owner_slot;  // the owner-directory slot that owns the leaf
  u64 type;                 // kLeafType or kStringLeafType
};
// The persistent layout: a change here changes the pool format.
static_assert(sizeof(LeafHeader) == 16 && offsetof(LeafHeader, type) == 8);

inline constexpr u64 kRootMagic = 0x4450547265655231ull;  // "DPTreeR1"
inline constexpr u64 kLeafType = 0x4450544c65616631ull;   // "DPTLeaf1"
inline constexpr u64 kTombstone = u64{1} << 63;           // the value bit of §2's tombstone
// The bits of the global version word gv, of both trees.
enum GvBit : u64 {
  kVersionBit = 1,  // the current version (§2.2); the version flip writes it
  kInMerge = 2,     // set during a merge (Algorithm 1)
  // The concurrent DPTree has two live logs (the Front's and the Middle's, §3.2).
  kTwoLogs = 4,
  // Set by the version flip and cleared when garbage collection ends: recovery finishes a
  // collection it finds set (Algorithm 4 line 5). The paper reads this from pendingLeaves'
  // existence; a merge that creates no leaf then needs no PM block at all, so one that only
  // removes still runs in a pool too full for a pendingLeaves block.
  kInGc = 8,
};
inline constexpr u64 kDPTreeGvBits = kVersionBit | kInMerge | kInGc;  // the bits DPTree sets
inline constexpr u64 kCDPTreeGvBits = kDPTreeGvBits | kTwoLogs;       // the concurrent tree's

struct Root {
  u64 magic;
  u64 gv;                  // GvBit: the global version, in_merge, two logs (cdptree), GC unfinished
  u64 restart_count;       // §2.2 partial persistence
  LeafPtr head[2];         // first leaf of each version (the head sentinel's next pointer)
  u64 base_count[2];       // live keys of the base tree of each version (merge trigger, stats)
  LogPagePtr log_head[2];  // PLog: first page of the log of each version (§2.1)
  PendingBlockPtr pending;  // owner word of the first pendingLeaves block (§2.4)
  DirBlockPtr dir;          // owner word of the first owner-directory block
  u64 leaf_capacity, key_bytes, value_bytes, log_page_size;  // format, checked on open
};
// The persistent layout: a change here changes the pool format.
static_assert(sizeof(Root) == 120);
static_assert(offsetof(Root, gv) == 8 && offsetof(Root, head) == 24 &&
              offsetof(Root, base_count) == 40 && offsetof(Root, log_head) == 56 &&
              offsetof(Root, pending) == 72 && offsetof(Root, dir) == 80 &&
              offsetof(Root, leaf_capacity) == 88 && offsetof(Root, log_page_size) == 112);

// The allocator's owner words (pm/allocator.h) of leaves and log pages. The words linking a
// leaf change with every version, so none of them can own it: each leaf or page is owned by
// a slot of this directory and records the slot's offset in its header.
inline constexpr std::size_t kDirBlockBytes = 4096;
inline constexpr std::size_t kDirSlots = kDirBlockBytes / 8 - 1;
inline constexpr std::size_t kPendingBlockBytes = 2048;  // pendingLeaves node
inline constexpr std::size_t kPendingSlots = kPendingBlockBytes / 8 - 1;

// A block of the owner directory: the next block (its owner word), then slots, each the
// allocator's owner word of one leaf or log page (null: free). Walk the list with
// format/dir_blocks.h, which resolves each link checked.
struct DirBlock {
  DirBlockPtr next;
  OwnerSlot slot[kDirSlots];
};
// A block of pendingLeaves (§2.4): the next block (its owner word), then the directory slots
// of the leaves the running merge created, in order (null: not used yet).
struct PendingBlock {
  PendingBlockPtr next;
  OwnerSlotPtr slot[kPendingSlots];
};
// The persistent layout: a change here changes the pool format.
static_assert(sizeof(DirBlock) == kDirBlockBytes && offsetof(DirBlock, next) == 0 &&
              offsetof(DirBlock, slot) == 8 && sizeof(OwnerSlot) == 8);
static_assert(sizeof(PendingBlock) == kPendingBlockBytes && offsetof(PendingBlock, next) == 0 &&
              offsetof(PendingBlock, slot) == 8 && sizeof(OwnerSlotPtr) == 8);
static_assert(std::is_standard_layout_v<Root> && std::is_trivially_copyable_v<Root> &&
              std::is_standard_layout_v<DirBlock> && std::is_trivially_copyable_v<DirBlock> &&
              std::is_standard_layout_v<PendingBlock> &&
              std::is_trivially_copyable_v<PendingBlock>);

// Leaf layout (§2.2, Figure 3), computed from the leaf capacity and entry size:
//   header line: [0] owner slot offset, [1] type
//   per version v, a line-aligned crash-consistent part: 2-bit bitmap, next, max_key, rc
//     (the bitmap first: up to 256 slots it fills one line, the line a merge nearly always
//     changes, while next / max_key / rc in the next line rarely change)
//   per version v, a line-aligned partially persistent part: count, order[], fingerprints[]
//   the key-value pool (entries of key_bytes + value_bytes)
struct LeafLayout {
  std::size_t cap = 0, kbytes = 8, vbytes = 8, ebytes = 16, bm_words = 0;
  std::size_t meta_p[2]{}, meta_p_bytes = 0, meta_v[2]{}, kv = 0, bytes = 0;

  void init(std::size_t capacity, std::size_t key_bytes, std::size_t value_bytes) {
    auto line = [](std::size_t x) { return (x + 63) / 64 * 64; };
    cap = capacity;
    kbytes = key_bytes;
    vbytes = value_bytes;
    ebytes = key_bytes + value_bytes;
    bm_words = (2 * cap + 63) / 64;
    meta_p_bytes = 24 + 8 * bm_words;
    std::size_t vbytes_meta = 8 + 2 * cap + cap;
    std::size_t off = 64;
    for (int v = 0; v < 2; ++v) {
      meta_p[v] = off;
      off += line(meta_p_bytes);
    }
    for (int v = 0; v < 2; ++v) {
      meta_v[v] = off;
      off += line(vbytes_meta);
    }
    kv = off;
    bytes = off + cap * ebytes;
  }
};

inline constexpr unsigned kEmpty = 0, kOccupied = 1, kDeleted = 2;
// A fingerprint byte's two reserved codes; a key's fingerprint is never either.
inline constexpr std::uint8_t kFpEmpty = 0, kFpDeleted = 1;
// The fingerprint byte an empty or deleted slot holds.
inline constexpr std::uint8_t fp_code(unsigned state) {
  return state == kEmpty ? kFpEmpty : kFpDeleted;
}

// A view of one leaf. Version v selects the metadata set.
struct Leaf {
  std::byte* p;
  const LeafLayout* L;

  OwnerSlotPtr& owner_slot() const { return *reinterpret_cast<OwnerSlotPtr*>(p); }
  u64& type() const { return word(8); }
  std::byte* meta(int v) const { return p + L->meta_p[v]; }
  u64* bitmap(int v) const { return &word(L->meta_p[v]); }
  LeafPtr& next(int v) const {
    return *reinterpret_cast<LeafPtr*>(p + L->meta_p[v] + 8 * L->bm_words);
  }
  u64& max_key(int v) const { return word(L->meta_p[v] + 8 * L->bm_words + 8); }
  u64& rc(int v) const { return word(L->meta_p[v] + 8 * L->bm_words + 16); }
  u64& count(int v) const { return word(L->meta_v[v]); }
  std::uint16_t* order(int v) const {
    return reinterpret_cast<std::uint16_t*>(p + L->meta_v[v] + 8);
  }
  std::uint8_t* fp(int v) const {
    return reinterpret_cast<std::uint8_t*>(p + L->meta_v[v] + 8 + 2 * L->cap);
  }
  std::byte* entry(std::size_t s) const { return p + L->kv + s * L->ebytes; }
  u64 key(std::size_t s) const { return load(entry(s)); }
  u64 value(std::size_t s) const { return load(entry(s) + L->kbytes); }
  void set_entry(std::size_t s, u64 k, u64 v) const {
    pm::fill_bytes(entry(s), 0, L->ebytes);
    pm::store_bytes(entry(s), &k, 8);
    pm::store_bytes(entry(s) + L->kbytes, &v, 8);
  }
  // 2-bit slot state: 00 empty, 01 occupied, 10 deleted (§2.2).
  unsigned state(int v, std::size_t s) const {
    return static_cast<unsigned>(bitmap(v)[s / 32] >> (2 * (s % 32)) & 3);
  }
  // An empty or deleted slot's fingerprint byte takes the state's code too (kFpEmpty,
  // kFpDeleted), so a probe reads one line of fingerprints and no bitmap; an occupied slot's
  // fingerprint is the caller's to store.
  void set_state(int v, std::size_t s, unsigned st) const {
    u64& w = bitmap(v)[s / 32];
    pm::store(&w, (w & ~(u64{3} << (2 * (s % 32)))) | (u64{st} << (2 * (s % 32))));
    if (st != kOccupied) pm::store(&fp(v)[s], fp_code(st));
  }
  void copy_meta(int from, int to) const {
    pm::store_bytes(p + L->meta_p[to], p + L->meta_p[from], L->meta_p_bytes);
    pm::store_bytes(p + L->meta_v[to], p + L->meta_v[from], 8 + 3 * L->cap);
  }

 private:
  u64& word(std::size_t off) const { return *reinterpret_cast<u64*>(p + off); }
  static u64 load(const std::byte* b) {
    u64 x;
    std::memcpy(&x, b, 8);
    return x;
  }
};

inline constexpr unsigned kBadState = 3;  // bitmap code 11: no slot may hold it

inline u64 hash_key(u64 x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace dptree::detail
