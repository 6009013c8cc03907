// The pull-based pool of merge workers of the concurrent DPTree (§3.3: "these merge
// partitions are then scheduled to a pool of worker threads via a queue"). The threads live
// as long as the index: a merge (Algorithm 7 line 16) is a task posted to the pool instead of
// a new thread, and each parallel phase of Algorithm 9 (and the replay of recovery) is a
// batch of indices that the caller and idle workers pull one at a time. Idle workers sleep
// on a condition variable.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dptree {
struct CDPTreeOptions;
}

namespace dptree::cdp {

// Threads that pull a merge's partitions (merge_threads; 0: one per hardware thread), and
// that replay the logs in recovery (recovery_threads, the same default).
unsigned merge_workers(const CDPTreeOptions& opt);
unsigned recovery_workers(const CDPTreeOptions& opt);
// The pool's own threads: a background merge occupies one and pulls partitions with
// merge_workers() - 1 more; the caller of an inline merge or of recovery is a worker of its own.
unsigned pool_threads(const CDPTreeOptions& opt);

// A merge worker's fence on every way out of its partition: a fence orders only the flushes of
// the thread that issues it, and the flip (on the merge thread) must not reach PM before a
// line the worker wrote back (§3.3; the concurrent crash test found it missing once).
struct WorkerFence {
  WorkerFence() = default;
  WorkerFence(const WorkerFence&) = delete;
  WorkerFence& operator=(const WorkerFence&) = delete;
  ~WorkerFence();
};

class MergePool {
 public:
  // The threads run at `nice` (0..19): the kernel then runs runnable writers first.
  MergePool(unsigned threads, unsigned nice);
  ~MergePool();  // runs the posted tasks left, then joins the threads
  MergePool(const MergePool&) = delete;
  MergePool& operator=(const MergePool&) = delete;

  unsigned threads() const { return static_cast<unsigned>(threads_.size()); }
  // Runs `task` on a pool thread (there must be one).
  void post(std::function<void()> task);
  // fn(0) .. fn(n-1), pulled one index at a time by the caller and up to width - 1 pool
  // threads (Algorithm 9 lines 3-6 and 9-12); returns when every call has returned, so what
  // the calls wrote happens before the return. The first exception stops the hand-out and is
  // rethrown here once every running call has returned. One batch runs at a time.
  void run(std::size_t n, unsigned width, const std::function<void(std::size_t)>& fn);

 private:
  struct Batch {
    const std::function<void(std::size_t)>* fn = nullptr;
    std::size_t n = 0, next = 0, running = 0;
    unsigned width = 1, joined = 1;  // the caller works too
    std::exception_ptr err;
  };
  bool can_help() const {
    return batch_ && batch_->next < batch_->n && batch_->joined < batch_->width;
  }
  void pull(std::unique_lock<std::mutex>& lk, Batch& b);
  void worker(unsigned nice);

  std::mutex run_mu_;  // one batch at a time
  std::mutex mu_;      // everything below
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::function<void()>> tasks_;
  Batch* batch_ = nullptr;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace dptree::cdp
