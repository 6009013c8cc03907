// The owner directory: persistent slots that own DPTree's leaves and log pages (layout.h
// says why), and the persistent pendingLeaves list of a running merge (§2.4).
//
// Both are safe to call from several threads at once (a mutex each; a merge takes a slot
// per new leaf, rarely enough that the lock costs nothing), so the per-partition merge
// workers of §3.3 can create leaves concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <unordered_set>
#include <vector>

#include "dptree/index.h"
#include "format/dir_blocks.h"
#include "format/layout.h"

namespace dptree::pm {
class Pool;
}  // namespace dptree::pm

namespace dptree::detail {

class OwnerDir {
 public:
  // `head` is the persistent word holding the first directory block (Root::dir).
  OwnerDir(pm::Pool& pool, DirBlockPtr* head);
  // Rebuilds the volatile list of free slots from PM (open, recovery), walking the blocks
  // checked (format/dir_blocks.h).
  void load();
  // A zero slot (a new directory block if none is left; may throw pool_full).
  u64 take_slot();
  // Gives back a slot that still holds 0 (a reservation that failed).
  void return_slot(u64 slot);
  // Frees the block `slot` owns (no-op if none) and makes the slot reusable.
  void free_owned(u64 slot);
  // Every directory block, in list order (check(), stats, sweeps).
  std::vector<DirBlockPtr> blocks() const;
  // fn(slot, block) for every non-null slot (offsets).
  template <class F>
  void for_each_owned(F&& fn) const {
    for (DirBlockPtr b : blocks()) {
      const OwnerSlot* slot = block(b)->slot;
      for (std::size_t i = 0; i < kDirSlots; ++i)
        if (slot[i]) fn(dir_slot(b, i).off, slot[i].off);
    }
  }
  std::size_t dram_bytes() const;

 private:
  const DirBlock* block(DirBlockPtr b) const;
  pm::Pool& pool_;
  DirBlockPtr* head_;
  mutable std::mutex mu_;
  std::vector<DirBlockPtr> blocks_;
  std::vector<u64> free_;
};

// pendingLeaves (§2.4): the owner slots of leaves a merge created, persisted before the
// leaves are activated, so recovery can reclaim them after a crash inside the merge. It
// exists from a merge's first new leaf to the end of its garbage collection; "garbage
// collection unfinished" (Algorithm 4 line 5) is the gv bit kInGc (layout.h), which also
// covers a merge that created no leaf.
class PendingLeaves {
 public:
  PendingLeaves(pm::Pool& pool, PendingBlockPtr* head);
  // Starts an empty list (merge start); the first add creates its first block.
  void start();
  // Records `slot` persistently (flush + fence); may create a block and throw pool_full.
  // Thread-safe.
  void add(u64 slot);
  // The recorded slots (read from PM through the checked walk: also after a crash).
  std::vector<u64> slots() const;
  bool exists() const { return static_cast<bool>(*head_); }
  // Frees every block, last first (idempotent, crash-safe).
  void destroy();

 private:
  void new_block_if_full();
  pm::Pool& pool_;
  PendingBlockPtr* head_;
  std::mutex mu_;
  std::vector<PendingBlockPtr> blocks_;
  std::size_t pos_ = 0;
};

// check(): the directory's blocks (each into `reach`, the first block reached twice
// reported) and the blocks its slots own (into `owned`), walked checked from `head`. False,
// reported into `r`, when the walk cannot go on.
bool check_directory(const pm::Pool& pool, const DirBlockPtr& head, std::unordered_set<u64>& owned,
                     std::set<u64>& reach, CheckReport& r);

// check() of a DPTree family: every block the directory owns is reachable, every live
// allocator block is reachable (no leak) and every reachable block is live. Reports into
// `r`; returns the number of live blocks.
std::size_t check_block_ownership(const pm::Pool& pool, const std::unordered_set<u64>& owned,
                                  const std::set<u64>& reach, CheckReport& r);

}  // namespace dptree::detail
