// What the two DPTrees share: the single-threaded one (§2, DPTreeCore) and the concurrent one
// (§3, CDPTree, which builds on §2's persistent pieces): the persistent parts over a Root,
// the rules on values and pools, the checks of the leaf blocks and free log pages, and the
// common Index interface over either tree.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "engine/owner_dir.h"  // OwnerDir, PendingLeaves, layout.h, pm::Pool
#include "engine/plog.h"       // LogPageCache, RecordCodec

namespace dptree::detail {

// The persistent pieces over one Root (layout.h): leaf layout and record codec (§2.1-2.2),
// owner directory, pendingLeaves (§2.4) and the log page cache (§2.1).
struct TreeParts {
  // Claims the pool for `who` (one live index per pool: pm::PoolClaim).
  TreeParts(pm::Pool& p, std::string_view who);

  pm::PoolClaim claim;
  pm::Pool& pool;
  pm::Allocator& alloc;
  LeafLayout L;
  RecordCodec codec;
  // Built by attach_parts once the root is known (create / open).
  std::unique_ptr<OwnerDir> dir;
  std::unique_ptr<PendingLeaves> pending;
  std::unique_ptr<LogPageCache> pages;

  Leaf leaf(u64 off) const;
  // Lays out leaves and records of the given widths and builds the pieces over `root`.
  void attach_parts(Root& root, std::size_t leaf_capacity, std::size_t key_bytes,
                    std::size_t value_bytes, std::size_t log_page_size);
  // create(): throws already_exists when the pool holds an index already.
  void require_empty_pool() const;
  // open(): the root block, when it is a live block of at least `bytes` whose first word is
  // `magic`. Otherwise throws not_found (an empty pool), corrupt (a root word that points to
  // no live block) or wrong_index (another index's root); `index` names the tree in messages.
  void* existing_root(u64 magic, std::size_t bytes, std::string_view index) const;
  // open(): runs `validate` over options that hold the pool's stored settings; an option out
  // of range there was read from the pool, so it throws stored_setting naming the pool.
  void validate_stored(const std::function<void()>& validate) const;
  // check(): the cached free log pages are in no log (added to `reach`), in the list of their
  // flavor, owned, and hold no word valid for the log that will take them (a stale record
  // there would replay once the page is reused); then check_block_ownership. Returns the live
  // block count.
  // `word_records`: the words of the log's records carry validity bits (the integer form);
  // the string form's records are raw bytes told apart by checksums and page epochs, so its
  // free pages may hold anything.
  std::size_t check_free_pages_and_blocks(const std::unordered_set<u64>& owned,
                                          std::set<u64>& reach, CheckReport& r,
                                          bool word_records = true) const;
};

// check()'s walk of the leaf list of version v, with the checks both trees make of every leaf
// (§2.2): no cycle, owned by the directory, a live block, a leaf whose owner slot points to
// it, max keys increasing. The tree checks the leaf's entries between enter and leave.
struct LeafWalk {
  LeafWalk(const TreeParts& t, int v, const std::unordered_set<u64>& owned, std::set<u64>& reach,
           CheckReport& r)
      : t_(t), v_(v), owned_(owned), reach_(reach), r_(r) {}
  // Leaf `l` is next: false (reported) when the list has a cycle, which ends the walk.
  bool enter(u64 l);
  void leave() {
    prev_max = mk;
    first = false;
  }

  std::size_t leaves = 0;  // entered so far
  std::vector<u64> chain;  // the leaves' offsets in list order
  std::string at;          // names the current leaf in messages
  u64 mk = 0;              // the current leaf's max key
  u64 prev_max = 0;        // the previous leaf's (when not `first`)
  bool first = true;

 private:
  const TreeParts& t_;
  int v_;
  const std::unordered_set<u64>& owned_;
  std::set<u64>& reach_;
  CheckReport& r_;
};

// pool_full for a new value while the last merge is blocked for want of PM (both DPTree forms).
[[noreturn]] void throw_merge_blocked(const pm::Pool& pool);

// A merge of either DPTree form that runs out of PM (pool_full) is undone; until a merge
// succeeds, new keys and values are refused before they are logged so the buffer stops
// growing, removes are taken, and the next write after a remove retries the merge.
// The longest of the waits timed, in nanoseconds; writers of the concurrent tree time theirs at
// once. What a write waited for a merge is reported apart from its whole latency, which on a
// busy machine also holds the time it was descheduled.
class LongestWait {
 public:
  // Runs f and notes how long it took (also when it throws).
  template <class F>
  void time(F&& f) {
    struct Note {
      LongestWait& w;
      std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
      ~Note() {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now() - t0);
        w.note(static_cast<std::uint64_t>(ns.count()));
      }
    } note{*this};
    f();
  }
  void note(std::uint64_t ns) {
    std::uint64_t cur = max_.load(std::memory_order_relaxed);
    while (ns > cur && !max_.compare_exchange_weak(cur, ns, std::memory_order_relaxed)) {
    }
  }
  double ms() const { return static_cast<double>(max_.load(std::memory_order_relaxed)) / 1e6; }

