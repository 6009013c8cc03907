// DPTree (Zhou et al., PVLDB 13(4) 2019), single-threaded, as §2 specifies: a DRAM buffer
// tree made durable by a write-optimized PM log (§2.1), merged in place into a PM base tree
// of coarse-grained versioned leaves (§2.2, §2.3), recovered by Algorithm 4 (§2.4).
//
// Keys and values are 64-bit unsigned integers. Entries are KeyBytes + ValueBytes wide in
// PM (log records and leaf slots): the key is the first 8 bytes of its field and the value
// the first 8 bytes of its field, the rest is zero padding that is written like real data,
// so 16..64-byte entries cost what the paper's Figures 8d and 10 measure. The top bit of the
// value is DPTree's tombstone bit (§2): values above max_value() = 2^63 - 1 are refused with
// dptree::Error(invalid_argument).
//
// Not thread-safe: one thread at a time (the concurrent DPTree of §3 is `CDPTree`, cdptree.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dptree/dptree_options.h"
#include "dptree/index.h"

namespace dptree {

namespace pm {
class Pool;
}

struct DPTreeStats {
  std::size_t records = 0;         // live keys (exact)
  std::size_t buffer_entries = 0;  // buffer tree entries, tombstones included
  std::size_t base_records = 0;    // live keys in the base tree
  std::size_t leaves = 0;
  std::size_t merges = 0;
  std::size_t failed_merges = 0;     // merges undone for want of PM (pool_full)
  std::size_t undone_leaves = 0;     // leaves those merges had created, freed again
  std::size_t splits = 0;            // leaves replaced by new leaves in an upsert merge
  std::size_t kept_splits = 0;       // of those, splits that kept the old leaf (split=keep_last)
  std::size_t pair_splits = 0;       // of those, splits of a leaf with its neighbour (split=thirds)
  std::size_t pair_leaves_kept = 0;  // old leaves those kept (0, 1 or 2 a pair split)
  std::size_t consolidations = 0;    // leaves consolidated (merged or rebalanced)
  std::size_t leaves_created = 0;
  std::size_t leaves_freed = 0;
  std::size_t lazy_rebuilds = 0;   // leaf metadata rebuilt after a restart (§2.2)
  std::size_t log_pages = 0;       // pages of the current log
  std::size_t free_log_pages = 0;  // pages cached in the two freelists (§2.1)
  std::uint64_t restart_count = 0;
  double merge_wait_max_ms = 0;  // the longest a write waited for a merge (inline: all of it)
  std::size_t pm_bytes = 0;      // allocator bytes of every block the tree holds
  std::size_t dram_bytes = 0;    // buffer tree, bloom filter, inner index, bookkeeping
};
// The figures above but records, pm_bytes and dram_bytes (IndexStats' own fields), named as
// `dptree bench` and `dptree check --json` report them.
std::vector<std::pair<std::string, double>> named_figures(const DPTreeStats& s);

class DPTreeCore {
 public:
  ~DPTreeCore();
  DPTreeCore(const DPTreeCore&) = delete;
  DPTreeCore& operator=(const DPTreeCore&) = delete;

  static constexpr Value kMaxValue = (Value{1} << 63) - 1;
  Value max_value() const { return kMaxValue; }

  void upsert(Key k, Value v);  // blind
  bool insert(Key k, Value v);  // only if absent
  bool update(Key k, Value v);  // only if present
  bool remove(Key k);           // whether it was present
  std::optional<Value> lookup(Key k) const;
  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const;
  std::size_t size() const;
  DPTreeStats stats() const;
  // Every structural invariant (src/st/check.cc lists them); also that the allocator's live
  // blocks are exactly the blocks the tree reaches.
  CheckReport check() const;
  // Merges the buffer tree into the base tree now (§2.3). Throws Error(pool_full) when PM
  // runs out in the middle: the merge is undone and the tree stays consistent and usable,
  // every write still in the buffer and its log. (An automatic merge, triggered by a write,
  // that fails so is retried once the buffer grew by another merge threshold; the write
  // itself succeeded.)
  void merge();
  const DPTreeOptions& options() const;

 protected:
  DPTreeCore(pm::Pool& pool, const DPTreeOptions& opt, std::size_t key_bytes,
             std::size_t value_bytes, bool create);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

template <std::size_t KeyBytes = 8, std::size_t ValueBytes = 8>
class DPTree : public DPTreeCore {
  static_assert(KeyBytes >= 8 && KeyBytes % 8 == 0 && KeyBytes <= 56, "KeyBytes: 8..56, x8");
  static_assert(ValueBytes >= 8 && ValueBytes % 8 == 0 && ValueBytes <= 56,
                "ValueBytes: 8..56, x8");

 public:
  // A new tree in `pool`, whose root word must be empty.
  static std::unique_ptr<DPTree> create(pm::Pool& pool, const DPTreeOptions& opt = {}) {
    return std::unique_ptr<DPTree>(new DPTree(pool, opt, true));
  }
  // The tree in `pool`, recovered (Algorithm 4). The leaf capacity and entry size are the
  // pool's; the other options are taken from `opt`.
  static std::unique_ptr<DPTree> open(pm::Pool& pool, const DPTreeOptions& opt = {}) {
    return std::unique_ptr<DPTree>(new DPTree(pool, opt, false));
  }

 private:
  DPTree(pm::Pool& pool, const DPTreeOptions& opt, bool create)
      : DPTreeCore(pool, opt, KeyBytes, ValueBytes, create) {}
};

}  // namespace dptree
