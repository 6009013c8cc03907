// The slab arenas (slab/slab_arena.h) of an index built on ROART's parts, ROART itself and
// PACTree's data layer, numbered by the index's Arena enum. With concurrent writers each
// arena's free list takes its own mutex, and a slot a writer retires is reused only once no
// lock-free traversal can still hold it (epoch.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "baselines/roart/epoch.h"
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
              std::size_t (*slot_bytes)(int), bool concurrent) {
    concurrent_ = concurrent;
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
    {
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

  Usage usage() const {
    Usage u;
    for (int a = 0; a < N; ++a) {
      std::lock_guard g(mu_[a]);  // writers take slots meanwhile
      u.pm_bytes += arenas_[a]->pm_bytes();
      u.dram_bytes += arenas_[a]->slabs() * (slab_size_ / slot_bytes_[a]) / 8;
      u.used[a] = arenas_[a]->used_slots();
    }
    return u;
  }

  // check(): each arena uses exactly the slots `by` reaches plus those retired and not yet
  // released, which this adds to `reached`.
  void check_slots(Counts& reached, const std::string& by, CheckReport& r) const {
    epochs_.for_each_retired([&](int a, std::uint64_t) { ++reached[a]; });
    for (int a = 0; a < N; ++a)
      check_arena_slots(*arenas_[a], reached[a], "arena " + std::to_string(a), by, r);
  }

  // Appends every arena, for check_arena_blocks().
  void list(std::vector<const SlabArena*>& out) const {
    for (const auto& a : arenas_) out.push_back(a.get());
  }

 private:
  std::unique_ptr<SlabArena> arenas_[N];
  std::size_t slot_bytes_[N] = {};
  std::size_t slab_size_ = 0;
  bool concurrent_ = false;
  mutable std::mutex mu_[N];  // each arena's free list, when concurrent
  Epochs epochs_{false};
};

}  // namespace dptree::baselines::roart
