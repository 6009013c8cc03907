// The merge driver (merge_driver.h), made for both forms of the concurrent DPTree.
#include "cdptree/merge_driver.h"

#include <algorithm>
#include <string>
#include <thread>

#include "cdptree/cdptree_impl.h"
#include "cdptree/phase.h"
#include "cdptree/string_cdptree.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"

namespace dptree::cdp {

// Algorithm 7 lines 6-16: one writer wins MergeState nomerge -> premerge, turns the Front
// into the Middle, installs a new Front, waits for the writers of the old one and starts the
// merge.
template <class Form, class Buffer>
void MergeDriver<Form, Buffer>::maybe_start_merge(bool force) {
  for (;;) {
    int st = merge_state.load(std::memory_order_seq_cst);
    if (st == kPreMerge) {  // line 7
      if constexpr (!Form::kWaitOutPreMerge) return;
      std::this_thread::yield();
      continue;
    }
    if (st != kNoMerge) return;
    int expect = kNoMerge;
    if (merge_state.compare_exchange_strong(expect, kPreMerge)) break;  // line 8
  }
  Buffer* f = gp_f.load(std::memory_order_seq_cst);  // line 10
  if (!self().front_due(*f, force)) {                // another merge already took it
    std::lock_guard g(done_mu);
    self().front_not_due();
    merge_state.store(kNoMerge);
    done_cv.notify_all();
    return;
  }
  {
    // Two logs are live from the first write to the new Front until the version flip.
    PhaseScope ph(CDPTreePhase::merge_start);
    pm::CategoryScope cat(pm::Category::node);
    detail::Root& R = self().croot().base;
    pm::store(&R.gv, R.gv | kTwoLogs);
    pm::persist(&R.gv, 8);
  }
  Buffer* f2 = self().new_front(1 - self().cv());          // line 9
  gp_m.store(f, std::memory_order_seq_cst);                // line 11
  gp_f.store(f2, std::memory_order_seq_cst);               // line 12
  sm.spin_until_no_ref(kFW, f);                            // line 13
  merge_thresh.store(self().next_threshold());             // line 14: GP_B.size * R
  merge_state.store(kMerging, std::memory_order_seq_cst);  // line 15
  launch_merge(false);                                     // line 16
}

// Line 16: on a pool thread (not a new one), or in the writer whole, or in steps.
template <class Form, class Buffer>
void MergeDriver<Form, Buffer>::launch_merge(bool retry) {
  if (self().options().background_merge)
    workers->post([this, retry] { merge_task(retry); });
  else if (self().options().merge_steps)
    start_steps(retry);
  else
    merge_task(retry);
}

// Algorithm 7 lines 17-23.
template <class Form, class Buffer>
void MergeDriver<Form, Buffer>::merge_task(bool retry) {
  if (!self().run_merge(retry)) {  // line 17
    park();
    return;
  }
  retire();
}

template <class Form, class Buffer>
Buffer* MergeDriver<Form, Buffer>::detach_middle() {
  Buffer* m = gp_m.load(std::memory_order_seq_cst);
  gp_m.store(nullptr, std::memory_order_seq_cst);  // lines 18-19
  sm.spin_until_no_ref(kFR, m);                    // line 20
  sm.spin_until_no_ref(kMR, m);                    // line 21
  return m;
}

template <class Form, class Buffer>
void MergeDriver<Form, Buffer>::free_middle(Buffer* m) {
  self().release_middle(*m);  // no reader is left in it
  delete m;                   // line 22
  self().after_merge();
  merges.fetch_add(1);
  std::lock_guard g(done_mu);
  refusing.store(false);
  retry_after.store(0);
  merge_state.store(kNoMerge, std::memory_order_seq_cst);  // line 23
  done_cv.notify_all();
}

// ------------------------------------------------------------------ a merge in steps

// Lines 17-23 as merge_task runs them, pausing between the merge's own steps.
template <class Form, class Buffer>
Steps MergeDriver<Form, Buffer>::merge_task_steps(bool retry) {
  bool ok = true;
  {
    Steps body;
    if constexpr (Form::kMergeInSteps) body = self().merge_steps(retry);
    for (;;) {
      bool more = false;
      try {
        more = body.step();
      } catch (const std::exception&) {  // pool_full: the merge was undone (abort_merge)
        ok = false;
      }
      if (!more) break;
      co_yield Steps::kPause;
    }
  }
  co_yield Steps::kPause;
  if (!ok) {
    park();
    co_return;
  }
  // The retirement: the Middle detached, then its memory handed back a part a step (its
  // filter alone is tens of megabytes at 2^27 records: 5-6 ms to unmap at once), then freed.
  Buffer* m = detach_middle();
  if constexpr (Form::kMergeInSteps) {
    while (self().shrink_middle(*m)) {
      planned_steps.fetch_add(1, std::memory_order_relaxed);  // keeps the pace's share
      co_yield Steps::kPause;
    }
    co_yield Steps::kPause;
  }
  free_middle(m);
}

template <class Form, class Buffer>
void MergeDriver<Form, Buffer>::start_steps(bool retry) {
  std::lock_guard g(step_mu);
  steps = merge_task_steps(retry);
  steps_done.store(0, std::memory_order_relaxed);
  planned_steps.store(1, std::memory_order_relaxed);
  stepping.store(true, std::memory_order_release);
}

// The steps done keep up with twice the Front's fill as a share of the next trigger, so the
// merge ends when the Front is about half full (the paper's background merge has the whole
// fill to end in).
template <class Form, class Buffer>
bool MergeDriver<Form, Buffer>::step_due(std::size_t size) const {
  const double done = static_cast<double>(steps_done.load(std::memory_order_relaxed));
  const double planned = static_cast<double>(planned_steps.load(std::memory_order_relaxed));
  const double thresh = static_cast<double>(merge_thresh.load(std::memory_order_relaxed));
  return done * thresh < 2.0 * static_cast<double>(size) * planned;
}

template <class Form, class Buffer>
bool MergeDriver<Form, Buffer>::run_step(bool wait) const {
  std::unique_lock lk(step_mu, std::defer_lock);
  if (wait)
    lk.lock();
  else if (!lk.try_lock())
    return true;  // another writer runs a step
  if (steps.done()) return false;
  const bool more = steps.step();  // never throws: the body parks a merge that did not fit
  steps_done.fetch_add(1, std::memory_order_relaxed);
  steps_run.fetch_add(1, std::memory_order_relaxed);
  if (!more) {
    steps = Steps();
    stepping.store(false, std::memory_order_release);
  }
  return true;
}

// ------------------------------------------------------------------ a full pool

// The merge did not fit and was undone: the Middle stays readable and durable (two logs stay
// live; recovery retries the merge too). New values are refused from now on, so the Front
// stops growing; removes are taken and retry the merge (note_remove).
template <class Form, class Buffer>
void MergeDriver<Form, Buffer>::park() {
  failed_merges.fetch_add(1);
  std::lock_guard g(done_mu);
  // Back-off: a leaf's worth of removes before the first retry, twice as many before each
  // next one, at most a merge trigger's worth (so a full pool does not merge on every
  // remove).
  const std::size_t next =
      std::max<std::size_t>(self().options().leaf_capacity, 2 * retry_after.load());
  retry_after.store(std::min(next, self().next_threshold()));
  removes_since_fail.store(0);
  refusing.store(true);
  merge_broken.store(true);
  done_cv.notify_all();
}

template <class Form, class Buffer>
void MergeDriver<Form, Buffer>::refuse_or_retry() {
  // The back-off doubles, so the removes a user makes can stop short of its next step: a
  // write then restarts the merge, if a leaf's worth of removes (the back-off's floor) came
  // since it last failed. An inline merge that fits lets this write go ahead; a background
  // one lets the writes after it.
  if (removes_since_fail.load() >= self().options().leaf_capacity && retry_merge(true) &&
      !refusing.load())
    return;
  throw Error(Errc::pool_full,
              "pool '" + self().pm_pool().name() +
                  "' is full: the last cdptree merge did not fit, so new values are refused "
                  "(nothing was written); remove keys (a write after enough removes retries "
                  "the merge, or call merge()) or use a bigger pool");
}

template <class Form, class Buffer>
void MergeDriver<Form, Buffer>::count_remove() {
  if (removes_since_fail.fetch_add(1) + 1 >= retry_after.load()) retry_merge(false);
}

template <class Form, class Buffer>
bool MergeDriver<Form, Buffer>::retry_merge(bool force) {
  {
    std::lock_guard g(done_mu);
    if (!merge_broken.load()) return false;  // no failed merge, or its retry runs
    if (!force && removes_since_fail.load() < retry_after.load()) return false;
    merge_broken.store(false);
    merge_retries.fetch_add(1);
  }
  launch_merge(true);
  return true;
}

// ------------------------------------------------------------------ merge() and waits

template <class Form, class Buffer>
void MergeDriver<Form, Buffer>::merge_now(bool wait) {
  if (wait) wait_idle();  // a merge another writer started may not hold the latest writes
  if (!retry_merge(true)) maybe_start_merge(true);
  if (!wait) return;
  wait_idle();
  while (!merge_broken.load() && self().merged_in_part()) {
    maybe_start_merge(true);
    wait_idle();
  }
  if (merge_broken.load())
    throw Error(Errc::pool_full, "pool '" + self().pm_pool().name() +
                                     "' is full: the cdptree merge did not fit and was undone "
                                     "(every write is still in the buffers and their logs); "
                                     "remove keys or use a bigger pool");
}

template <class Form, class Buffer>
void MergeDriver<Form, Buffer>::wait_idle() const {
  while (run_step(true)) {
  }
  std::unique_lock lk(done_mu);
  done_cv.wait(lk, [&] { return merge_state.load() == kNoMerge || merge_broken.load(); });
}

template <class Form, class Buffer>
void MergeDriver<Form, Buffer>::release_buffers() {
  workers.reset();
  Buffer* m = gp_m.exchange(nullptr);
  Buffer* f = gp_f.exchange(nullptr);
  if (m != f) delete m;
  delete f;
}

template class MergeDriver<CDPTree::Impl, Cpbt>;
template class MergeDriver<StringCDPTree, StringBuffer>;

}  // namespace dptree::cdp
