// The concurrent DPTree of the DPTree paper's §3 (Zhou et al., PVLDB 13(4) 2019): writes go
// to the Front concurrent persistent buffer tree (an OLC B+-tree made durable by a PM log
// hash-partitioned on key, §3.1); when it is full it becomes the read-only Middle buffer and
// is merged into the PM base tree in the background by a pool of merge workers (§3.3,
// Algorithm 9) while a new Front takes the writes. Readers consult Front, then Middle, then
// the base tree, guarded by thread-local sync words instead of shared counters (§3.2,
// Algorithms 6-8). Recovery replays the log partitions in parallel.
//
// Keys and values are 64-bit unsigned integers in 16-byte entries; the top bit of a value is
// the tombstone bit (values above 2^63 - 1 are refused). Every operation is safe from any
// number of threads at once. The persistent format is DPTree's (base leaves, owner
// directory, log pages) with a root of its own (a `dptree` pool is refused and vice versa).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dptree/dptree_options.h"  // kMaxMergeRecords
#include "dptree/index.h"

namespace dptree {

namespace pm {
class Pool;
}

// Options with the paper's §4.4 defaults for the concurrent DPTree.
struct CDPTreeOptions {
  std::size_t log_partitions = 64;        // N hash partitions of the log (§3.1)
  double merge_ratio = 0.07;              // R
  double bloom_error_rate = 0.03;         // bloom filter of each buffer tree
  std::size_t leaf_bytes = 8192;          // base-tree leaf size; sets the leaf capacity
  std::size_t leaf_capacity = 0;          // slots per leaf; 0: the most that fit leaf_bytes
  std::size_t log_page_size = 64 * 1024;  // PM log page
  double fill_rate = 0.7;                 // FR (§2.3)
  double consolidate_threshold = 0.34;    // CT (§2.3)
  // How a leaf too full for its merge entries splits: rebuild (Algorithm 2) or thirds
  // (dptree_options.h); keep_last is DPTree's only.
  SplitMode split = SplitMode::rebuild;
  // Floor of the merge trigger (R * base is tiny while the base is small). The buffer size
  // is counted per log page when the page is allocated (Algorithm 5 line 13), so 0 means
  // 2 * log_partitions pages' worth of records: with less, the first page of every partition
  // would trigger a merge of a nearly empty buffer.
  std::size_t min_merge_records = 0;
  unsigned merge_threads = 0;     // merge workers (Algorithm 9); 0: hardware threads
  unsigned recovery_threads = 0;  // threads of an open (checks, leaf reads, replay); 0: hardware
  // The merge workers' nice value (0..19). Above 0 the kernel gives the writers the CPU
  // first when there are more runnable threads than cores, so a background merge preempts
  // writes less often (a lower insert p99.99), and it takes longer, so the Front grows further
  // past the trigger meanwhile (docs/cdptree.md, "Merge workers' priority").
  unsigned merge_nice = 0;
  std::size_t psize = 64;  // PSize: base leaves per merge partition (§3.3)
  // false: the writer that starts a merge runs it itself, to the end, instead of a
  // background thread (deterministic single-threaded tests; the readers' protocol is the same).
  bool background_merge = true;
  // With background_merge false: the writers run the merge a step at a time (one partition's
  // merge or flush, or the publication) between their writes, paced over the first half of
  // the next Front's fill, so a write waits for one step, not a whole merge. Integer keys only
  // (docs/cdptree.md, "A merge in steps").
  bool merge_steps = false;
  bool inplace_update = true;  // §3.4: in-place 8-byte update of keys only in the base tree
  // §3.4: a delete of a key only in the base tree sets the tombstone bit of its base value
  // in place (one 8-byte store, no log record); the next merge drops the entry.
  bool inplace_delete = true;

