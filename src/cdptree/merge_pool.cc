// The merge worker pool (merge_pool.h).
#include "cdptree/merge_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "dptree/cdptree.h"
#include "dptree/pm/persist.h"

namespace dptree::cdp {

namespace {
unsigned or_hardware(unsigned n) {
  return n ? n : std::max(1u, std::thread::hardware_concurrency());
}
}  // namespace

unsigned merge_workers(const CDPTreeOptions& opt) {
  return or_hardware(opt.merge_threads);
}

unsigned recovery_workers(const CDPTreeOptions& opt) {
  return or_hardware(opt.recovery_threads);
}

unsigned pool_threads(const CDPTreeOptions& opt) {
  const unsigned m = merge_workers(opt);
  return std::max(opt.background_merge ? m : m - 1, recovery_workers(opt) - 1);
}

WorkerFence::~WorkerFence() {
  pm::fence();
}

MergePool::MergePool(unsigned threads, unsigned nice) {
  threads_.reserve(threads);
  try {
    for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this, nice] { worker(nice); });
  } catch (...) {  // thread creation failed: stop the ones that started
    {
      std::lock_guard g(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
    throw;
  }
}

MergePool::~MergePool() {
  {
    std::lock_guard g(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void MergePool::post(std::function<void()> task) {
  {
    std::lock_guard g(mu_);
    tasks_.push_back(std::move(task));
  }
  work_cv_.notify_one();
}

// Takes indices of `b` until none is left. Called with mu_ held; b stays alive while this
// thread holds mu_ and sees an index left, or runs a call (running > 0).
void MergePool::pull(std::unique_lock<std::mutex>& lk, Batch& b) {
  while (b.next < b.n) {
    std::size_t i = b.next++;
    ++b.running;
    lk.unlock();
    std::exception_ptr e;
    try {
      (*b.fn)(i);
    } catch (...) {
      e = std::current_exception();
    }
    lk.lock();
    --b.running;
    if (e && !b.err) {
      b.err = e;
      b.next = b.n;  // stop handing out
    }
  }
  if (b.running == 0) done_cv_.notify_all();
}

void MergePool::worker(unsigned nice) {
  // Linux's nice is per thread. Lowering one's own priority needs no privilege; should the
  // call still fail, the worker runs at the process's priority, which is only slower writes.
  if (nice > 0)
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), static_cast<int>(nice));
  std::unique_lock lk(mu_);
  for (;;) {
    work_cv_.wait(lk, [&] { return stop_ || !tasks_.empty() || can_help(); });
    if (can_help()) {
      ++batch_->joined;
      pull(lk, *batch_);
      continue;
    }
    if (!tasks_.empty()) {
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lk.unlock();
      task();  // a merge task catches its own errors (merge_task)
      lk.lock();
      continue;
    }
    if (stop_) return;
  }
}

void MergePool::run(std::size_t n, unsigned width, const std::function<void(std::size_t)>& fn) {
  if (n == 0) return;
  std::lock_guard rg(run_mu_);
  Batch b;
  b.fn = &fn;
  b.n = n;
  b.width = width ? width : 1;
  std::unique_lock lk(mu_);
  batch_ = &b;
  if (b.width > 1 && n > 1) work_cv_.notify_all();
  pull(lk, b);
  done_cv_.wait(lk, [&] { return b.next >= b.n && b.running == 0; });
  batch_ = nullptr;
  lk.unlock();
  if (b.err) std::rethrow_exception(b.err);
}

}  // namespace dptree::cdp
