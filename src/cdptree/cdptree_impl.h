// CDPTree::Impl: the concurrent DPTree (§3) put together from dptree's persistent pieces
// (leaf layout and leaf operations, range merge, owner directory, pendingLeaves, log page
// cache, record codec) and the concurrent ones of this folder (OLC buffer tree, partitioned
// log, sync words, base snapshots).
//
// Persistent state: a CRoot whose first part is dptree's Root (global version gv, restart
// count, leaf heads, base counts, pendingLeaves, directory), plus one header table of N
// partition tail words per log version. gv bit 2 (kTwoLogs) says that two logs are live: it
// is persisted by the writer that starts a merge BEFORE the new Front can take a write, and
// cleared by the version flip (which writes gv = nv). Recovery therefore replays the log of
// version gv and, when kTwoLogs is set, the log of the other version after it (the Front's
// records are newer), then finishes that merge; otherwise a non-empty table of the other
// version is a released log whose release was interrupted.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_set>
#include <vector>

#include "cdptree/base.h"
#include "cdptree/cpbt.h"
#include "cdptree/merge_driver.h"
#include "cdptree/merge_pool.h"
#include "cdptree/plog.h"
#include "cdptree/sync.h"
#include "dptree/cdptree.h"
#include "dptree/pm/pool.h"
#include "engine/family.h"
#include "engine/merge.h"
#include "engine/owner_dir.h"
#include "engine/plog.h"
#include "engine/validate.h"
#include "format/cdptree_root.h"
#include "format/layout.h"

namespace dptree {

namespace cdp {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

using detail::CRoot;
using detail::kCRootMagic;
using detail::kTwoLogs;

}  // namespace cdp

// The persistent pieces shared with the single-threaded DPTree are TreeParts (family.h); the
// merge trigger, hand-over, retirement and parking, and recovery, shared with the string
// form, are the MergeDriver's (merge_driver.h), over this form's hooks.
struct CDPTree::Impl : detail::TreeParts, cdp::MergeDriver<CDPTree::Impl, cdp::Cpbt> {
  using u64 = detail::u64;
  Impl(pm::Pool& p, const CDPTreeOptions& o);
  ~Impl();

  CDPTreeOptions opt;
  cdp::CRoot* root = nullptr;
  std::unique_ptr<cdp::LogShared> shared;

  // The buffers' node memory, handed from each merged Middle to the next Front
  // (btree/chunk_memory.h).
  mutable btree::NodeChunks node_chunks;
  std::atomic<cdp::BaseSnapshot*> gp_b{nullptr};  // GP_B (GP_F, GP_M: the MergeDriver's)

  std::atomic<std::size_t> merge_partitions{0}, splits{0}, consolidations{0}, created{0}, freed{0},
      lazy_rebuilds{0}, inplace_updates{0}, inplace_deletes{0};
  // §3.4: true from open() until a merge starts: tombstones written in place before the
  // restart may be in any leaf, so the recovered snapshot marks every leaf (base.h).
  std::atomic<bool> restarted{false};
  cdp::RecoveryTimes recovery_times;  // the last open's phases (CDPTreeStats)

  int cv() const { return static_cast<int>(root->base.gv & 1); }
  detail::LogPagePtr* table(int v) const { return pool.get(root->log_table[v]); }
  cdp::BaseCtx base_ctx() const {
    return cdp::BaseCtx{pool, L, root->base.restart_count, const_cast<Impl*>(this)->lazy_rebuilds,
                        restarted.load()};
  }
  unsigned merge_workers() const;
  unsigned recovery_workers() const;
  unsigned pool_threads() const;
  std::size_t threshold(std::size_t base_count) const;
  cdp::Cpbt* new_cpbt(int ver) const;

  void create();
  void open();
  void attach();
  void ensure_tables();

