// The slab arenas (slab/slab_arena.h) of an index built on ROART's parts, ROART itself and
// PACTree's data layer, numbered by the index's Arena enum. With concurrent writers each
// arena's free list takes its own mutex, and a slot a writer retires is reused only once no
// lock-free traversal can still hold it (epoch.h).
//
// Runs (ROART asks for them): each thread hands out slots from runs of neighbouring slots, up
// to kRunBytes within one aligned stretch, that it took from the arena whole, as ROART's DCMM
// allocator gives each thread 256 KiB blocks of its own. Two writers taking slot by slot from
// one free list wrote the arena's mutex, free list and used bits on every allocation, put
// their 32-byte leaves side by side in cache lines and their slots in the same pages, so both
// faulted on one new page and one slept on its lock (docs/peers.md, "ROART's runs").
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "baselines/roart/epoch.h"
#include "baselines/roart/thread_slots.h"
#include "baselines/slab/slab_arena.h"
#include "dptree/index.h"

namespace dptree::pm {
class Pool;
}

namespace dptree::baselines::roart {

template <int N>
class ArenaSet {
 public:
  using Counts = std::array<std::size_t, N>;
  // What stats() reports of the arenas.
  struct Usage {
    std::size_t pm_bytes = 0;    // slabs and directories
    std::size_t dram_bytes = 0;  // the slabs' used-slot bitmaps
    Counts used{};               // used slots per arena
  };

  // Arena a hands out slots of slot_bytes(a) from slabs listed at dirs[a], a word of the
  // index's root block. Called once, before any other member.
  void create(pm::Pool& pool, std::uint64_t* dirs, std::size_t slab_size,
              std::size_t (*slot_bytes)(int), bool concurrent, bool runs = false) {
    concurrent_ = concurrent;
    if (concurrent && runs) runs_ = std::make_unique<Run[]>(kThreadSlots);
    epochs_.set_enabled(concurrent);
    slab_size_ = slab_size;
    for (int a = 0; a < N; ++a) {
      slot_bytes_[a] = slot_bytes(a);
      arenas_[a] = std::make_unique<SlabArena>(pool, &dirs[a], slot_bytes_[a], slab_size);
    }
  }

  SlabArena& operator[](int a) { return *arenas_[a]; }
  const SlabArena& operator[](int a) const { return *arenas_[a]; }
  const Epochs& epochs() const { return epochs_; }

  // Recovery: open() every arena, mark the slots reached, finish() every arena.
  void open() {
    for (auto& a : arenas_) a->open();
  }
  void finish() {
    for (auto& a : arenas_) a->finish();
  }

  // A free slot of arena a; with concurrent writers, `reused(off)` runs after the arena's
  // lock is released.
  template <class Reused>
  std::uint64_t take(int a, Reused&& reused) {
    if (!concurrent_) return arenas_[a]->alloc();
    std::uint64_t off = 0;
    if (runs_) {
      off = from_run(a);
    } else {
      std::lock_guard g(mu_[a]);
      off = arenas_[a]->alloc();
    }
    reused(off);
    return off;
  }
  std::uint64_t take(int a) {
    return take(a, [](std::uint64_t) {});
  }
  // Under a traversal's guard: the slot is released by a later collect() (at once when there
  // are no other threads).
  void retire(int a, std::uint64_t off) {
    epochs_.retire(a, off, [this](int x, std::uint64_t o) { arenas_[x]->release(o); });
  }
  // Outside any guard.
  void collect() {
    epochs_.collect([this](int x, std::uint64_t o) {
      std::lock_guard g(mu_[x]);
      arenas_[x]->release(o);
    });
  }

  // Slots in the threads' runs are not counted as used.
  Usage usage() const {
    Usage u;
    const Counts idle = in_runs();  // before the arenas' locks: take() nests them inside
    for (int a = 0; a < N; ++a) {
      std::lock_guard g(mu_[a]);  // writers take slots meanwhile
      u.pm_bytes += arenas_[a]->pm_bytes();
      u.dram_bytes += arenas_[a]->slabs() * (slab_size_ / slot_bytes_[a]) / 8;
      u.used[a] = arenas_[a]->used_slots() - std::min(idle[a], arenas_[a]->used_slots());
    }
    return u;
  }

  // check(): each arena uses exactly the slots `by` reaches plus those retired and not yet
  // released, which this adds to `reached`.
  void check_slots(Counts& reached, const std::string& by, CheckReport& r) const {
    epochs_.for_each_retired([&](int a, std::uint64_t) { ++reached[a]; });
    const Counts idle = in_runs();  // taken from the arena, not handed out yet
    for (int a = 0; a < N; ++a) reached[a] += idle[a];
    for (int a = 0; a < N; ++a)
      check_arena_slots(*arenas_[a], reached[a], "arena " + std::to_string(a), by, r);
  }

  // Appends every arena, for check_arena_blocks().
  void list(std::vector<const SlabArena*>& out) const {
    for (const auto& a : arenas_) out.push_back(a.get());
  }

 private:
  static constexpr std::size_t kRunBytes = 16 << 10;
  // One thread's runs, one per arena: the slots [next, end) are the thread's to hand out.
  struct alignas(64) Run {
    std::mutex mu;  // shared only by threads past kThreadSlots
    std::uint64_t next[N] = {}, end[N] = {};
  };

  std::uint64_t from_run(int a) {
    Run& r = runs_[thread_slot()];
    std::lock_guard g(r.mu);
    if (r.next[a] == r.end[a]) {
      std::size_t got = 0;
      std::lock_guard ga(mu_[a]);
      r.next[a] = arenas_[a]->alloc_run(std::max<std::size_t>(kRunBytes / slot_bytes_[a], 1),
                                        kRunBytes, got);
      r.end[a] = r.next[a] + got * slot_bytes_[a];
    }
    const std::uint64_t off = r.next[a];
    r.next[a] += slot_bytes_[a];
    return off;
  }
  // The slots of each arena that the threads' runs hold.
  Counts in_runs() const {
    Counts idle{};
    if (!runs_) return idle;
    for (std::size_t t = 0; t < kThreadSlots; ++t) {
      std::lock_guard g(runs_[t].mu);
      for (int a = 0; a < N; ++a) idle[a] += (runs_[t].end[a] - runs_[t].next[a]) / slot_bytes_[a];
    }
    return idle;
  }

  std::unique_ptr<SlabArena> arenas_[N];
  std::size_t slot_bytes_[N] = {};
  std::size_t slab_size_ = 0;
  bool concurrent_ = false;
  mutable std::mutex mu_[N];     // each arena's free list, when concurrent
  std::unique_ptr<Run[]> runs_;  // by thread_slot(), when concurrent and asked for
  Epochs epochs_{false};
};

}  // namespace dptree::baselines::roart
