// The concurrent DPTree over byte-string keys (string_index.h; docs/cdptree.md "String keys"):
// §3's Front / Middle / base with its sync words (sync.h), its two live logs (kTwoLogs), its
// merge worker pool (the parallel merge of §3.3) and parallel recovery, over the string form's
// persistent pieces shared with the single-threaded StringDPTree (engine/string_base.h: leaves
// merged in place, their slots holding each key's prefix and value, the inner index, the log
// record codec). The buffer is hash-sharded (string_buffer.h).
//
// Persistent state: a CRoot (format/cdptree_root.h) with the string magic; log_table[v] owns
// a table of N head words, one PLog chain per shard, of the buffer of version v.
#pragma once

#include <atomic>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "cdptree/merge_driver.h"
#include "cdptree/string_buffer.h"
#include "cdptree/sync.h"
#include "dptree/cdptree.h"
#include "dptree/string_index.h"
#include "engine/family.h"
#include "engine/string_base.h"
#include "engine/validate.h"
#include "format/cdptree_root.h"

namespace dptree::cdp {

// The base leaf a read found before it probed the buffers: its number in the base snapshot of
// that serial (serial 0: none found).
struct LeafHint {
  detail::u64 serial = 0;
  std::size_t leaf = 0;
};

// The merge trigger, hand-over, retirement and parking, and recovery, are the MergeDriver's
// (merge_driver.h), shared with the integer form, over this form's hooks (string_merge.cc,
// string_cdptree.cc).
class StringCDPTree final : public StringIndex, private MergeDriver<StringCDPTree, StringBuffer> {
 public:
  // create: a new tree in an empty pool; otherwise the pool's tree, recovered.
  StringCDPTree(pm::Pool& pool, const CDPTreeOptions& opt, bool create);
  ~StringCDPTree() override;

  std::string name() const override { return "cdptree"; }
  void upsert(std::string_view k, Value v) override;
  bool insert(std::string_view k, Value v) override;
  bool update(std::string_view k, Value v) override;
  bool remove(std::string_view k) override;
  std::optional<Value> lookup(std::string_view k) const override;
  std::size_t scan(std::string_view start, std::size_t count,
                   std::vector<StringKV>& out) const override;
  void drain() override { merge(); }
  std::size_t max_key_bytes() const override { return detail::kStringTreeMaxKey; }
  Value max_value() const override { return detail::kTombstone - 1; }
  IndexStats stats() const override;
  CheckReport check() const override;

  // Merges the Front now and waits for it; a parked merge (pool_full) is retried, and
  // pool_full thrown if it still does not fit.
  void merge() { merge_now(true); }
  using MergeDriver::wait_idle;
  // The options in force: the stored format's (partitions, page and leaf sizes) and the
  // caller's others.
  const CDPTreeOptions& options() const { return opt_; }

 private:
  friend class MergeDriver<StringCDPTree, StringBuffer>;
  using u64 = detail::u64;

  void create();
  void open();
  void attach();
  // Joins the workers and frees the buffers and the inner index (destructor, failed open).
  void release_dram();
  int cv() const { return static_cast<int>(root_->base.gv & 1); }
  detail::LogPagePtr* table(int v) const { return t_.pool.get(root_->log_table[v]); }
  std::size_t threshold(u64 base_count) const;
  StringBuffer* new_buffer(int ver) const;
  detail::StringBase* new_base();

  // Reads (Algorithm 6): Front, Middle (unless it is `writing`), base.
  std::optional<u64> lookup_raw(std::string_view k, u64 h) const;
  std::optional<u64> below_front(std::string_view k, u64 h, const StringBuffer* writing,
                                 SyncManager::Slot& s, LeafHint hint = {}) const;
  bool present_below(std::string_view k, u64 h, const StringBuffer* writing) const;
  // Algorithm 7: op(front, hash of k, entries) under the Front's writer guard, then the merge
  // trigger from the shard's entry count op gave.
  template <class F>
  void in_front(std::string_view k, F&& op);
  // decide(front, cur) under k's shard lock (in_front).
  template <class F>
  std::optional<u64> write(std::string_view k, F&& decide);
  // update / remove: k's value becomes v (kTombstone: removed) only if k is present.
  bool replace(std::string_view k, u64 v);
  // scan from any string (the successor of a 1,024-byte key is 1,025 bytes long).
  std::size_t scan_raw(std::string cur, std::size_t count, std::vector<StringKV>& out) const;
  std::size_t count_live() const;