 private:
  std::atomic<std::uint64_t> max_{0};
};

class MergeBlock {
 public:
  explicit MergeBlock(const pm::Pool& pool) : pool_(pool) {}
  bool blocked() const { return blocked_; }
  // Before a write of a value: refused (pool_full) while blocked with no remove since; after a
  // remove, `merge` retries (and throws pool_full again when it still does not fit).
  template <class Merge>
  void before_value(Merge&& merge) {
    if (!blocked_) return;
    if (removes_since_ == 0) throw_merge_blocked(pool_);
    wait_.time(merge);
  }
  // After a write is durable and visible: while blocked, counts a remove; otherwise merges
  // when due(). A merge that runs out of PM has blocked, and the write stands.
  template <class Due, class Merge>
  void after_write(bool remove, Due&& due, Merge&& merge) {
    if (blocked_) {
      removes_since_ += remove;
      return;
    }
    if (!due()) return;
    try {
      wait_.time(merge);
    } catch (const Error& e) {
      if (e.code() != Errc::pool_full) throw;
    }
  }
  // The merge that ran out of PM (`e`) is undone: blocks, and throws pool_full saying so.
  [[noreturn]] void fail(const Error& e);
  void clear() { blocked_ = false; }
  // The longest a write waited for the merge it ran (§2.3: inline, the whole merge).
  double longest_wait_ms() const { return wait_.ms(); }

 private:
  const pm::Pool& pool_;
  bool blocked_ = false;
  std::size_t removes_since_ = 0;
  LongestWait wait_;
};

// Throws invalid_argument for a value with the tombstone bit (§2); `tree` names the tree.
void check_value(Value v, const char* tree);

// A tree of the family (DPTreeCore, CDPTree) behind the common Index interface: operations
// forward; stats() gives records and bytes, extra() the tree's own counters.
template <class Tree>
class FamilyIndex : public Index {
 public:
  using Stats = decltype(std::declval<const Tree&>().stats());
  using Extra = std::vector<std::pair<std::string, double>>;

  FamilyIndex(std::string name, std::unique_ptr<Tree> t)
      : name_(std::move(name)), t_(std::move(t)) {}
  std::string name() const override { return name_; }
  void upsert(Key k, Value v) override { t_->upsert(k, v); }
  void overwrite(Key k, Value v) override {
    if constexpr (requires(Tree & t) { t.overwrite(k, v); })
      t_->overwrite(k, v);
    else
      t_->upsert(k, v);
  }
  bool insert(Key k, Value v) override { return t_->insert(k, v); }
  bool update(Key k, Value v) override { return t_->update(k, v); }
  bool remove(Key k) override { return t_->remove(k); }
  std::optional<Value> lookup(Key k) const override { return t_->lookup(k); }
  std::size_t scan(Key s, std::size_t n, std::vector<KV>& out) const override {
    return t_->scan(s, n, out);
  }
  void drain() override {
    if constexpr (requires(const Tree& t) { t.wait_for_merge(); }) t_->wait_for_merge();
    t_->merge();
  }
  Value max_value() const override { return Tree::kMaxValue; }
  IndexStats stats() const override {
    auto s = t_->stats();
    IndexStats r;
    r.records = s.records;
    r.dram_bytes = s.dram_bytes;
    r.pm_bytes = s.pm_bytes;
    r.extra = extra(s);
    return r;
  }
  CheckReport check() const override { return t_->check(); }

 protected:
  virtual Extra extra(const Stats& s) const = 0;
  template <class X>
  static double d(X x) {
    return static_cast<double>(x);
  }

 private:
  std::string name_;
  std::unique_ptr<Tree> t_;
};

}  // namespace dptree::detail
