// The slab arena (slab_arena.h): slabs taken from the allocator, their slots handed out and
// released, and the rebuild of the free slots when a pool opens.
#include "baselines/slab/slab_arena.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>
#include <string>
#include <utility>

#include "baselines/common.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"

namespace dptree::baselines {

SlabArena::SlabArena(pm::Pool& pool, std::uint64_t* dir_word, std::size_t slot_size,
                     std::size_t slab_size)
    : pool_(pool), dir_word_(dir_word), slot_size_(slot_size), slab_size_(slab_size) {
  if (!std::has_single_bit(slot_size) || !std::has_single_bit(slab_size) || slab_size < slot_size ||
      slab_size > (16 << 20))
    throw Error(Errc::corrupt, "slab arena in " + pool.name() + ": impossible slab size " +
                                   std::to_string(slab_size) + "; recreate the pool");
}

std::size_t SlabArena::slab_size_for(std::size_t pool_size) {
  std::size_t s = std::bit_floor(std::max<std::size_t>(pool_size / 64, 1));
  return std::clamp<std::size_t>(s, 16 << 10, 16 << 20);
}

void SlabArena::open() {
  if (*dir_word_ == 0) {
    std::uint64_t d = pool_.allocator().reserve(kDirBytes);
    pm::fill_bytes(pool_.at(d), 0, kDirBytes);
    pm::flush(pool_.at(d), kDirBytes);  // ordered by activate's first fence
    pool_.allocator().activate(dir_word_, d);
  }
  // PM is untrusted: the directory and every slab must be live blocks their words own.
  const auto& a = pool_.allocator();
  if (a.owner_of(*dir_word_) != pool_.offset_of(dir_word_) || a.block_size(*dir_word_) < kDirBytes)
    throw Error(Errc::corrupt, "slab arena in " + pool_.name() + ": the directory at offset " +
                                   std::to_string(*dir_word_) +
                                   " is not a live block its root word owns: the pool is "
                                   "damaged; restore it from a copy");
  auto* dir = pool_.at<std::uint64_t>(*dir_word_);
  slabs_.clear();
  by_off_.clear();
  free_.clear();
  used_ = 0;
  for (std::size_t i = 0; i < kDirSlots && dir[i]; ++i) {
    if (a.owner_of(dir[i]) != pool_.offset_of(&dir[i]) || a.block_size(dir[i]) < slab_size_)
      throw Error(Errc::corrupt, "slab arena in " + pool_.name() + ": directory entry " +
                                     std::to_string(i) + " is not a live slab; recreate the pool");
    by_off_[dir[i]] = slabs_.size();
    slabs_.push_back({dir[i], std::vector<bool>(slab_size_ / slot_size_, false)});
  }
}

bool SlabArena::mark_used(std::uint64_t off) {
  std::size_t slot;
  Slab* s = slab_of(off, slot);
  if (!s || s->used[slot]) return false;
  s->used[slot] = true;
  ++used_;
  return true;
}

void SlabArena::finish() {
  free_.clear();
  for (std::size_t i = slabs_.size(); i-- > 0;)
    for (std::size_t k = slabs_[i].used.size(); k-- > 0;)
      if (!slabs_[i].used[k]) free_.push_back(slabs_[i].off + k * slot_size_);
}

void SlabArena::grow() {
  auto* dir = pool_.at<std::uint64_t>(*dir_word_);
  std::size_t n = slabs_.size();
  if (n == kDirSlots)
    throw Error(Errc::pool_full,
                "slab directory of " + pool_.name() + " is full; use a larger pool");
  std::uint64_t b = pool_.allocator().reserve(slab_size_);  // throws pool_full
  pool_.allocator().activate(&dir[n], b);
  by_off_[b] = n;
  slabs_.push_back({b, std::vector<bool>(slab_size_ / slot_size_, false)});
  for (std::size_t k = slab_size_ / slot_size_; k-- > 0;) free_.push_back(b + k * slot_size_);
}

std::uint64_t SlabArena::alloc() {
  if (free_.empty()) grow();
  std::uint64_t off = free_.back();
  free_.pop_back();
  std::size_t slot;
  slab_of(off, slot)->used[slot] = true;
  ++used_;
  return off;
}

// Free slots are handed out lowest offset first, so after a grow the next ones are neighbours.
std::uint64_t SlabArena::alloc_run(std::size_t max, std::size_t align, std::size_t& got) {
  const std::uint64_t first = alloc();
  const std::size_t room = (align - first % align) / slot_size_;  // slots before the boundary
  got = 1;
  for (std::uint64_t next = first + slot_size_;
       got < std::min(max, room) && !free_.empty() && free_.back() == next; next += slot_size_) {
    std::size_t slot;
    Slab* s = slab_of(next, slot);
    free_.pop_back();
    s->used[slot] = true;
    ++used_;
    ++got;
  }
  return first;
}

void SlabArena::release(std::uint64_t off) {
  std::size_t slot;
  Slab* s = slab_of(off, slot);
  if (!s || !s->used[slot])
    throw Error(Errc::invalid_argument,
                "slab arena: release of a slot that is not in use (" + std::to_string(off) + ")");
  s->used[slot] = false;
  --used_;
  free_.push_back(off);
}

const SlabArena::Slab* SlabArena::slab_of(std::uint64_t off, std::size_t& slot) const {
  // The newest slab first: the free list hands out a grown slab's slots in a row, so an
  // allocation (a peer's split) mostly finds its slab without the map lookup.
  const Slab* s = nullptr;
  if (!slabs_.empty() && off - slabs_.back().off < slab_size_) {
    s = &slabs_.back();
  } else {
    auto it = by_off_.upper_bound(off);
    if (it == by_off_.begin()) return nullptr;
    --it;
    s = &slabs_[it->second];
  }
  std::uint64_t rel = off - s->off;
  if (rel >= slab_size_ || rel % slot_size_) return nullptr;
  slot = rel / slot_size_;
  return s;
}
SlabArena::Slab* SlabArena::slab_of(std::uint64_t off, std::size_t& slot) {
  return const_cast<Slab*>(std::as_const(*this).slab_of(off, slot));
}

bool SlabArena::is_slot(std::uint64_t off) const {
  std::size_t slot;
  return slab_of(off, slot) != nullptr;
}
bool SlabArena::is_used(std::uint64_t off) const {
  std::size_t slot;
  const Slab* s = slab_of(off, slot);
  return s && s->used[slot];
}

std::size_t SlabArena::pm_bytes() const {
  if (slabs_.empty()) return kDirBytes;
  return kDirBytes + slabs_.size() * pool_.allocator().block_size(slabs_[0].off);
}

void SlabArena::for_each_block(const std::function<void(std::uint64_t)>& fn) const {
  if (*dir_word_) fn(*dir_word_);
  for (const auto& s : slabs_) fn(s.off);
}

void SlabArena::for_each_used(const std::function<void(std::uint64_t)>& fn) const {
  for (const auto& s : slabs_)
    for (std::size_t k = 0; k < s.used.size(); ++k)
      if (s.used[k]) fn(s.off + k * slot_size_);
}

void* open_arena_root(pm::Pool& pool, std::size_t bytes, std::uint64_t magic,
                      const std::string& index) {
  if (*pool.root_word() == 0) {
    auto& a = pool.allocator();
    std::uint64_t b = a.reserve(bytes);
    pm::fill_bytes(pool.at(b), 0, bytes);
    auto* h = pool.at<ArenaRootHeader>(b);
    pm::store(&h->magic, magic);
    pm::store(&h->slab_size, SlabArena::slab_size_for(pool.size()));
    pm::flush(h, bytes);  // ordered by activate's first fence
    a.activate(pool.root_word(), b);
  }
  const auto rw = owned_root(pool, index);
  auto* h = pool.root<ArenaRootHeader>();
  if (pool.allocator().block_size(rw) < bytes || h->magic != magic)
    throw Error(Errc::wrong_index, "pool " + pool.name() + " holds another index, not " + index +
                                       ": open it with that index or use a new pool");
  return h;
}

void refuse_damaged(const pm::Pool& pool, const std::string& index, const std::string& what) {
  throw Error(Errc::corrupt, index + " in " + pool.name() + ": " + what +
                                 ": the pool is damaged; restore it from a copy");
}

void check_arena_blocks(const pm::Pool& pool, std::initializer_list<const SlabArena*> arenas,
                        CheckReport& r, std::initializer_list<std::uint64_t> others) {
  check_arena_blocks(pool, std::vector<const SlabArena*>(arenas), r, others);
}

void check_arena_blocks(const pm::Pool& pool, const std::vector<const SlabArena*>& arenas,
                        CheckReport& r, std::initializer_list<std::uint64_t> others) {
  std::set<std::uint64_t> mine{*pool.root_word()};
  mine.insert(others.begin(), others.end());
  for (const auto* a : arenas) a->for_each_block([&](std::uint64_t b) { mine.insert(b); });
  std::size_t live = 0;
  pool.allocator().for_each_live_block([&](std::uint64_t b, std::size_t) {
    ++live;
    if (!mine.contains(b)) r.fail("allocator block " + std::to_string(b) + " is leaked");
  });
  if (live != mine.size()) r.fail("a block of the index is not live in the allocator");
}

void check_arena_slots(const SlabArena& arena, std::size_t reached, const std::string& what,
                       const std::string& by, CheckReport& r) {
  if (arena.used_slots() != reached)
    r.fail(what + " uses " + std::to_string(arena.used_slots()) + " slots, " + by + " reaches " +
           std::to_string(reached));
}

}  // namespace dptree::baselines
