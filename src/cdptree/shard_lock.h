// The reader-writer lock of a string buffer shard (string_buffer.h). A writer holds it across
// its record's append, the tree change and the fence that makes the record durable (§3.1), and
// releases it with a plain store: a store after the fence becomes visible only once the
// record's lines are written back, as the log's order needs, but the writer's core goes on to
// its next operation meanwhile. A pthread rwlock's release is a locked read-modify-write, which
// waits there for the write-back: with one writer that wait was most of an insert's time in
// the lock (a profile of one-writer 64-byte inserts, docs/cdptree.md "Buffer").
// Readers share it (the count in the word's upper bits); like glibc's default rwlock it
// prefers readers. Waiters spin briefly, then yield: a section is an append, a tree change and
// the record's write-back (an insert or update also a lookup below the buffer), and the merge
// workers share the cores.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace dptree::cdp {

// Meets the standard's SharedMutex requirements (std::unique_lock, std::shared_lock).
class ShardLock {
 public:
  void lock() {
    for (unsigned spins = 0; !try_lock(); ++spins) wait(spins);
  }
  bool try_lock() {
    std::uint32_t free = 0;
    return word_.load(std::memory_order_relaxed) == 0 &&
           word_.compare_exchange_strong(free, kWriter, std::memory_order_acquire,
                                         std::memory_order_relaxed);
  }
  // While the writer holds it the word is kWriter alone (readers add themselves only to a word
  // without it), so a store releases it.
  void unlock() { word_.store(0, std::memory_order_release); }

  void lock_shared() {
    for (unsigned spins = 0; !try_lock_shared(); ++spins) wait(spins);
  }
  bool try_lock_shared() {
    std::uint32_t v = word_.load(std::memory_order_relaxed);
    return (v & kWriter) == 0 &&
           word_.compare_exchange_strong(v, v + kReader, std::memory_order_acquire,
                                         std::memory_order_relaxed);
  }
  void unlock_shared() { word_.fetch_sub(kReader, std::memory_order_release); }

 private:
  static constexpr std::uint32_t kWriter = 1, kReader = 2;
  static void wait(unsigned spins) {
    if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
      _mm_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }
  std::atomic<std::uint32_t> word_{0};
};

}  // namespace dptree::cdp
