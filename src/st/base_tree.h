// The base tree (§2.2): the PM leaf list of two versions, reached from Root::head[v], the
// global version word Root::gv (bit 0 the version, bit 1 in_merge) and the DRAM inner index
// (the leaves' max keys, rebuilt after every merge, phase 5). Lookups and scans read the
// version gv names; leaves whose restart counter lags are rebuilt on first touch (§2.2).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "dptree/index.h"
#include "engine/base_leaf.h"
#include "engine/key_search.h"
#include "format/layout.h"

namespace dptree::pm {
class Pool;
}

namespace dptree::detail {

class BaseTree {
 public:
  BaseTree(pm::Pool& pool, Root* root, const LeafLayout& L);

  int cv() const { return static_cast<int>(root_->gv & kVersionBit); }
  Leaf leaf(u64 off) const;
  // The word linking `prev`'s successor in version v (the head word when prev == 0).
  u64 restart_count() const { return root_->restart_count; }
  u64 base_count() const { return root_->base_count[cv()]; }

  // Phase 5: the inner index from the max keys of version cv's leaves, and which of them have
  // metadata current for this restart (read from the same line as the max key).
  void rebuild_inner();
  // The same over `leaves`, the current version's chain in order, and their max keys, as the
  // open-time check read them (validate.h): recovery reads no leaf again. No leaf's metadata
  // is current: the check refused a restart counter above the root's, and recovery (Algorithm 4
  // line 7) has raised the root's before this.
  void rebuild_inner(std::vector<u64> leaves, std::vector<u64> max);
  const std::vector<u64>& leaves() const { return leaf_; }
  const std::vector<u64>& max_keys() const { return max_; }
  // Index (in leaves()) of the leaf whose range holds k; leaves().size() if none.
  std::size_t leaf_index(u64 k) const;
  // ensure_leaf_meta on the current version of leaves()[i], counted in lazy_rebuilds(). The
  // DRAM flag of the inner index answers without touching the leaf once it is current.
  void ensure_meta(std::size_t i) const;

  // Starts loading the lines a lookup of a key with hash h reads in leaves()[i] (the
  // fingerprints and the key slots of its home block), so the misses overlap.
  void prefetch(std::size_t i, u64 h, ProbeMode mode) const;
  std::optional<u64> lookup(u64 k, ProbeMode mode) const {
    return lookup_at(leaf_index(k), k, hash_key(k), mode);
  }
  // k in leaves()[i], which the caller found with leaf_index(k); `h` is hash_key(k).
  std::optional<u64> lookup_at(std::size_t i, u64 k, u64 h, ProbeMode mode) const;
  // Appends version cv's entries from the first key >= start to out, in key order, at most
  // n of them. True when they reach the end of the base tree (fewer than n may then be
  // appended); false when n were appended and more may follow.
  bool collect(u64 start, std::size_t n, std::vector<KVPair>& out) const;

  std::size_t lazy_rebuilds() const { return lazy_rebuilds_; }
  std::size_t dram_bytes() const {
    return 8 * (max_.capacity() + leaf_.capacity()) + fresh_.capacity() + search_.dram_bytes();
  }

 private:
  pm::Pool& pool_;
  Root* root_;
  const LeafLayout& L_;
  std::vector<u64> max_, leaf_;
  KeySearch search_;                         // over max_
  mutable std::vector<std::uint8_t> fresh_;  // leaf_[i]'s metadata is current (§2.2)
  mutable std::size_t lazy_rebuilds_ = 0;
};

}  // namespace dptree::detail
