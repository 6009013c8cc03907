// PACTree's persistent layout (Kim, Lee, Kim, Min, Kim, Lee, "PACTree: A High Performance
// Persistent Range Index Using PAC Guidelines", SOSP 2021), as this project builds it: a data
// layer of linked data nodes (unsorted entries with fingerprints, out-of-place key-value
// leaves) under a search layer, a persistent ART (our ROART engine) that maps each data
// node's anchor key to the node. docs/indexes.md gives the design and its departures.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baselines/roart/layout.h"

namespace dptree::baselines::pactree {

using u64 = std::uint64_t;
using roart::Leaf;

inline constexpr u64 kMagic = 0x3152'5443'4150'4D50ull;  // "PMPACTR1"
inline constexpr std::size_t kNodeEntries = 62;

// A data node: the keys in [its anchor, the next node's anchor). Entries are ROART's leaf-array
// entries (fingerprint | leaf offset | size class); `next` and the entries change by one
// 8-byte store each, `anchor` never.
struct DataNode {
  u64 next;    // the next data node, 0 for the last
  u64 anchor;  // entry word of a leaf holding the anchor key; 0 for the head (below every key)
  u64 entry[kNodeEntries];
};
static_assert(sizeof(DataNode) == 512);

enum Arena : int { kArenaNode, kArenaLeaf0 };
inline constexpr int kArenas = kArenaLeaf0 + roart::kLeafClasses;

struct alignas(64) Root {
  u64 magic;
  u64 slab_size;
  u64 form;  // roart::kFormInts or kFormStrings: a pool holds one
  u64 head;  // the first data node
  u64 dir[kArenas];
  u64 pad[4];
  roart::Root search;  // the search layer's root
};
static_assert(sizeof(Root) == 256 && offsetof(Root, search) == 128);

}  // namespace dptree::baselines::pactree
