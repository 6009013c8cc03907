// DPTreeCore::Impl: the parts of one single-threaded DPTree (dptree.h) put together: the
// buffer tree (btree.h over an arena) and its bloom filter (bloom.h), the PM log (plog.h), the base
// tree (base_tree.h), the merge driver over them (merge.h), recovery (recovery.cc, Algorithm 4) and
// check (check.cc).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "btree/btree.h"
#include "btree/node_arena.h"
#include "dptree/dptree.h"
#include "dptree/pm/pool.h"
#include "engine/bloom.h"
#include "engine/family.h"
#include "engine/merge.h"
#include "engine/owner_dir.h"
#include "engine/plog.h"
#include "engine/validate.h"
#include "format/layout.h"
#include "st/base_tree.h"

namespace dptree::detail {

// The buffer tree (§2.1): a small DRAM B+-tree of upserts, volatile (the PM log replays it on
// recovery); values carry the tombstone bit untouched. Every merge empties it and it refills
// to the same size, so its nodes come from an arena that clear() rewinds: no allocation, free
// or fresh page fault per node after the first merge cycle. Its nodes are searched branch-free
// (btree::NodeSearch: faster on this small tree of random keys).
using BufferTree = btree::BPlusTree<u64, u64, 32, 32, std::less<u64>, btree::ArenaNodes,
                                    btree::NodeSearch::branch_free>;

}  // namespace dptree::detail

namespace dptree {

// The persistent pieces shared with the concurrent DPTree are TreeParts (family.h).
struct DPTreeCore::Impl : detail::TreeParts {
  DPTreeOptions opt;
  detail::Root* root = nullptr;

  // Built once `root` is known (create / open).
  std::unique_ptr<detail::PLog> log;
  std::unique_ptr<detail::BaseTree> base;

  detail::BufferTree buffer;
  detail::Bloom bloom;
  std::vector<detail::KVPair> merge_entries;  // the buffer in key order, kept across merges
  std::vector<detail::u64> merge_old_leaves;  // a merge's old leaf list, for its collection
  // A scan's batch of base entries, kept across scans (one thread at a time, as every call).
  mutable std::vector<detail::KVPair> scan_batch;

  // Counters for stats().
  std::size_t merges = 0, failed_merges = 0, undone_leaves = 0, freed = 0;
  detail::MergeCounters counters;
  detail::MergeBlock merge_block{pool};  // set while the last merge failed for want of PM

  Impl(pm::Pool& p, const DPTreeOptions& o);

  int cv() const { return static_cast<int>(root->gv & detail::kVersionBit); }

  void create(std::size_t kb, std::size_t vb);
  void open(std::size_t kb, std::size_t vb);
  void attach(std::size_t kb, std::size_t vb);
  void recover(detail::OpenedList list);  // recovery.cc: the list as validate_on_open returns it

  std::size_t merge_threshold() const;
  void reset_bloom();
  void upsert_raw(detail::u64 k, detail::u64 v);
  void write_allowed();
  std::optional<detail::u64> lookup(detail::u64 k) const;
  std::size_t scan(detail::u64 start, std::size_t count, std::vector<KV>& out) const;
  std::size_t size() const;
  void merge();
  void check(CheckReport& r) const;  // check.cc, with its parts:
  std::size_t check_leaf(detail::Leaf lf, int v, const detail::LeafWalk& walk,
                         CheckReport& r) const;
  bool check_leaves(int v, detail::LeafWalk& walk, std::size_t& total, CheckReport& r) const;
  bool check_log(int v, const std::unordered_set<detail::u64>& owned, std::set<detail::u64>& reach,
                 std::size_t& npages, std::size_t& records, CheckReport& r) const;
  std::size_t pm_bytes() const;
};

}  // namespace dptree
