// The merge driver of the concurrent DPTree, written once for both key forms (docs/cdptree.md
// "One merge driver"): Algorithm 7's trigger (MergeState nomerge -> premerge -> merging), the
// hand-over of the Front to the Middle (lines 6-16), the merge task posted to the merge pool,
// run by the writer that started it (background_merge = false) or by the writers a step at a
// time between their writes (merge_steps, docs/cdptree.md "A merge in steps"), the Middle retired
// after its readers (lines 17-23), a merge that does not fit the pool parked and retried after
// removes, merge() / wait_idle(), the buffers' release when the tree closes, and recovery
// (Algorithm 4 with the log partitions replayed in parallel, §4.5; recovery.cc), which ends in the
// same merge task. The merge body (Algorithm 9 over the form's leaves) is the form's.
//
// A form derives from MergeDriver<Form, Buffer> (its Front / Middle type) and supplies:
//   Buffer* new_front(int ver)            a new, empty Front logging into version ver (line 9;
//                                          recovery's buffers too)
//   bool front_due(const Buffer& f, bool force)  whether the Front the trigger's winner took
//                                          is merged (else the trigger steps back)
//   void front_not_due()                   under done_mu, when it is not
//   std::size_t next_threshold()           MergeThresh from the current base (line 14)
//   std::size_t threshold(u64 base_count)  MergeThresh for a base of base_count records
//   bool run_merge(bool retry)             line 17: the merge of GP_M (retry: with the Front's
//                                          entries laid over it); false when it did not fit the
//                                          pool (pool_full) and was undone
//   Steps merge_steps(bool retry)          the same merge as a coroutine that pauses between
//                                          steps and throws pool_full (undone), for merge_steps;
//                                          only a form with kMergeInSteps (the integer form)
//   void release_middle(Buffer& m)         after its readers left (lines 18-21), before line 22
//   bool shrink_middle(Buffer& m)          merge_steps: hands back a part of the retired Middle's
//                                          memory between lines 21 and 22; whether any is left
//   void after_merge()                     after the Middle is deleted (log page cache trim)
//   bool merged_in_part()                  whether merge() goes on with the Front
//   int cv(), CRoot& croot(), const pm::Pool& pm_pool(), const CDPTreeOptions& options(),
//   detail::TreeParts& parts(), RecoveryTimes recovery_times (the form's member: a field of
//                                          the driver would move the form's hot words, which
//                                          writers share)
//   static constexpr bool kWaitOutPreMerge  whether a writer that finds a merge starting waits
//                                          until it has started (line 7) or goes on writing
//   static constexpr bool kMergeInSteps   whether the form has merge_steps
// and for recovery (docs/cdptree.md "One merge driver" says what each form does and why):
//   detail::OpenedList validate_open()     the open-time check of the pool (engine/validate.h)
//   void finish_crashed_merge()            Algorithm 4 lines 2-5 over the form's leaves
//   void finish_log_release(int v)         the release of version v's log table that a crash
//                                          interrupted, finished
//   void build_base(detail::OpenedList&)   GP_B recovered from the current version's leaves
//   void replay(Buffer& b, std::size_t p)  log partition p of b replayed into b
//   std::vector<u64> log_pages(const Buffer& b)  the pages of b's log
//   void sweep_log_pages(std::unordered_set<u64> in_use, const detail::OpenedList&)
//                                          every log page outside in_use (and the form's other
//                                          live pages) freed or cached
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>

#include "cdptree/merge_pool.h"
#include "cdptree/steps.h"
#include "cdptree/sync.h"
#include "engine/family.h"

