// Deferred reuse of slots for lock-free readers (ROWEX's readers take no lock, so a slot a
// writer unlinks may still be read). Two reader counters by epoch parity: a writer that has
// unlinked slots flips the epoch and waits until the readers counted under the old parity
// have left, after which no reader can hold a pointer to what was unlinked before the flip.
// Writers call retire() and collect() under their own lock; readers hold a Guard.
#pragma once

#include <atomic>
#include <cstdint>
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

  // A slot (arena index, offset) no longer reachable; released by `release` when safe (at
  // once without readers to wait for).
  template <class Release>
  void retire(int arena, std::uint64_t off, Release&& release) {
    if (!enabled_) return release(arena, off);
    limbo_.emplace_back(arena, off);
    if (limbo_.size() >= kBatch) collect(release);
  }

  // Waits out every reader that may see what was retired, then releases it all.
  template <class Release>
  void collect(Release&& release) {
    if (limbo_.empty()) return;
    unsigned old = epoch_.fetch_add(1, std::memory_order_seq_cst) & 1;
    while (readers_[old].load(std::memory_order_acquire) != 0) std::this_thread::yield();
    for (auto [a, off] : limbo_) release(a, off);
    limbo_.clear();
  }

  bool enabled() const { return enabled_; }
  // Every slot retired and not yet released (check() counts them as used).
  template <class F>
  void for_each_retired(F&& f) const {
    for (auto [a, off] : limbo_) f(a, off);
  }

 private:
  static constexpr std::size_t kBatch = 256;
  bool enabled_;
  mutable std::atomic<std::uint64_t> epoch_{0};
  mutable std::atomic<std::int64_t> readers_[2] = {0, 0};
  std::vector<std::pair<int, std::uint64_t>> limbo_;
};

}  // namespace dptree::baselines::roart
