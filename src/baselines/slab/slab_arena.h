// Fixed-size slots carved out of allocator blocks ("slabs") for the peer indexes.
//
// Why: the §2.4 allocator ties every block to one persistent owner word (a block is live iff
// *owner == block). The peer indexes move child and record pointers between words (a sorted
// node shifts its entries, a list unlinks a node by rewriting its predecessor), which the
// owner rule cannot follow without a reserve/activate (2 fences) per pointer move. So each
// index takes slabs from the allocator (activated into a directory block hanging off the
// index's root block) and hands out slots itself. Which slots are used is volatile: on open
// the index marks every slot it reaches and the rest is free, so no crash leaks a slot, and
// the allocator's live blocks are exactly the root, the directories and the slabs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "dptree/index.h"

namespace dptree::pm {
class Pool;
}

namespace dptree::baselines {

class SlabArena {
 public:
  static constexpr std::size_t kDirBytes = 4096;
  static constexpr std::size_t kDirSlots = kDirBytes / 8;

  // `dir_word`: a persistent word of the index's root block (the directory's offset, 0 if
  // none yet). `slot_size` divides `slab_size`; both are powers of two.
  SlabArena(pm::Pool& pool, std::uint64_t* dir_word, std::size_t slot_size, std::size_t slab_size);

  // Slab size for a pool: about 1/64 of it, between 16 KiB and 16 MiB, so the 512-entry
  // directory always covers the pool.
  static std::size_t slab_size_for(std::size_t pool_size);

  // Creates the directory if there is none, and registers the existing slabs with every slot
  // marked free; the index then calls mark_used() for each slot it reaches and finish().
  void open();
  bool mark_used(std::uint64_t off);  // false: not a slot of this arena, or already marked
  void finish();                      // builds the free list from the marks

  std::uint64_t alloc();  // a free slot (volatile); grows by one slab when none is left
  // Up to `max` free slots at neighbouring offsets, stopping short of the next multiple of
  // `align` bytes (a power of two): the first at the return value, `got` of them.
  std::uint64_t alloc_run(std::size_t max, std::size_t align, std::size_t& got);
  void release(std::uint64_t off);

  bool is_slot(std::uint64_t off) const;
  bool is_used(std::uint64_t off) const;
  std::size_t used_slots() const { return used_; }
  std::size_t slabs() const { return slabs_.size(); }
  std::size_t pm_bytes() const;
  // The allocator blocks this arena holds: the directory and every slab.
  void for_each_block(const std::function<void(std::uint64_t)>& fn) const;
  // Every used slot.
  void for_each_used(const std::function<void(std::uint64_t)>& fn) const;

 private:
  struct Slab {
    std::uint64_t off;
    std::vector<bool> used;
  };
  Slab* slab_of(std::uint64_t off, std::size_t& slot);
  const Slab* slab_of(std::uint64_t off, std::size_t& slot) const;
  void grow();

  pm::Pool& pool_;
  std::uint64_t* dir_word_;
  std::size_t slot_size_, slab_size_;
  std::vector<Slab> slabs_;
  std::map<std::uint64_t, std::size_t> by_off_;  // slab offset -> index in slabs_
  std::vector<std::uint64_t> free_;
  std::size_t used_ = 0;
};

// The root block of an index built on slab arenas starts with these two words.
struct ArenaRootHeader {
  std::uint64_t magic;
  std::uint64_t slab_size;
};

// Creates the pool's root block (`bytes`, zeroed, with `magic` and the slab size for this pool)
// if the pool has none; then checks that the root is this index's (`index` names it in the
// error). Returns the root block.
void* open_arena_root(pm::Pool& pool, std::size_t bytes, std::uint64_t magic,
                      const std::string& index);

// What an index's recovery cannot make sense of refuses the pool (PM is untrusted): throws
// Error(corrupt) naming the index, the pool and `what`.
[[noreturn]] void refuse_damaged(const pm::Pool& pool, const std::string& index,
                                 const std::string& what);

// check(): the allocator's live blocks are exactly the root block, the arenas' blocks and
// `others` (blocks the index owns outside its arenas).
void check_arena_blocks(const pm::Pool& pool, std::initializer_list<const SlabArena*> arenas,
                        CheckReport& r, std::initializer_list<std::uint64_t> others = {});
void check_arena_blocks(const pm::Pool& pool, const std::vector<const SlabArena*>& arenas,
                        CheckReport& r, std::initializer_list<std::uint64_t> others = {});

// check(): `arena` uses exactly the `reached` slots the index reaches (a slot reached twice
// shows as more reached than used, a leak as fewer). `what` names the arena and `by` what
// reaches it: "node arena uses 9 slots, the tree reaches 8".
void check_arena_slots(const SlabArena& arena, std::size_t reached, const std::string& what,
                       const std::string& by, CheckReport& r);

}  // namespace dptree::baselines
