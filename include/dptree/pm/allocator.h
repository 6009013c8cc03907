// The PM allocator of the DPTree paper's §2.4: reserve / activate / free.
//
//   reserve(size)        -> a block that is not allocated yet (volatile reservation)
//   activate(dest, blk)  -> blk becomes allocated and *dest = blk, failure-atomically
//   free(dest)           -> the block *dest is released and *dest = 0, failure-atomically;
//                           free of a null *dest is a no-op (no double free after a crash)
//
// Layout: the heap is cut into 64 KiB chunks. A chunk holds blocks of one size class
// (64 B .. 64 KiB, powers of two), or is part of a run of chunks holding one large block.
// Every block has a persistent owner word: the offset of the `dest` that points to it. A
// block is allocated exactly when its owner word is set and *owner == block. activate
// persists owner, then dest (2 fences); free persists dest = 0, then clears owner without a
// fence of its own (recovery clears stale owners). Free lists are volatile, rebuilt on open.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_set>
#include <vector>

#include "dptree/pm/pptr.h"

namespace dptree::pm {

class Pool;

class Allocator {
 public:
  static constexpr std::size_t kChunkSize = 64 * 1024;
  static constexpr std::size_t kMinBlock = 64;

  struct Stats {
    std::size_t capacity_bytes = 0;  // heap bytes
    std::size_t used_chunks = 0;     // chunks assigned to a class or a large block
    // The most chunks in use at once since the pool was opened (a run's PM high-water mark;
    // chunks recovery found in use count from the open).
    std::size_t peak_used_chunks = 0;
    std::size_t total_chunks = 0;
    std::size_t live_blocks = 0;
    std::size_t live_bytes = 0;       // sum of block sizes of live blocks
    std::size_t reserved_blocks = 0;  // reserved, not yet activated
  };

  // Block size a request of `size` bytes gets (throws for 0).
  static std::size_t block_size_for(std::size_t size);

  // Offset of a block of at least `size` bytes, not yet allocated. Throws Error(pool_full).
  std::uint64_t reserve(std::size_t size);
  // Makes `block` allocated and stores its offset into the persistent word `dest`
  // (inside the pool, 8-byte aligned, currently 0), failure-atomically. Persists the block's
  // own pending flushes too (the first fence drains them).
  void activate(std::uint64_t* dest, std::uint64_t block);
  template <class T>
  void activate(PPtr<T>& dest, std::uint64_t block) {
    activate(dest.word(), block);
  }
  // Gives back a reservation that was never activated.
  void cancel(std::uint64_t block);
  // Releases the block *dest points to and sets *dest = 0, failure-atomically. No-op if 0.
  void free(std::uint64_t* dest);
  template <class T>
  void free(PPtr<T>& dest) {
    free(dest.word());
  }

  std::size_t block_size(std::uint64_t block) const;
  bool is_live(std::uint64_t block) const;
  // The offset of the owner word of live block `block` (the word it was activated into); 0
  // when `block` is not the start of a live block. Open-time checks of a pool use it to
  // follow only pointers that own what they point to.
  std::uint64_t owner_of(std::uint64_t block) const;
  // owner_of and block_size of each of `blocks` (0, 0 for one that is not a live block's
  // start) under one lock: an open-time walk over millions of directory slots takes the lock
  // once a batch, not twice a block, and threads walking apart rarely meet on it.
  struct Owned {
    std::uint64_t owner = 0;
    std::size_t size = 0;
  };
  void owners_of(std::span<const std::uint64_t> blocks, std::span<Owned> out) const;
  // The live block that holds byte `off` (its start), or 0 when none does: the string form's
  // leaves name key bytes inside log pages by offset and count references per page.
  std::uint64_t block_containing(std::uint64_t off) const;
  // Every allocated block (offset, size), in address order.
  void for_each_live_block(const std::function<void(std::uint64_t, std::size_t)>& fn) const;
  Stats stats() const;
  // The most heap bytes (whole chunks) in use at once since the pool was opened; cheap, unlike
  // stats(), which walks every live block.
  std::size_t peak_used_bytes() const;

  ~Allocator();

 private:
  friend class Pool;
  struct ChunkInfo;
  Allocator(Pool& pool, bool fresh);  // fresh: format; else recover and rebuild free lists

  Pool& pool_;
  mutable std::mutex mu_;
  std::vector<ChunkInfo> chunks_;
  std::vector<std::vector<std::uint32_t>> partial_;  // per class: chunks with a free block
  std::unordered_set<std::uint64_t> reserved_;       // reserved, not yet activated
  std::size_t nchunks_ = 0;
  std::size_t used_chunks_ = 0, peak_used_chunks_ = 0;  // volatile, under mu_
  std::uint64_t heap_off_ = 0, desc_off_ = 0;

  // helpers (allocator.cc)
  std::uint64_t* state_word(std::size_t chunk) const;
  std::uint64_t* owner_word(std::size_t chunk, std::size_t slot) const;
  std::uint64_t block_offset(std::size_t chunk, std::size_t slot) const;
  bool locate(std::uint64_t block, std::size_t& chunk, std::size_t& slot) const;
  void check_dest(const std::uint64_t* dest, const char* op) const;
  bool owner_is_valid(std::uint64_t owner, std::uint64_t block) const;
  std::size_t find_free_run(std::size_t n) const;
  std::size_t take_free_run(std::size_t n);
  void assign_chunks(std::size_t first, int cls, std::size_t run);
  void release_chunks(std::size_t first, std::size_t run);
  void mark(std::size_t chunk, std::size_t slot, bool busy);
  bool busy(std::size_t chunk, std::size_t slot) const;
  void list_partial(std::size_t chunk);  // on its class's list of chunks with a free block
  void give_back(std::size_t chunk, std::size_t slot);
  void recover();
  bool recover_large(std::size_t& chunk, std::vector<bool>& covered);
  bool recover_small(std::size_t chunk, int cls);
};

}  // namespace dptree::pm
