// Deferred reuse of slots for lock-free traversals (ROWEX's readers take no lock, and writers
// find what they lock without one, so a slot a writer unlinks may still be read). Two reader
// counters by epoch parity: collect() flips the epoch and waits until the threads counted
// under the old parity have left, after which none can hold a slot unlinked before the flip.
// Every traversal holds a Guard; retire() is called under a guard, collect() outside one.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace dptree::baselines::roart {

class Epochs {
 public:
  class Guard {
   public:
    explicit Guard(const Epochs& e) : e_(e.enabled_ ? &e : nullptr) {
      if (!e_) return;
      for (;;) {
        parity_ = e_->epoch_.load(std::memory_order_acquire) & 1;
        e_->readers_[parity_].fetch_add(1, std::memory_order_seq_cst);
        if ((e_->epoch_.load(std::memory_order_seq_cst) & 1) == parity_) return;
        e_->readers_[parity_].fetch_sub(1, std::memory_order_release);  // flipped meanwhile
      }
    }
    ~Guard() {
      if (e_) e_->readers_[parity_].fetch_sub(1, std::memory_order_release);
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    const Epochs* e_;
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
  }

  // Outside any guard: when enough is retired, waits out every traversal that may still see
  // it and releases it.
  template <class Release>
  void collect(Release&& release, std::size_t at_least = kBatch) {
    if (!enabled_) return;
    std::lock_guard c(collect_mu_);
    std::vector<std::pair<int, std::uint64_t>> batch;
    {
      std::lock_guard g(mu_);
      if (limbo_.size() < at_least || limbo_.empty()) return;
      batch.swap(limbo_);
    }
    unsigned old = epoch_.fetch_add(1, std::memory_order_seq_cst) & 1;
    while (readers_[old].load(std::memory_order_acquire) != 0) std::this_thread::yield();
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
  bool enabled_;
  mutable std::atomic<std::uint64_t> epoch_{0};
  mutable std::atomic<std::int64_t> readers_[2] = {0, 0};
  mutable std::mutex mu_;
  std::mutex collect_mu_;
  std::vector<std::pair<int, std::uint64_t>> limbo_;
};

}  // namespace dptree::baselines::roart
