// CAWBT's persistent format (tree.h): the 64-byte node, the 16-byte record, the one-line
// split redo record and the root block, with the helpers that read a node.
#pragma once

#include <cstdint>

#include "dptree/index.h"

namespace dptree::baselines::cawbt {

constexpr std::uint64_t kMagic = 0x31544257'41434350ull;  // "PCCAWBT1"
constexpr std::uint64_t kLeafBit = 1;
constexpr int kIds = 4;   // IDs per node (§3.2.2: degree 4)
constexpr int kPtrs = 5;  // pointers per node
constexpr Value kTombstone = Value{1} << 63;
constexpr std::uint32_t kLogValid = 0xCA5B7001u;

struct alignas(64) Node {
  std::uint64_t meta;  // parent offset | kLeafBit
  std::uint32_t id[kIds];
  std::uint64_t ptr[kPtrs];
};
static_assert(sizeof(Node) == 64);

struct Record {
  Key key;
  Value value;  // kTombstone set: deleted, kept because the ID is a separator
};
static_assert(sizeof(Record) == 16);

// The minimal redo record of a split (§3.4, Fig. 6): one cache line. Offsets are stored
// divided by 16 (every node and record is 16-byte aligned), so 4 bytes each cover 64 GiB.
struct alignas(64) SplitLog {
  std::uint32_t status;  // kLogValid while a split is in flight
  std::uint32_t src, fresh, parent, new_root;
  std::uint32_t sep;    // the ID that goes up
  std::uint32_t leaf;   // splitting a leaf
  std::uint32_t moved;  // IDs that move to the new node (leaf 2, inner 1)
  std::uint32_t id[2];
  std::uint32_t ptr[3];  // pointers that move (leaf 2, inner 2)
  std::uint32_t unused[3];
};
static_assert(sizeof(SplitLog) == 64);

struct alignas(64) Root {
  std::uint64_t magic;
  std::uint64_t slab_size;
  std::uint64_t node_dir;  // slab directories (SlabArena)
  std::uint64_t record_dir;
  std::uint64_t root_node;
  std::uint64_t pad[3];
  SplitLog log;
};
static_assert(sizeof(Root) == 128);

inline std::uint32_t enc(std::uint64_t off) {
  return static_cast<std::uint32_t>(off >> 4);
}
inline std::uint64_t dec(std::uint32_t v) {
  return std::uint64_t{v} << 4;
}

inline int count_ids(const Node& n) {
  int c = 0;
  while (c < kIds && n.id[c]) ++c;
  return c;
}
inline bool is_leaf(const Node& n) {
  return n.meta & kLeafBit;
}
inline std::uint64_t parent_of(const Node& n) {
  return n.meta & ~kLeafBit;
}

}  // namespace dptree::baselines::cawbt
