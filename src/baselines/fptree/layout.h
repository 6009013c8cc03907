// FPTree's persistent layout (Oukid et al., "FPTree: A Hybrid SCM-DRAM Persistent and
// Concurrent B-Tree for Storage Class Memory", SIGMOD 2016): the root block and the leaves.
// Both key forms share it. A slot's key word is the key itself (integer form) or a key blob
// word (string form, key_blobs.h); a leaf's low key word likewise.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baselines/node_chain.h"

namespace dptree::baselines::fptree {

using u64 = std::uint64_t;

inline constexpr u64 kMagic = 0x45455254'50464d50ull;  // "PMFPTREE"
inline constexpr std::size_t kMaxCapacity = 56;

struct Entry {
  u64 key;  // the key, or its key blob word
  u64 val;
};

struct Leaf {
  ChainLinks links;  // line 0 (node_chain.h wants the links first)
  u64 next;          // the next leaf in key order
  u64 low_key;       // every key of this leaf is >= low_key (fixed at creation; 0: the smallest)
  u64 pad[3];
  u64 bitmap;  // line 1: validity bits and fingerprints
  std::uint8_t fp[kMaxCapacity];
  // then `capacity` Entry slots (the block is sized for them): kvs()
};
static_assert(offsetof(Leaf, bitmap) == 64 && sizeof(Leaf) == 128);

inline Entry* kvs(Leaf* l) {
  return reinterpret_cast<Entry*>(l + 1);
}
inline const Entry* kvs(const Leaf* l) {
  return reinterpret_cast<const Entry*>(l + 1);
}

// Key blobs of the string form come in slots of 16 << c bytes, c < kBlobClasses.
inline constexpr int kBlobClasses = 8;
inline constexpr u64 kFormInts = 0, kFormStrings = 1;  // a pool holds one

struct Root {
  u64 magic;
  u64 param;  // leaf capacity
  ChainRoot chain;
  u64 log_leaf;      // split micro-log: the leaf being split
  u64 log_new_leaf;  // and its new right half
  u64 form;          // kFormInts or kFormStrings, decided by the open that makes the first leaf
  u64 slab_size;     // string form: the key blob arenas' slab size
  u64 blob_dir[kBlobClasses];  // string form: the key blob arenas' directories
};

}  // namespace dptree::baselines::fptree
