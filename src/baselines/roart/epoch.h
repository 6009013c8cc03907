// Deferred reuse of slots for lock-free traversals (ROWEX's readers take no lock, and writers
// find what they lock without one, so a slot a writer unlinks may still be read). Reader
// counts by epoch parity: collect() flips the epoch and waits until the threads counted under
// the old parity have left, after which none can hold a slot unlinked before the flip. Each
// thread counts itself on its own line (thread_slots.h): one pair of counters for all threads
// moved a line between the cores twice per operation. Every traversal holds a Guard; retire()
// is called under a guard, collect() outside one.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "baselines/roart/thread_slots.h"

namespace dptree::baselines::roart {

class Epochs {
 public:
  class Guard {
   public:
    explicit Guard(const Epochs& e) : e_(e.enabled_ ? &e : nullptr) {
      if (!e_) return;
      readers_ = e_->slots_[thread_slot()].readers;
      for (;;) {
        parity_ = e_->epoch_.load(std::memory_order_acquire) & 1;
        readers_[parity_].fetch_add(1, std::memory_order_seq_cst);
        if ((e_->epoch_.load(std::memory_order_seq_cst) & 1) == parity_) return;
        readers_[parity_].fetch_sub(1, std::memory_order_release);  // flipped meanwhile
      }
    }
    ~Guard() {
      if (e_) readers_[parity_].fetch_sub(1, std::memory_order_release);
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    const Epochs* e_;
    std::atomic<std::int64_t>* readers_ = nullptr;  // this thread's pair
    unsigned parity_ = 0;
  };

  explicit Epochs(bool enabled) : enabled_(enabled) {}
  void set_enabled(bool e) { enabled_ = e; }  // before any thread uses it

  // A slot (arena index, offset) no longer reachable; released by `release` when safe (at
  // once when there are no other threads).
  template <class Release>
  void retire(int arena, std::uint64_t off, Release&& release) {
    if (!enabled_) return release(arena, off);
    std::lock_guard g(mu_);
    limbo_.emplace_back(arena, off);
    retired_.store(limbo_.size(), std::memory_order_relaxed);
  }

  // Outside any guard: when enough is retired, waits out every traversal that may still see
  // it and releases it.
  template <class Release>
  void collect(Release&& release, std::size_t at_least = kBatch) {
    // Every write calls this: too few retired is seen without taking the two mutexes.
    if (!enabled_ || retired_.load(std::memory_order_relaxed) < std::max<std::size_t>(at_least, 1))
      return;
    std::lock_guard c(collect_mu_);
    std::vector<std::pair<int, std::uint64_t>> batch;
    {
      std::lock_guard g(mu_);
      if (limbo_.size() < at_least || limbo_.empty()) return;
      batch.swap(limbo_);
      retired_.store(0, std::memory_order_relaxed);
    }
    unsigned old = epoch_.fetch_add(1, std::memory_order_seq_cst) & 1;
    for (const auto& s : slots_)
      while (s.readers[old].load(std::memory_order_acquire) != 0) std::this_thread::yield();
    for (auto [a, off] : batch) release(a, off);
  }

  // Every slot retired and not yet released (check() counts them as used).
  template <class F>
  void for_each_retired(F&& f) const {
    std::lock_guard g(mu_);
    for (auto [a, off] : limbo_) f(a, off);
  }

 private:
  static constexpr std::size_t kBatch = 256;
  struct alignas(64) Slot {
    std::atomic<std::int64_t> readers[2] = {0, 0};  // by parity
  };
  // Read by every guard: a line of their own, apart from the arenas' mutexes before them.
  alignas(64) bool enabled_;
  mutable std::atomic<std::uint64_t> epoch_{0};
  mutable Slot slots_[kThreadSlots];
  alignas(64) std::atomic<std::size_t> retired_{0};  // limbo_'s size, read without mu_
  mutable std::mutex mu_;
  std::mutex collect_mu_;
  std::vector<std::pair<int, std::uint64_t>> limbo_;
};

}  // namespace dptree::baselines::roart
