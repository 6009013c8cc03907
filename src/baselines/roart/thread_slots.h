// Per-thread slots, one cache line each, for the words every operation of every thread writes
// (the readers' counts of the epochs, the record count): one word shared by two cores moves
// between their caches on every write, which cost ROART's writers more than their persists at
// two threads (docs/indexes.md, ROART). A thread takes the next slot the first time it uses
// one; past kThreadSlots threads share slots, so each slot's word stays atomic.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dptree::baselines::roart {

inline constexpr std::size_t kThreadSlots = 64;

inline std::size_t thread_slot() {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t mine = next.fetch_add(1, std::memory_order_relaxed) % kThreadSlots;
  return mine;
}

// A count each thread adds to on its own line; reading it sums the lines.
class SpreadCount {
 public:
  void add(std::int64_t d) { slots_[thread_slot()].n.fetch_add(d, std::memory_order_relaxed); }
  SpreadCount& operator++() {
    add(1);
    return *this;
  }
  SpreadCount& operator--() {
    add(-1);
    return *this;
  }
  std::size_t load() const {
    std::int64_t sum = 0;
    for (const auto& s : slots_) sum += s.n.load(std::memory_order_relaxed);
    return static_cast<std::size_t>(sum);
  }
  void reset() {  // while no thread adds (recovery)
    for (auto& s : slots_) s.n.store(0, std::memory_order_relaxed);
  }

 private:
  struct alignas(64) Slot {
    std::atomic<std::int64_t> n{0};
  };
  Slot slots_[kThreadSlots];
};

}  // namespace dptree::baselines::roart
