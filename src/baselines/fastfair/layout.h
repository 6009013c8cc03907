// FAST_FAIR's persistent format (tree.h): the root block, the node header line and the
// entries that follow it, and the bits of a node's sync word.
#pragma once

#include <cstdint>

#include "baselines/node_chain.h"
#include "dptree/index.h"

namespace dptree::baselines::fastfair {

constexpr std::uint64_t kMagic = 0x52494146'54534146ull;  // "FASTFAIR"
constexpr Value kEnd = ~Value{0};
constexpr Value kHole = ~Value{0} - 1;

struct Entry {
  std::uint64_t key;
  std::uint64_t val;  // leaf: the value; inner: child offset; kEnd / kHole as above
};

struct Header {  // one cache line
  ChainLinks links;
  std::uint64_t sibling;   // right neighbour on this level
  std::uint64_t leftmost;  // inner: child for keys below the first entry
  std::uint64_t low_key;   // every key of this node is >= low_key (fixed at creation)
  std::uint32_t level;     // 0 = leaf
  // Volatile in meaning too (never flushed on purpose): the epoch of the open in which a
  // writer last tidied this node (FastFair::repair). A crash leaves leftovers only in nodes
  // written before it, and every open has a new epoch, so a node marked with the current one
  // needs no repair; a mark that never reached PM only makes the next open repair it again.
  std::uint32_t repaired;
  // Volatile in meaning though it lives in PM (never flushed on purpose): bit 0 the write
  // lock, bits 1..31 the version (odd while entries move left), bits 32..63 the epoch of the
  // open that last locked the node; a word of an older epoch is unlocked and stable.
  std::uint64_t sync;
};
static_assert(sizeof(Header) == 64);

struct Root {  // the root block (pool root word)
  std::uint64_t magic;
  std::uint64_t param;  // node_bytes
  ChainRoot chain;
  std::uint64_t tree_root;
  std::uint64_t epoch;  // bumped by every open (Header::sync)
};

constexpr std::uint64_t kLocked = 1;
constexpr std::uint64_t kChanging = 2;
constexpr std::uint64_t kVersionMask = 0xfffffffe;

}  // namespace dptree::baselines::fastfair
