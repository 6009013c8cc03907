// The merge of the concurrent string form (string_cdptree.h): Algorithm 7's start (the Front
// becomes the Middle, two logs live until the flip) and its end (the Middle retired after its
// readers), with the leaves of the Middle's key ranges rewritten out of place by one merge
// task (st/string_base.h, as the single-threaded string form merges), and the parking of a
// merge that does not fit the pool.
#include <algorithm>
#include <thread>

#include "cdptree/phase.h"
#include "cdptree/string_cdptree.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"
#include "st/merge.h"
#include "st/overlay.h"

namespace dptree::cdp {

using namespace detail;  // NOLINT: the layout vocabulary

namespace {

// The Middle's entries in key order; with `newer` (a retry after pool_full) the Front's laid
// over them, so its removes cancel the Middle's inserts and the retried merge needs fewer
// leaves. The Front keeps those entries and its log (reads and a replay find them first).
StringEntries entries_to_merge(const StringBuffer& m, const StringBuffer* newer) {
  StringEntries es = m.entries();
  if (!newer) return es;
  return overlay_sorted(std::move(es), newer->entries());
}

}  // namespace

// Algorithm 7 lines 6-16: one writer wins nomerge -> premerge, persists kTwoLogs, turns the
// Front into the Middle, installs a new Front, waits for the old Front's writers, and runs or
// posts the merge.
void StringCDPTree::maybe_start_merge() {
  int expect = kNoMerge;
  if (!state_.compare_exchange_strong(expect, kPreMerge)) return;
  StringBuffer* f = gp_f_.load(std::memory_order_seq_cst);
  if (f->size() == 0) {
    std::lock_guard g(done_mu_);
    state_.store(kNoMerge);
    done_cv_.notify_all();
    return;
  }
  {
    // Two logs are live from the first write to the new Front until the version flip.
    PhaseScope ph(CDPTreePhase::merge_start);
    pm::CategoryScope cat(pm::Category::node);
    pm::store(&root_->base.gv, root_->base.gv | kTwoLogs);
    pm::persist(&root_->base.gv, 8);
  }
  StringBuffer* f2 = new_buffer(1 - cv());
  gp_m_.store(f, std::memory_order_seq_cst);
  gp_f_.store(f2, std::memory_order_seq_cst);
  sm_.spin_until_no_ref(kFW, f);
  state_.store(kMerging, std::memory_order_seq_cst);
  if (opt_.background_merge)
    workers_->post([this] { merge_task(false); });
  else
    merge_task(false);
}

// The Middle merged (run_merge); on pool_full the merge was undone and is parked: the Middle
// stays readable and durable (two logs stay live), new values are refused until removes retry
// it (note_remove, refuse_values) or merge() does.
void StringCDPTree::merge_task(bool retry) {
  if (run_merge(retry)) return;
  failed_merges_.fetch_add(1);
  std::lock_guard g(done_mu_);
  // Back-off: a leaf's worth of removes before the first retry, twice as many before each
  // next one, at most a merge trigger's worth.
  const std::size_t next = std::max<std::size_t>(opt_.leaf_capacity, 2 * retry_after_.load());
  retry_after_.store(std::min(next, threshold(gp_b_.load()->count)));
  removes_since_fail_.store(0);
  broken_.store(true);
  done_cv_.notify_all();
}

// The leaf phases, the flip, the new inner index published after the old one's readers, the
// garbage collection, then the Middle retired. False when the pool was too full (undone).
bool StringCDPTree::run_merge(bool retry) {
  StringBuffer* m = gp_m_.load(std::memory_order_seq_cst);
  const StringEntries es =
      entries_to_merge(*m, retry ? gp_f_.load(std::memory_order_seq_cst) : nullptr);
  const int cvv = cv(), nv = 1 - cvv;
  StringMergeResult res;
  try {
    {
      PhaseScope ph(CDPTreePhase::merge_start);
      begin_merge(t_.pool, &root_->base, *t_.pending);
    }
    {
      PhaseScope ph(CDPTreePhase::merge_range);
      merge_string_leaves(t_, opt_.leaf_capacity, small_, *gp_b_.load(), es, res);
    }
    PhaseScope ph(CDPTreePhase::flush);
    link_string_leaves(t_.pool, res.out, nv);
  } catch (const Error& e) {
    if (e.code() != Errc::pool_full) throw;
    created_ += res.created;
    reclaim_interrupted_merge(t_.pool, &root_->base, *t_.dir, *t_.pending);
    return false;
  }
  {
    PhaseScope ph(CDPTreePhase::version_flip);
    commit_merge(&root_->base, nv, detail::LeafPtr(res.out.empty() ? 0 : res.out.front()),
                 res.count);  // clears kTwoLogs
  }
  created_ += res.created;
  rewritten_ += res.rewritten;
  finish_merge(cvv);
  return true;
}

void StringCDPTree::finish_merge(int old) {
  StringBase* prev = gp_b_.load(std::memory_order_seq_cst);
  gp_b_.store(new_base(), std::memory_order_seq_cst);
  sm_.spin_until_no_ref(kBR, prev);  // no reader is in a leaf the collection frees
  delete prev;
  {
    PhaseScope ph(CDPTreePhase::garbage_collection);
    freed_ += collect_garbage(t_.pool, &root_->base, *t_.dir, *t_.pending, string_next(t_.pool),
                              old, 1 - old);
  }
  StringBuffer* m = gp_m_.load(std::memory_order_seq_cst);
  const std::size_t pages = m->all_log_pages().size();
  m->release_logs();
  gp_m_.store(nullptr, std::memory_order_seq_cst);
  sm_.spin_until_no_ref(kFR, m);
  sm_.spin_until_no_ref(kMR, m);
  delete m;
  // Cache capacity C_size (§2.1): the pages the released logs took, as records differ in
  // length.
  t_.pages->trim(pages + 2 * opt_.log_partitions, 1 - old);
  thresh_.store(threshold(gp_b_.load()->count));
  merges_.fetch_add(1);
  std::lock_guard g(done_mu_);
  retry_after_.store(0);
  broken_.store(false);
  state_.store(kNoMerge, std::memory_order_seq_cst);
  done_cv_.notify_all();
}

// Values are refused while a merge is parked, unless a leaf's worth of removes came since it
// failed and a retry fits (inline: this write goes ahead; background: the writes after it).
void StringCDPTree::refuse_values() {
  if (!broken_.load(std::memory_order_relaxed)) return;
  if (removes_since_fail_.load() >= opt_.leaf_capacity && retry_merge() && !broken_.load()) return;
  throw_merge_blocked(t_.pool);
}

void StringCDPTree::note_remove() {
  if (!broken_.load(std::memory_order_relaxed)) return;
  if (removes_since_fail_.fetch_add(1) + 1 >= retry_after_.load()) retry_merge();
}

// Runs the parked merge again (one retry at a time); returns whether one ran.
bool StringCDPTree::retry_merge() {
  std::lock_guard rl(retry_mu_);
  {
    std::lock_guard g(done_mu_);
    if (!broken_.load() || state_.load() != kMerging) return false;
    broken_.store(false);
    merge_retries_.fetch_add(1);
  }
  merge_task(true);
  return true;
}

void StringCDPTree::merge() {
  wait_idle();  // a merge another writer started may not hold the latest writes
  if (!retry_merge()) maybe_start_merge();
  wait_idle();
  if (broken_.load())
    throw Error(Errc::pool_full, "pool '" + t_.pool.name() +
                                     "' is full: the cdptree merge did not fit and was undone "
                                     "(every write is still in the buffers and their logs); "
                                     "remove keys or use a bigger pool");
}

void StringCDPTree::wait_idle() const {
  std::unique_lock lk(done_mu_);
  done_cv_.wait(lk, [&] { return state_.load() == kNoMerge || broken_.load(); });
}

}  // namespace dptree::cdp
