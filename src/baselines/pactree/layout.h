// PACTree's persistent layout (Kim, Lee, Kim, Min, Kim, Lee, "PACTree: A High Performance
// Persistent Range Index Using PAC Guidelines", SOSP 2021), as this project builds it: a data
// layer of linked data nodes holding their key-value pairs inline, unsorted, with one-byte
// fingerprints, and their key range inline (the paper's data layer), under a search layer, a
// persistent ART (our ROART engine, its bottom words naming data nodes) that maps each data
// node's anchor key to the node. docs/indexes.md gives the design and its departures.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baselines/roart/layout.h"

namespace dptree::baselines::pactree {

using u64 = std::uint64_t;
using roart::Leaf;

// "PMPACTR3": inline pairs, and a search layer whose bottom words name data nodes. Pools of the
// earlier formats are refused with a message that says so: "PMPACTR1" (out-of-place leaves
// for every key) and "PMPACTR2" (a search layer ending at one-leaf arrays).
inline constexpr u64 kMagic = 0x3352'5443'4150'4D50ull;
inline constexpr u64 kMagicOutOfPlace = 0x3152'5443'4150'4D50ull;
inline constexpr u64 kMagicLeafArrays = 0x3252'5443'4150'4D50ull;

// 56 pairs make a node of 1 KiB, a slot size of the slab arena (a power of two); the paper's
// 64 would take a 2 KiB slot.
inline constexpr std::size_t kNodeEntries = 56;

// A pair. The integer form keeps the key and the value. The string form keeps the key's first
// 8 bytes as a big-endian word (zero-padded: ordering by it agrees with the keys' order, and
// equal words need the whole keys) and the entry word of a leaf holding the whole key and the
// value (roart::Leaf), so long keys fit.
struct Pair {
  u64 key;
  u64 val;
};

// A data node: the keys in [its anchor, the next node's anchor). Its first line is what a
// reader passing by reads: `next`, the valid-pair bitmap, the anchor and `limit`, a copy of
// the next node's anchor word, so checking that a node covers a key reads only the node's own
// first line (the paper's nodes keep their lowest and highest keys inline the same way). The
// search layer reads the anchor there too (`anchor_bytes`), so the line its path ends at is the
// one a lookup reads next. Every change is one 8-byte store of `next` or `bitmap` after what it
// names is written back; the anchor never changes, and `limit` is redone by recovery from the
// next node.
struct DataNode {
  u64 next;          // the next data node, 0 for the last
  u64 bitmap;        // bit i: pair[i] holds a key (bits >= kNodeEntries are never set)
  u64 anchor;        // the anchor's key word (as Pair::key); 0 for the head (below every key)
  u64 anchor_leaf;   // the string form: the entry word of a leaf holding the whole anchor
  u64 limit;         // the next node's `anchor`; kNoLimit in the last node
  u64 anchor_bytes;  // the integer form: the anchor's 8 key bytes (big-endian), 0 in the head
  u64 pad[2];
  u64 fp[8];  // byte i (little-endian within the words): the fingerprint of pair[i]'s key
  Pair pair[kNodeEntries];
};
static_assert(sizeof(DataNode) == 1024 && offsetof(DataNode, pair) == 128);

// The last node's limit: at or above every key word, so that a limit read before a split's new
// limit, with the split's new `next`, only ever says "covered" (see PacTree::covers_next).
inline constexpr u64 kNoLimit = ~u64{0};

enum Arena : int { kArenaNode, kArenaLeaf0 };
inline constexpr int kArenas = kArenaLeaf0 + roart::kLeafClasses;

struct alignas(64) Root {
  u64 magic;
  u64 slab_size;
  u64 form;  // roart::kFormInts or kFormStrings: a pool holds one
  u64 head;  // the first data node
  u64 dir[kArenas];
  u64 pad[4];
  roart::Root search;  // the search layer's root (its bottom words name data nodes)
};
static_assert(sizeof(Root) == 256 && offsetof(Root, search) == 128);

}  // namespace dptree::baselines::pactree
