// ROWEX's write side (the concurrency ROART takes from ART-ROWEX): a writer locks the node or
// leaf array it changes, and the word holder (the parent) too when it swings the parent's word,
// then validates that neither has been replaced meanwhile. Readers take no lock. Every word of
// a node or array changes only under that node's or array's lock, and a node or array is
// marked replaced under its own lock, so one not marked is still linked.
//
// The locks and the "replaced" (obsolete) marks are volatile, so they live in DRAM beside the
// pool rather than in the nodes: a crash leaves no lock held, and recovery resets nothing.
// Locks are striped by slot offset; a writer takes its two stripes in stripe order, so two
// writers never wait on each other in a cycle. Obsolete marks are one bit per 64-byte granule
// of the pool (every node and leaf-array slot is 64-byte aligned). A slot is marked too when it
// is handed out (the epochs, epoch.h, delay reuse until no thread can still hold it), and
// cleared once the publish that links it is durable (Tree::settle): no writer builds on a
// node or array a crash could still unlink.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

namespace dptree::baselines::roart {

class WriteLocks {
 public:
  explicit WriteLocks(std::size_t pool_bytes)
      : obsolete_(std::make_unique<std::atomic<std::uint64_t>[]>(pool_bytes / 64 / 64 + 1)) {}

  // Holds the stripes of `a` and `b` (offsets; 0 names the root word's own lock).
  class Pair {
   public:
    Pair(WriteLocks& l, std::uint64_t a, std::uint64_t b) : l_(l) {
      s1_ = stripe(a);
      s2_ = stripe(b);
      if (s1_ > s2_) std::swap(s1_, s2_);
      l_.lock(s1_);
      if (s2_ != s1_) l_.lock(s2_);
    }
    ~Pair() {
      if (s2_ != s1_) l_.unlock(s2_);
      l_.unlock(s1_);
    }
    Pair(const Pair&) = delete;
    Pair& operator=(const Pair&) = delete;

   private:
    WriteLocks& l_;
    std::size_t s1_, s2_;
  };

  // Holds the stripe of `a` alone: a change inside one node or leaf array (ROWEX, as ROART
  // locks the node it inserts into); Pair only when a word above it swings too.
  class One {
   public:
    One(WriteLocks& l, std::uint64_t a) : l_(l), s_(stripe(a)) { l_.lock(s_); }
    ~One() { l_.unlock(s_); }
    One(const One&) = delete;
    One& operator=(const One&) = delete;

   private:
    WriteLocks& l_;
    std::size_t s_;
  };

  bool obsolete(std::uint64_t off) const {
    return off && (word(off).load(std::memory_order_acquire) >> bit(off) & 1);
  }
  void set_obsolete(std::uint64_t off) {
    word(off).fetch_or(std::uint64_t{1} << bit(off), std::memory_order_release);
  }
  void clear_obsolete(std::uint64_t off) {
    word(off).fetch_and(~(std::uint64_t{1} << bit(off)), std::memory_order_release);
  }

 private:
  static constexpr std::size_t kStripes = 1 << 14;
  static std::size_t stripe(std::uint64_t off) {
    return static_cast<std::size_t>((off >> 6) * 0x9E37'79B9'7F4A'7C15ull >> 50) % kStripes;
  }
  void lock(std::size_t s) {
    for (;;) {
      if (!stripes_[s].exchange(true, std::memory_order_acquire)) return;
      while (stripes_[s].load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock(std::size_t s) { stripes_[s].store(false, std::memory_order_release); }
  std::atomic<std::uint64_t>& word(std::uint64_t off) const { return obsolete_[off >> 12]; }
  static unsigned bit(std::uint64_t off) { return static_cast<unsigned>(off >> 6) & 63; }

  std::atomic<bool> stripes_[kStripes] = {};
  std::unique_ptr<std::atomic<std::uint64_t>[]> obsolete_;
};

}  // namespace dptree::baselines::roart