  // The merge driver's hooks (merge_driver.h; string_merge.cc in this folder).
  StringBuffer* new_front(int ver) const;
  // Writers estimate the Front's size from their own shard (its entries times the shard
  // count), so a recount could fall short of the threshold that triggered: any non-empty
  // Front is merged.
  bool front_due(const StringBuffer& f, bool) const { return f.size() != 0; }
  // Line 7's wait is skipped: every writer whose shard crosses the estimate at once would stall
  // while the merge starts, and the winner merges any non-empty Front, so a waiter's CAS could
  // only fail. (Measured: with the wait, the concurrent crash test's Fronts stayed a few
  // entries above the trigger, so a merge in parts moved almost nothing to the Front.)
  static constexpr bool kWaitOutPreMerge = false;
  static constexpr bool kMergeInSteps = false;          // the option is refused (constructor)
  void front_not_due() { last_partial_.store(false); }  // nothing left of a merge in parts
  std::size_t next_threshold() const { return threshold(gp_b_.load()->count); }
  // The Middle merged into the base (retry: with the Front's entries laid over it).
  bool run_merge(bool retry);
  void release_middle(StringBuffer& m);
  void after_merge();
  bool merged_in_part() const { return last_partial_.load(); }
  detail::CRoot& croot() const { return *root_; }
  const pm::Pool& pm_pool() const { return t_.pool; }
  detail::TreeParts& parts() { return t_; }
  // One cycle (begin .. flip) over es[0, n); the rest moved to the Front. pool_full: undone.
  void merge_cycle(const detail::BufferedEntries& es, std::size_t n);
  // §3.3: partitions of PSize leaves on the workers, each fenced before it returns.
  void merge_partitions(detail::BufferedSpan es, int nv,
                        std::vector<detail::StringMergeResult>& res);
  void reconnect(const std::vector<detail::StringMergeResult>& res, int nv);
  void move_to_front(detail::BufferedSpan rest);
  void finish_merge(int old);
  // The pages of the live logs (Front's and Middle's): never freed as key pages.
  std::unordered_set<u64> live_log_pages() const;
  void check_offers(std::initializer_list<const StringBuffer*> bufs,
                    const std::unordered_set<u64>& owned, std::set<u64>& reach,
                    CheckReport& r) const;

  // Recovery's hooks (merge_driver.h, which runs Algorithm 4 for both forms in recovery.cc;
  // string_cdptree.cc in this folder).
  detail::OpenedList validate_open() const;
  void finish_crashed_merge();
  void finish_log_release(int v);
  void build_base(detail::OpenedList&);
  void replay(StringBuffer& b, std::size_t p) const;
  std::vector<u64> log_pages(const StringBuffer& b) const { return b.all_log_pages(); }
  void sweep_log_pages(std::unordered_set<u64> in_use, const detail::OpenedList&);

  // check (string_check.cc in this folder).
  void check_buffer(const StringBuffer& b, const std::unordered_set<u64>& owned,
                    std::set<u64>& reach, CheckReport& r) const;

  detail::TreeParts t_;
  CDPTreeOptions opt_;
  detail::CRoot* root_ = nullptr;
  detail::KeyPages key_pages_{t_.pool};
  // The records whose entries the last committed merge cycles removed: uncounted from the key
  // pages after their garbage collection (finish_merge).
  std::vector<u64> unnamed_;
  detail::StringLeafLayout L_;
  detail::StringMergeSizes sizes_;  // capacity, FR and CT in entries

  std::atomic<detail::StringBase*> gp_b_{nullptr};  // GP_B (GP_F, GP_M: the MergeDriver's)
  u64 bases_made_ = 0;  // the serial of the last base snapshot made (new_base)
  // The last merge went in parts: the Front holds the Middle's entries it left.
  std::atomic<bool> last_partial_{false};
  // Middles retired so far. A merge in parts moves entries into the Front and then retires
  // the Middle: a read that missed the Front before the move and found no Middle after it
  // must not answer from the base alone, so a read below the Front is redone when this moved.
  std::atomic<std::size_t> retired_{0};
  // The log pages of the Middle just merged: the cache keeps as many (after_merge).
  std::size_t middle_log_pages_ = 0;

  std::atomic<std::size_t> created_{0}, freed_{0}, rewritten_{0}, in_place_{0}, parts_{0},
      failed_parts_{0}, partitions_{0}, key_pages_freed_{0}, pages_inherited_{0};
  RecoveryTimes recovery_times;  // the last open's phases (stats)
};

}  // namespace dptree::cdp
