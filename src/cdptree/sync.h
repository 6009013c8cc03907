// Synchronizing tree components (DPTree paper §3.2, Algorithms 6-8): four thread-local sync
// words per thread, W_FW / W_FR / W_MR / W_BR, registered with a sync manager (SM). Bit 0 of
// a word is the active bit; the rest hold the pointer the thread is using (Front writer,
// Front reader, Middle reader, base inner index reader). A thread sets the active bit BEFORE
// it loads the global pointer (ordered as below), so a thread that publishes a new pointer
// and then scans the words (SpinUntilNoRef, Algorithm 8) cannot miss a reference to the old
// one: it sees either the active bit with a null pointer (the reader has not stored what it
// loaded yet: wait) or the pointer itself.
//
// The active bit's store and the pointer's load, and the publisher's store and its scan, are
// each a store followed by a load that must not pass it. A sequentially consistent store
// orders them with a locked instruction on every read and write, and that instruction also
// waits until every earlier store and write-back of the thread is complete: in the
// concurrent DPTree, the last insert's log persist. Where Linux offers membarrier, the fence
// is asymmetric instead: a guard keeps only the compiler from reordering, and a scan, which
// runs a few times per merge, first makes every running thread of the process execute a
// full fence (heavy_fence). A guard whose active bit was stored before that fence is seen by
// the scan; one that stores it later loads the pointer after the fence, so it loads the new
// pointer. Without membarrier the guards keep their locked stores.
//
// Words live per tree instance (the crash tests open a second tree while the first runs), one
// cache line per thread; a thread finds its slot through a small thread-local cache keyed by
// the manager's never-reused id, falling back to a locked map.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace dptree::cdp {

enum WType : int { kFW = 0, kFR = 1, kMR = 2, kBR = 3 };

// Whether guards use the asymmetric fence (membarrier registered for the process on the first
// call; the answer never changes after it).
bool asymmetric_fences();
// The scan's fence, between the caller's sequentially consistent store of the new pointer and
// its sequentially consistent loads of the words: with asymmetric fences, every running thread
// of the process executes a full fence before it returns; without them, nothing is needed.
void heavy_fence();

// A guard's store of its active bit, ordered before the guard's next load: by the compiler
// alone when `asymmetric` (heavy_fence makes it a full fence), else by a locked store.
template <class T>
void store_active(std::atomic<T>& w, std::type_identity_t<T> v, bool asymmetric) {
  if (asymmetric) {
    w.store(v, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    w.store(v, std::memory_order_seq_cst);
  }
}

class SyncManager {
 public:
  struct alignas(64) Slot {
    std::atomic<std::uintptr_t> w[4] = {0, 0, 0, 0};
    const bool asymmetric = asymmetric_fences();  // on the words' line: no miss of its own
  };

  SyncManager() : id_(next_id().fetch_add(1) + 1) {}
  SyncManager(const SyncManager&) = delete;
  SyncManager& operator=(const SyncManager&) = delete;

  // The calling thread's words (registered on first use). Every operation asks, so the cache
  // hit stays small: the registration is a call of its own, whose register saves a lookup
  // would otherwise pay.
  Slot& mine() {
    auto& cache = local_cache();
    for (auto& c : cache.entries)
      if (c.id == id_) return *c.slot;
    return enlist(cache);
  }

  // Algorithm 8: spins while some registered thread's word of type t is active and holds
  // null or ptr.
  void spin_until_no_ref(WType t, const void* ptr) const {
    auto p = reinterpret_cast<std::uintptr_t>(ptr);
    std::vector<Slot*> all;
    {
      std::lock_guard g(mu_);
      all = list_;
    }
    // After the caller published the new pointer: see the header comment.
    heavy_fence();
    for (;;) {
      bool wait = false;
      for (Slot* s : all) {
        std::uintptr_t w = s->w[t].load(std::memory_order_seq_cst);
        if ((w & 1) && ((w & ~std::uintptr_t{1}) == 0 || (w & ~std::uintptr_t{1}) == p)) {
          wait = true;
          break;
        }
      }
      if (!wait) return;
      std::this_thread::yield();
    }
  }

  std::size_t threads() const {
    std::lock_guard g(mu_);
    return list_.size();
  }

 private:
  static constexpr unsigned kCache = 4;
  struct Cache {
    struct Entry {
      std::uint64_t id = 0;
      Slot* slot = nullptr;
    } entries[kCache];
    unsigned next = 0;
  };
  static std::atomic<std::uint64_t>& next_id() {
    static std::atomic<std::uint64_t> n{0};
    return n;
  }
  static Cache& local_cache() {
    thread_local Cache c;
    return c;
  }

  // The calling thread's slot, made on its first call, and noted in its cache.
  [[gnu::noinline]] Slot& enlist(Cache& cache) {
    Slot* s;
    {
      std::lock_guard g(mu_);
      auto [it, fresh] = by_thread_.try_emplace(std::this_thread::get_id(), nullptr);
      if (fresh) {
        slots_.emplace_back();
        it->second = &slots_.back();
        list_.push_back(it->second);
      }
      s = it->second;
    }
    cache.entries[cache.next++ % kCache] = {id_, s};
    return *s;
  }

  const std::uint64_t id_;
  mutable std::mutex mu_;
  std::deque<Slot> slots_;
  std::vector<Slot*> list_;
  std::unordered_map<std::thread::id, Slot*> by_thread_;
};

// Holds one sync word active for a scope (Algorithm 6 lines 1-4, Algorithm 7 lines 1-5):
// sets the active bit, loads the global pointer, publishes it, and clears the word on exit.
template <class T>
class Guard {
 public:
  Guard(SyncManager::Slot& s, WType t, const std::atomic<T*>& gp) : w_(s.w[t]) {
    store_active(w_, 1, s.asymmetric);
    p_ = gp.load(std::memory_order_seq_cst);
    // Nothing to reference (no Middle): leave at once (Algorithm 6 line 8 searches nothing).
    // Only the active bit pairs with a scan, which waits while it sees the bit without the
    // pointer, so this store needs no ordering beyond release.
    w_.store(p_ ? reinterpret_cast<std::uintptr_t>(p_) | 1 : 0, std::memory_order_release);
  }
  ~Guard() { w_.store(0, std::memory_order_release); }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
  T* get() const { return p_; }

 private:
  std::atomic<std::uintptr_t>& w_;
  T* p_;
};

}  // namespace dptree::cdp