  // Throws dptree::Error(invalid_argument) naming the bad option and its accepted range.
  void validate() const;
  // Reads the keys above from an IndexConfig option map (booleans as 0/1); unknown keys
  // are refused, naming the accepted ones.
  static CDPTreeOptions from_map(const std::map<std::string, std::string>& m);
};

struct CDPTreeStats {
  std::size_t records = 0;         // live keys (exact when no thread writes)
  std::size_t front_entries = 0;   // Front buffer entries, tombstones included
  std::size_t middle_entries = 0;  // Middle buffer entries (0 when no merge runs)
  std::size_t base_records = 0;    // live keys of the base tree (§3.4: docs/cdptree.md)
  std::size_t leaves = 0;          // base leaves
  std::size_t leaf_capacity = 0;
  std::size_t merges = 0;            // completed merges
  std::size_t merge_partitions = 0;  // merge partitions processed, over all merges
  std::size_t splits = 0, consolidations = 0, leaves_created = 0, leaves_freed = 0;
  std::size_t lazy_rebuilds = 0;    // leaf metadata rebuilt after a restart (§2.2, §3.2)
  std::size_t inplace_updates = 0;  // §3.4 updates done in the base tree
  std::size_t failed_merges = 0;    // merge attempts undone for want of PM (pool_full)
  std::size_t merge_retries = 0;    // retries of such a merge (after removes, or merge())
  std::size_t merge_steps_run = 0;  // merge_steps: steps the writers (or waits) ran, all merges
  std::size_t inplace_deletes = 0;  // §3.4 deletes done in the base tree (tombstone bit)
  std::size_t log_pages = 0;        // pages of the Front log
  std::size_t free_log_pages = 0;   // pages cached in the freelists
  std::uint64_t restart_count = 0;
  // The last open's recovery (0 for a tree created by this process), in seconds: all of it,
  // and its phases: the open-time checks of the pool (which read every leaf's header and
  // list words), the inner index built from what they read, the log replay into the
  // buffers, and the sweep of the unused log pages (docs/cdptree.md, "Recovery").
  double last_recovery_seconds = 0;
  double recovery_check_seconds = 0, recovery_index_seconds = 0, recovery_replay_seconds = 0,
         recovery_sweep_seconds = 0;
  // The longest a write waited at the merge trigger (Algorithm 7 lines 6-16: the Front's
  // hand-over, or all of the merge when merges run inline), apart from any time it was
  // descheduled elsewhere. A write that finds a merge running is not timed.
  double merge_wait_max_ms = 0;
  std::size_t pm_bytes = 0, dram_bytes = 0;
};
// The figures the registry's `cdptree` entry reports beside records, pm_bytes and dram_bytes
// (IndexStats' own fields), named as `dptree bench` and `dptree check --json` report them.
std::vector<std::pair<std::string, double>> named_figures(const CDPTreeStats& s);

class CDPTree {
 public:
  static constexpr Value kMaxValue = (Value{1} << 63) - 1;

  // A new tree in `pool` (whose root word must be empty), or the tree it holds, recovered.
  static std::unique_ptr<CDPTree> create(pm::Pool& pool, const CDPTreeOptions& opt = {});
  static std::unique_ptr<CDPTree> open(pm::Pool& pool, const CDPTreeOptions& opt = {});
  ~CDPTree();  // waits for a running merge
  CDPTree(const CDPTree&) = delete;
  CDPTree& operator=(const CDPTree&) = delete;

  // A blind write: logged into the Front, never a search of the base tree first.
  void upsert(Key k, Value v);
  // An upsert of a key the caller believes present: §3.4's in-place update when the key is in
  // the base tree only (one 8-byte store, no log record), else as upsert.
  void overwrite(Key k, Value v);
  bool insert(Key k, Value v);  // only if absent
  bool update(Key k, Value v);  // only if present
  bool remove(Key k);           // whether it was present
  std::optional<Value> lookup(Key k) const;
  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const;

  // Starts a merge of the Front now if none runs, or retries one that failed for want of PM.
  // With wait: first waits for a merge that runs (it may not hold the latest writes), then
  // for the Front's; throws Error(pool_full) if it did not fit.
  void merge(bool wait = true);
  // Waits until no merge runs.
  void wait_for_merge() const;
  CDPTreeStats stats() const;
  // Every structural invariant, for a tree no other thread uses (waits for a running merge):
  // base leaves, inner index, logs replaying to the buffers, no leaked PM block.
  CheckReport check() const;
  const CDPTreeOptions& options() const;

 private:
  CDPTree();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dptree