  // Operations (cdptree.cc).
  std::optional<u64> lookup_raw(u64 k) const;
  // Middle (unless it is `writing`, the buffer the caller holds a leaf lock in), then base,
  // under the calling thread's sync words `s` (found once per operation).
  std::optional<u64> below_front(u64 k, const cdp::Cpbt* writing, cdp::SyncManager::Slot& s) const;
  bool present_below(u64 k, const cdp::Cpbt* writing) const;
  bool try_inplace(u64 k, u64 v);  // §3.4; v = kTombstone: delete in place
  // update / remove: k's value becomes v (kTombstone: removed) only if k is present.
  bool replace(u64 k, u64 v);
  // §3.4: what the next merge must scan for tombstones written in place (the leaves of
  // `old` marked, all of them after a restart); ends the restart's unknown state.
  std::function<bool(u64)> tombstone_filter(const cdp::BaseSnapshot& old);
  template <class F>
  std::optional<u64> write(u64 k, F&& decide);
  std::size_t scan(u64 start, std::size_t count, std::vector<KV>& out) const;
  std::size_t count_live() const;

  // The merge driver's hooks (merge_driver.h; parallel_merge.cc).
  cdp::Cpbt* new_front(int ver) const { return new_cpbt(ver); }
  // The Front's log counts a page when it is allocated (Algorithm 5): merged when it is not
  // empty and, unless forced, still at the threshold (the trigger's size is the same count).
  bool front_due(const cdp::Cpbt& f, bool force) const;
  // Line 7: a writer waits out premerge, then may start a merge the winner stepped back from.
  static constexpr bool kWaitOutPreMerge = true;
  static constexpr bool kMergeInSteps = true;
  void front_not_due() {}
  std::size_t next_threshold() const { return threshold(gp_b.load()->count); }
  bool run_merge(bool retry);
  cdp::Steps merge_steps(bool retry);
  // Nothing: the merge released the Middle's log, which its readers (in the DRAM tree) never read.
  void release_middle(cdp::Cpbt&) {}
  // merge_steps: a retired Middle's filter pages handed back, 4 MiB a step; whether any are left.
  bool shrink_middle(cdp::Cpbt& m) { return m.bloom.drop_pages(std::size_t{4} << 20); }
  void after_merge();
  bool merged_in_part() const { return false; }  // a merge is whole or undone
  cdp::CRoot& croot() const { return *root; }
  const pm::Pool& pm_pool() const { return pool; }
  const CDPTreeOptions& options() const { return opt; }
  // Algorithm 9 over the Middle m (with the Front `newer`'s entries laid over it on a retry).
  // Pauses between steps with merge_steps; throws pool_full after undoing the merge.
  cdp::Steps parallel_tree_merge(cdp::Cpbt* m, const cdp::Cpbt* newer);
  detail::TreeParts& parts() { return *this; }

  // Recovery's hooks (merge_driver.h; recovery.cc).
  // validate.h, before recovery: the current version's leaves in list order, their max keys.
  detail::OpenedList validate_open() const;
  void finish_crashed_merge();
  void finish_log_release(int v);
  void build_base(detail::OpenedList& list);
  void replay(cdp::Cpbt& b, std::size_t p);
  std::vector<u64> log_pages(const cdp::Cpbt& b) const { return b.log.pages(); }
  void sweep_log_pages(std::unordered_set<u64> in_use, const detail::OpenedList& list);

  void check(CheckReport& r) const;  // check.cc, with its parts:
  struct LeafCount {
    std::size_t keys = 0, tombstones = 0;
  };
  LeafCount check_leaf(detail::Leaf lf, int v, const detail::LeafWalk& walk,
                       const cdp::BaseSnapshot& snap, CheckReport& r) const;
  bool check_leaves(int v, detail::LeafWalk& walk, LeafCount& total, CheckReport& r) const;
  std::size_t check_front_log(int v, const std::unordered_set<u64>& owned, std::set<u64>& reach,
                              std::size_t& pages_n, std::size_t& records, CheckReport& r) const;
  std::size_t pm_bytes() const;
};

}  // namespace dptree