namespace dptree::cdp {

enum MergeState : int { kNoMerge = 0, kPreMerge = 1, kMerging = 2 };

// The phases of the last open, in seconds (the stats' recovery_*_seconds): all of it, the
// open-time check, the base's index, the log replay and the log page sweep.
struct RecoveryTimes {
  double total = 0, check = 0, index = 0, replay = 0, sweep = 0;
};

template <class Form, class Buffer>
class MergeDriver {
 public:
  // Algorithm 7 line 6, after a write whose Front the writer measured at `size` (the form's
  // measure, compared with MergeThresh): the trigger, its wait timed.
  // A write past the trigger while a merge runs has nothing to wait for: only the others are
  // timed, so the figure holds no descheduling of a bare state check.
  // With merge_steps, a write while a merge is in steps runs the next step when the merge
  // lags its pace (timed as a wait too).
  void after_write(std::size_t size) {
    if (size >= merge_thresh.load(std::memory_order_relaxed) &&
        merge_state.load(std::memory_order_relaxed) != kMerging)
      merge_wait.time([this] { maybe_start_merge(false); });
    else if (stepping.load(std::memory_order_relaxed) && step_due(size))
      merge_wait.time([this] { run_step(false); });
  }
  // Before a new value: pool_full while a merge that did not fit is parked (after retrying
  // it when a leaf's worth of removes came since it failed).
  void refuse_values() {
    if (refusing.load(std::memory_order_relaxed)) refuse_or_retry();
  }
  // After a remove: while parked, counts it and retries the merge after the back-off.
  void note_remove() {
    if (refusing.load(std::memory_order_relaxed)) count_remove();
  }

  // Algorithm 7 lines 6-16 (force: merge a non-empty Front below the threshold too).
  void maybe_start_merge(bool force);
  // Lines 17-23; on pool_full the merge is parked instead (retry: see run_merge).
  void merge_task(bool retry);
  // Line 16: merge_task posted to the merge pool, run here, or started in steps.
  void launch_merge(bool retry);
  // Restarts a parked merge if, unless forced, enough removes came since it failed; returns
  // whether it started.
  bool retry_merge(bool force);
  // merge(): a parked merge retried, else the Front merged; with `wait`, after the merge
  // running now (which may not hold the latest writes) and until the Front's is done, then
  // pool_full if it did not fit.
  void merge_now(bool wait);
  // Until no merge runs or one is parked; with merge_steps, the caller runs the steps left.
  void wait_idle() const;
  // Joins the merge workers (a merge task may be in its last lines), then deletes the Front
  // and the Middle (the destructor, after wait_idle; a failed open).
  void release_buffers();
  // open(): Algorithm 4 with the log partitions replayed on the merge workers (§4.5), timed
  // (recovery.cc).
  void recover();

  mutable SyncManager sm;
  std::atomic<Buffer*> gp_f{nullptr}, gp_m{nullptr};  // GP_F, GP_M (§3.2)
  std::atomic<int> merge_state{kNoMerge};
  std::atomic<std::size_t> merge_thresh{0};
  // A merge that failed for want of PM (pool_full) is parked (merge_broken) until removes or
  // merge() retry it; new values are refused (refusing) until one fits.
  std::atomic<bool> merge_broken{false}, refusing{false};
  std::atomic<std::size_t> removes_since_fail{0}, retry_after{0};
  std::atomic<std::size_t> merges{0}, failed_merges{0}, merge_retries{0};
  mutable std::atomic<std::size_t> steps_run{0};  // merge_steps: every step run, all merges
  detail::LongestWait merge_wait;  // writers at the merge trigger (and at merge steps)
  // The merge workers (§3.3), from attach() to the destructor; recovery replays on them too.
  std::unique_ptr<MergePool> workers;
  // merge_steps: the steps the running merge takes in all (the form sets it once it knows).
  std::atomic<std::size_t> planned_steps{1};
  mutable std::mutex done_mu;
  mutable std::condition_variable done_cv;

 private:
  Form& self() { return static_cast<Form&>(*this); }
  void park();
  void refuse_or_retry();
  void count_remove();
  // Lines 18-23 after a merge that flipped: the Middle detached and its readers waited out
  // (lines 18-21), then freed (lines 22-23).
  void retire() { free_middle(detach_middle()); }
  Buffer* detach_middle();
  void free_middle(Buffer* m);
  // merge_steps: lines 17-23 as steps, started in place of merge_task.
  Steps merge_task_steps(bool retry);
  void start_steps(bool retry);
  // Whether a write that saw the Front at `size` runs a step: the steps are spread over the
  // first half of the Front's fill up to the next trigger.
  bool step_due(std::size_t size) const;
  // Runs the next step (waiting for another thread's step if `wait`, else skipping); false
  // when no merge is in steps.
  bool run_step(bool wait) const;

  // merge_steps: the merge in steps, and how many ran; under step_mu (the writer that runs a
  // step holds it).
  mutable std::mutex step_mu;
  mutable Steps steps;
  mutable std::atomic<std::size_t> steps_done{0};
  mutable std::atomic<bool> stepping{false};
};

}  // namespace dptree::cdp
