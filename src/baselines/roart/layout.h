// ROART's persistent layout (Ma et al., "ROART: Range-query Optimized Persistent ART",
// FAST 2021), as this project builds it: ART inner nodes of four sizes, leaf arrays (the
// paper's leaf compaction) and out-of-place key-value leaves, every one a slot of a slab
// arena (slab/slab_arena.h). docs/indexes.md gives the design and its departures.
//
// Words:
//  - a child word is 0 (none) or `off | tag`, the slot's offset with its kind in the low
//    three bits; in N4, N16 and N48 the child's key byte sits in bits 56-63 of the same word
//    (the paper's entry compression), so a child is added or removed by one 8-byte store;
//  - a leaf-array entry is 0 or `fingerprint << 48 | leaf offset | size class`;
//  - in a tree embedded over an owner's records (Tree's Records: PACTree's data nodes), a
//    bottom word is `record offset | kRecord`: it names the record, which holds the key, with
//    no leaf array or leaf between (as the paper's ART names a data node by its child pointer).
// A node at depth d with prefix length p holds keys whose bytes [d, d + p) are its prefix;
// it branches on byte b = d + p. Its `end` word holds the key of length exactly b (the one
// key there can be: string keys may be prefixes of each other), its children those with
// byte b equal to their byte, at depth b + 1.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dptree::baselines::roart {

using u64 = std::uint64_t;

inline constexpr u64 kMagic = 0x3154'5241'4F52'4D50ull;  // "PMROART1"
inline constexpr std::size_t kMaxKeyBytes = 1024;

enum Tag : u64 { kArray = 1, kN4 = 2, kN16 = 3, kN48 = 4, kN256 = 5, kRecord = 6 };
inline constexpr u64 kTagMask = 7;
inline constexpr u64 kWordMask = (u64{1} << 56) - 1;  // a child word without its key byte

inline u64 child_of(u64 w) {
  return w & kWordMask;
}
inline u64 off_of(u64 w) {
  return w & kWordMask & ~kTagMask;
}
inline u64 tag_of(u64 w) {
  return w & kTagMask;
}
inline int byte_of(u64 w) {
  return static_cast<int>(w >> 56);
}
inline u64 with_byte(int byte, u64 child) {
  return u64(byte) << 56 | child;
}

// Every node starts with these three words; they are written before the node is published
// and never change (a prefix that must change is a new node: copy-on-write).
struct NodeHeader {
  u64 meta;    // tag | depth << 8 | prefix length << 32
  u64 prefix;  // the prefix's first bytes (up to 8), first byte lowest
  u64 end;     // child word of the key that ends at the branch byte
};
static_assert(sizeof(NodeHeader) == 24);

inline constexpr std::size_t kStoredPrefix = 8;

inline u64 meta_word(Tag t, std::size_t depth, std::size_t plen) {
  return u64(t) | u64(depth) << 8 | u64(plen) << 32;
}
inline std::size_t meta_depth(u64 m) {
  return (m >> 8) & 0xFFFFFF;
}
inline std::size_t meta_plen(u64 m) {
  return m >> 32;
}

// Children per node kind, and the slot each takes (a power of two for the slab arena).
template <Tag T>
inline constexpr std::size_t kFan = T == kN4    ? 4
                                    : T == kN16 ? 16
                                    : T == kN48 ? 48
                                                : 256;

struct N4 {
  NodeHeader h;
  u64 child[4];  // compressed, unsorted; 0 is a free word
};
struct N16 {
  NodeHeader h;
  u64 child[16];  // compressed, unsorted
};
struct N48 {
  NodeHeader h;
  u64 child[48];           // compressed: each names its own byte
  std::uint8_t slot[256];  // 1 + the child word of each byte, 0 for none: rebuilt by recovery
};
struct N256 {
  NodeHeader h;
  u64 child[256];  // by byte, no key byte in the word
};
static_assert(sizeof(N4) == 56 && sizeof(N16) == 152 && sizeof(N48) == 664 && sizeof(N256) == 2072);
inline constexpr std::size_t kNodeSlot[4] = {64, 256, 1024, 4096};  // N4, N16, N48, N256

// A leaf array (leaf compaction): unsorted entries with fingerprints.
inline constexpr std::size_t kArrayEntries = 64;
struct LeafArray {
  u64 entry[kArrayEntries];
};
static_assert(sizeof(LeafArray) == 512);

inline constexpr int kFpShift = 48;
inline constexpr u64 kClassMask = 7;
inline u64 entry_leaf(u64 e) {
  return e & ((u64{1} << kFpShift) - 1) & ~kClassMask;
}
inline int entry_class(u64 e) {
  return static_cast<int>(e & kClassMask);
}
inline unsigned entry_fp(u64 e) {
  return static_cast<unsigned>(e >> kFpShift);
}

// A key-value leaf, out of place: written and persisted before an entry names it; its key
// never changes, its value is updated by one 8-byte store.
struct Leaf {
  u64 len;    // key bytes
  u64 value;  // the value
  // the key's bytes follow
  const char* key() const { return reinterpret_cast<const char*>(this + 1); }
  char* key() { return reinterpret_cast<char*>(this + 1); }
};
static_assert(sizeof(Leaf) == 16);
inline constexpr int kLeafClasses = 7;  // slots of 32 << c bytes: 32 .. 2048
inline int leaf_class(std::size_t key_bytes) {
  int c = 0;
  while ((std::size_t{32} << c) < sizeof(Leaf) + key_bytes) ++c;
  return c;
}

// The arenas, in the order of the root's directory words.
enum Arena : int { kArenaN4, kArenaN16, kArenaN48, kArenaN256, kArenaArray, kArenaLeaf0 };
inline constexpr int kArenas = kArenaLeaf0 + kLeafClasses;

inline constexpr u64 kFormInts = 0, kFormStrings = 1;

struct alignas(64) Root {
  u64 magic;
  u64 slab_size;
  u64 dir[kArenas];  // slab directories
  u64 form;          // kFormInts or kFormStrings: a pool holds one
  u64 tree;          // the top child word
};
static_assert(sizeof(Root) == 128);

}  // namespace dptree::baselines::roart
