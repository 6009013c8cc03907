// PACTree's versioned locks (the paper's concurrency control: writers lock a data node, readers
// take none and retry when the node's version moved while they read it). A data node's pairs are
// rewritten in place (a removed pair's slot takes the next insert), so a reader that saw a
// pair's bit set must know that neither the key nor the value it read were replaced meanwhile.
//
// The paper keeps the lock word in the node. Here it is volatile state in DRAM beside the pool,
// striped by node offset as ROART's write locks are: a crash leaves no lock held and no version
// odd, so recovery resets nothing, and lock traffic dirties no PM line. Two nodes sharing a
// stripe only make readers retry a little more often.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

namespace dptree::baselines::pactree {

class VersionLocks {
 public:
  VersionLocks() : v_(std::make_unique<std::atomic<std::uint64_t>[]>(kStripes)) {}

  // A reader's start: the version of node `off` while no writer holds it.
  std::uint64_t begin(std::uint64_t off) const {
    for (;;) {
      std::uint64_t v = at(off).load(std::memory_order_acquire);
      if (!(v & 1)) return v;
      std::this_thread::yield();
    }
  }
  // A reader's end: whether what it read since begin() is what one moment held. The reader's
  // loads of node words are acquire loads (load8), so this load cannot move before them (no
  // fence: ThreadSanitizer does not take atomic_thread_fence).
  bool still(std::uint64_t off, std::uint64_t v) const {
    return at(off).load(std::memory_order_acquire) == v;
  }

  class Guard {
   public:
    Guard(VersionLocks& l, std::uint64_t off) : v_(l.at(off)) {
      for (;;) {
        std::uint64_t v = v_.load(std::memory_order_relaxed);
        if (!(v & 1) && v_.compare_exchange_weak(v, v + 1, std::memory_order_acquire)) break;
        std::this_thread::yield();
      }
    }
    ~Guard() { v_.fetch_add(1, std::memory_order_release); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    std::atomic<std::uint64_t>& v_;
  };

 private:
  static constexpr std::size_t kStripes = 1 << 14;
  std::atomic<std::uint64_t>& at(std::uint64_t off) const {
    return v_[(off >> 10) * 0x9E37'79B9'7F4A'7C15ull >> 50];
  }
  std::unique_ptr<std::atomic<std::uint64_t>[]> v_;
};

}  // namespace dptree::baselines::pactree
