// Synchronisation for the peer indexes: a version lock (seqlock) for leaves (uTree's array
// layer, LB+-Tree's PM leaves), acquire/release access to plain fields, and a writer-preferring
// reader-writer lock for their DRAM inner nodes.
//
// Writers take the lock (the version turns odd) and publish every field a reader may read
// concurrently with st() (a release store); readers take no lock: they note an even version,
// read with ld() (acquire loads) and keep the result only if the version is unchanged. The
// acquire loads keep the closing version check after the reads and the release stores keep
// the data after the lock, without stand-alone fences (which ThreadSanitizer cannot model). On
// x86 ld/st compile to plain moves.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "dptree/pm/store.h"

namespace dptree::baselines {

template <class T>
inline T ld(const T& x) {
  return std::atomic_ref<T>(const_cast<T&>(x)).load(std::memory_order_acquire);
}
// Through the PM store helpers: the fields may live in PM (pm/store.h).
template <class T>
inline void st(T& x, T v) {
  pm::store_release(&x, v);
}
template <class T>
inline bool cas(T& x, T& expected, T desired) {
  return pm::update(&x, [&](std::atomic_ref<T> a) {
    return a.compare_exchange_strong(expected, desired, std::memory_order_acq_rel);
  });
}

// Spins politely: the machine may run more threads than cores, and the holder may be waiting
// for a core.
inline void spin_pause(unsigned& n) {
  if (++n > 64) std::this_thread::yield();
}

class VersionLock {
 public:
  void lock() {
    unsigned n = 0;
    for (;;) {
      std::uint64_t v = v_.load(std::memory_order_relaxed);
      if (!(v & 1) && v_.compare_exchange_weak(v, v + 1, std::memory_order_acquire)) return;
      spin_pause(n);
    }
  }
  void unlock() { v_.fetch_add(1, std::memory_order_release); }

  // An even version to read under (waits while a writer holds the lock).
  std::uint64_t read_begin() const {
    unsigned n = 0;
    for (;;) {
      std::uint64_t v = v_.load(std::memory_order_acquire);
      if (!(v & 1)) return v;
      spin_pause(n);
    }
  }
  // True when nothing was written since read_begin() returned `v`.
  bool read_valid(std::uint64_t v) const { return v_.load(std::memory_order_acquire) == v; }

 private:
  std::atomic<std::uint64_t> v_{0};
};

// Reader-writer spin lock that lets a waiting writer in: new readers wait while one waits.
// (glibc's rwlock, behind std::shared_mutex, prefers readers: two threads that each hold it
// shared most of the time keep a splitting writer out indefinitely.)
class SharedSpinLock {
 public:
  void lock_shared() {
    unsigned n = 0;
    for (;;) {
      std::uint32_t v = s_.load(std::memory_order_relaxed);
      if (!(v & (kWriter | kWaiting)) &&
          s_.compare_exchange_weak(v, v + 1, std::memory_order_acquire))
        return;
      spin_pause(n);
    }
  }
  void unlock_shared() { s_.fetch_sub(1, std::memory_order_release); }
  void lock() {
    unsigned n = 0;
    for (;;) {
      std::uint32_t v = s_.load(std::memory_order_relaxed);
      if ((v & ~kWaiting) == 0) {
        if (s_.compare_exchange_weak(v, kWriter, std::memory_order_acquire)) return;
        continue;
      }
      if (!(v & kWaiting)) s_.fetch_or(kWaiting, std::memory_order_relaxed);
      spin_pause(n);
    }
  }
  void unlock() { s_.fetch_and(~kWriter, std::memory_order_release); }

 private:
  static constexpr std::uint32_t kWriter = 1u << 31, kWaiting = 1u << 30;
  std::atomic<std::uint32_t> s_{0};  // reader count | kWaiting | kWriter
};

// A lock that a peer takes only when several threads may share the index: with
// IndexConfig::threads == 1 it is switched off and lock / unlock do nothing, so a one-thread
// run pays for no synchronisation, as the single-threaded DPTree does not. The standard
// guards (lock_guard, unique_lock, shared_lock) work on it either way.
template <class M>
class Switchable {
 public:
  void set_on(bool on) { on_ = on; }
  void lock() {
    if (on_) m_.lock();
  }
  void unlock() {
    if (on_) m_.unlock();
  }
  void lock_shared() {
    if (on_) m_.lock_shared();
  }
  void unlock_shared() {
    if (on_) m_.unlock_shared();
  }

 private:
  M m_;
  bool on_ = true;
};

}  // namespace dptree::baselines
