// FAST_FAIR's persistent format (tree.h): the root block, the node header and the entries
// that follow it, and the fields of a node's sync word.
//
// The header is 32 bytes, as the original's (leftmost and sibling pointers, level and
// counters, a mutex pointer), so a 512-byte node holds 30 slots and 29 entries as there. What
// ours keeps that the original does not fits in its words: the fixed low key takes the place
// of the mutex pointer (the original moves right by its sibling's first key, which a delete
// changes; FAIR, FAST_FAIR §4, needs a bound that stays), and the level, the lock, the version
// (the original's switch counter, §5) and the tidy mark share one word. The creation chain
// (node_chain.h) needs one word a node: the key word of the end-mark slot, which no search
// reads (an end mark is its value alone) and no shift writes (a node holds one entry fewer
// than its slots).
#pragma once

#include <cstdint>

#include "dptree/index.h"

namespace dptree::baselines::fastfair {

constexpr std::uint64_t kMagic = 0x32494146'54534146ull;  // "FASTFAI2": 32-byte headers
// The first format: 64-byte headers, three chain words a node; refused on open.
constexpr std::uint64_t kMagicWideHeader = 0x52494146'54534146ull;  // "FASTFAIR"
constexpr Value kEnd = ~Value{0};
constexpr Value kHole = ~Value{0} - 1;

struct Entry {
  std::uint64_t key;  // the last slot's: the creation chain's next node (node_chain.h)
  std::uint64_t val;  // leaf: the value; inner: child offset; kEnd / kHole as above
};

struct Header {
  std::uint64_t sibling;   // right neighbour on this level
  std::uint64_t leftmost;  // inner: child for keys below the first entry
  std::uint64_t low_key;   // every key of this node is >= low_key (fixed at creation)
  // Bits below. Volatile in meaning but for the level (never flushed on purpose after the
  // node's creation; every store keeps the level bits, so any version of it that reaches PM
  // holds the right level): the lock, the version, and the epoch of the open that last locked
  // or tidied the node; a word of an older epoch is unlocked, stable and not tidied.
  std::uint64_t sync;
};
static_assert(sizeof(Header) == 32);

constexpr std::uint64_t kLocked = 1;    // bit 0: the write lock
constexpr std::uint64_t kChanging = 2;  // bits 1..23: the version, odd while entries move left
constexpr std::uint64_t kVersionMask = 0x00fffffe;
// Bit 24: a writer of this open tidied the node (FastFair::tidy). A crash leaves leftovers
// only in nodes written before it, and every open has a new epoch, so a node marked in the
// current one needs no repair.
constexpr std::uint64_t kTidied = std::uint64_t{1} << 24;
constexpr unsigned kLevelShift = 25;  // bits 25..31: the level, 0 = leaf, fixed at creation
constexpr std::uint64_t kLevelMask = std::uint64_t{0x7f} << kLevelShift;
constexpr std::uint32_t kMaxLevel = 64;  // the open refuses more (tree.h, Path)
// Bits 32..63: the epoch.

inline std::uint32_t level_of(std::uint64_t sync) {
  return static_cast<std::uint32_t>((sync & kLevelMask) >> kLevelShift);
}

struct Root {  // the root block (pool root word)
  std::uint64_t magic;
  std::uint64_t param;  // node_bytes
  std::uint64_t first;  // owner word of the first node created (the creation chain)
  std::uint64_t tree_root;
  std::uint64_t epoch;  // bumped by every open (Header::sync)
};

}  // namespace dptree::baselines::fastfair
