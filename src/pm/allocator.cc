// The §2.4 allocator (dptree/pm/allocator.h): size classes in chunks with a state word each,
// reserve / activate / free through a block's persistent owner word, and the rebuild on open.
#include "dptree/pm/allocator.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "pm/layout.h"

namespace dptree::pm {

namespace {

constexpr int kClasses = 11;                // 64 B << 0 .. 64 B << 10 = 64 KiB
constexpr std::size_t kInlineLimit = 4096;  // smaller classes keep owner words in the chunk
constexpr std::size_t kNoRun = ~std::size_t{0};

constexpr std::size_t class_size(int c) {
  return Allocator::kMinBlock << c;
}

struct ClassLayout {
  std::size_t size = 0;
  std::size_t blocks = 0;  // blocks per chunk
  std::size_t first = 0;   // offset of block 0 in the chunk (after inline owner words)
  bool inline_owners = false;
};

constexpr ClassLayout compute_layout(int c) {
  ClassLayout l;
  l.size = class_size(c);
  if (l.size >= kInlineLimit) {
    l.blocks = Allocator::kChunkSize / l.size;  // <= 16 owners, kept in the chunk descriptor
    return l;
  }
  // Owner words at the front of the chunk, padded to the block size so blocks stay aligned.
  auto pad = [&](std::size_t n) { return (n * 8 + l.size - 1) / l.size * l.size; };
  std::size_t n = Allocator::kChunkSize / (l.size + 8);
  while (pad(n) + n * l.size > Allocator::kChunkSize) --n;
  l.blocks = n;
  l.first = pad(n);
  l.inline_owners = true;
  return l;
}

constexpr std::array<ClassLayout, kClasses> kLayouts = [] {
  std::array<ClassLayout, kClasses> a{};
  for (int c = 0; c < kClasses; ++c) a[c] = compute_layout(c);
  return a;
}();
static_assert(kLayouts[kClasses - 1].blocks == 1);
static_assert(kLayouts[6].blocks == 16 && kLayouts[6].blocks <= layout::kDescOwners);

int class_for(std::size_t size) {
  int c = 0;
  while (class_size(c) < size) ++c;
  return c;
}

// State word: class + 1 (0 is free), or kLargeClass / kContClass with the run length above.
std::uint64_t encode_state(int cls, std::size_t run) {
  int code = cls < kClasses ? cls + 1 : cls;
  return static_cast<std::uint64_t>(code) | (static_cast<std::uint64_t>(run) << 8);
}

}  // namespace

// Volatile view of a chunk, rebuilt on open.
struct Allocator::ChunkInfo {
  int cls = -1;            // -1 free, 0..10 size class, kLargeClass head, kContClass follower
  std::uint32_t run = 0;   // chunks in a large block (head only)
  std::uint32_t used = 0;  // live + reserved blocks
  std::vector<std::uint64_t> busy;  // bit per block: live or reserved
  bool in_partial = false;
};

std::size_t Allocator::block_size_for(std::size_t size) {
  if (size == 0) throw Error(Errc::invalid_argument, "allocation of 0 bytes: ask for at least 1");
  if (size <= kChunkSize) return class_size(class_for(size));
  return (size + kChunkSize - 1) / kChunkSize * kChunkSize;
}

Allocator::Allocator(Pool& pool, bool fresh) : pool_(pool) {
  auto* h = reinterpret_cast<const layout::PoolHeader*>(pool_.base());
  nchunks_ = h->nchunks;
  desc_off_ = h->desc_off;
  heap_off_ = h->heap_off;
  chunks_.resize(nchunks_);
  partial_.resize(kClasses);
  if (!fresh) recover();
}

Allocator::~Allocator() = default;

std::uint64_t* Allocator::state_word(std::size_t chunk) const {
  return &pool_.at<layout::ChunkDesc>(desc_off_)[chunk].state;
}

std::uint64_t* Allocator::owner_word(std::size_t chunk, std::size_t slot) const {
  int cls = chunks_[chunk].cls;
  if (cls < kClasses && kLayouts[cls].inline_owners)
    return pool_.at<std::uint64_t>(heap_off_ + chunk * kChunkSize) + slot;
  return &pool_.at<layout::ChunkDesc>(desc_off_)[chunk].owners[slot];
}

std::uint64_t Allocator::block_offset(std::size_t chunk, std::size_t slot) const {
  int cls = chunks_[chunk].cls;
  std::uint64_t base = heap_off_ + chunk * kChunkSize;
  if (cls >= kClasses) return base;
  return base + kLayouts[cls].first + slot * kLayouts[cls].size;
}

bool Allocator::locate(std::uint64_t block, std::size_t& chunk, std::size_t& slot) const {
  if (block < heap_off_ || block >= heap_off_ + nchunks_ * kChunkSize) return false;
  chunk = (block - heap_off_) / kChunkSize;
  std::uint64_t in = (block - heap_off_) % kChunkSize;
  int cls = chunks_[chunk].cls;
  if (cls == layout::kLargeClass) {
    slot = 0;
    return in == 0;
  }
  if (cls < 0 || cls >= kClasses) return false;
  const auto& l = kLayouts[cls];
  if (in < l.first || (in - l.first) % l.size != 0) return false;
  slot = (in - l.first) / l.size;
  return slot < l.blocks;
}

bool Allocator::owner_is_valid(std::uint64_t owner, std::uint64_t block) const {
  // owner > size - 8, not owner + 8 > size: a damaged owner near 2^64 must not wrap.
  if (owner == 0 || owner % 8 != 0 || owner > pool_.size() - 8) return false;
  return *pool_.at<std::uint64_t>(owner) == block;
}

void Allocator::check_dest(const std::uint64_t* dest, const char* op) const {
  if (!pool_.contains(dest, 8) || reinterpret_cast<std::uintptr_t>(dest) % 8 != 0)
    throw Error(Errc::invalid_argument,
                std::string(op) + ": the destination word is not an aligned word inside pool '" +
                    pool_.name() + "': pass the address of a persistent pointer in the pool");
  std::uint64_t off = pool_.offset_of(dest);
  if (dest != pool_.root_word() && off < heap_off_)
    throw Error(Errc::invalid_argument,
                std::string(op) +
                    ": the destination word lies in the pool's metadata: pass the "
                    "address of a persistent pointer in an allocated block");
}

void Allocator::mark(std::size_t chunk, std::size_t slot, bool busy) {
  auto& ci = chunks_[chunk];
  std::uint64_t bit = std::uint64_t{1} << (slot % 64);
  if (busy) {
    ci.busy[slot / 64] |= bit;
    ++ci.used;
  } else {
    ci.busy[slot / 64] &= ~bit;
    --ci.used;
  }
}

bool Allocator::busy(std::size_t chunk, std::size_t slot) const {
  return chunks_[chunk].busy[slot / 64] >> (slot % 64) & 1;
}

void Allocator::list_partial(std::size_t chunk) {
  auto& ci = chunks_[chunk];
  if (ci.in_partial) return;
  partial_[ci.cls].push_back(static_cast<std::uint32_t>(chunk));
  ci.in_partial = true;
}

// A freed or cancelled block: its chunk can hand it out again (a large block's run is freed).
void Allocator::give_back(std::size_t chunk, std::size_t slot) {
  mark(chunk, slot, false);
  if (chunks_[chunk].cls == layout::kLargeClass)
    release_chunks(chunk, chunks_[chunk].run);
  else
    list_partial(chunk);
}

std::size_t Allocator::find_free_run(std::size_t n) const {
  std::size_t len = 0;
  for (std::size_t i = 0; i < nchunks_; ++i) {
    len = chunks_[i].cls == -1 ? len + 1 : 0;
    if (len == n) return i + 1 - n;
  }
  return kNoRun;
}

// A run of n free chunks; empty chunks that still carry a class are given up first if needed.
std::size_t Allocator::take_free_run(std::size_t n) {
  std::size_t first = find_free_run(n);
  if (first != kNoRun) return first;
  bool released = false;
  for (std::size_t i = 0; i < nchunks_; ++i) {
    auto& ci = chunks_[i];
    if (ci.cls >= 0 && ci.cls < kClasses && ci.used == 0) {
      std::erase(partial_[ci.cls], static_cast<std::uint32_t>(i));
      release_chunks(i, 1);
      released = true;
    }
  }
  if (released) first = find_free_run(n);
  if (first == kNoRun)
    throw Error(Errc::pool_full, "pool '" + pool_.name() + "' is full: no free block of " +
                                     std::to_string(n * kChunkSize) +
                                     " bytes; create a larger pool");
  return first;
}

// Gives chunks [first, first + run) a class. The owner words the class will use are zeroed and
// made durable before the new state word, and the state word before any block is handed out:
// recovery reads owner words through the durable state, so it must never see a state that
// makes old user data look like owners.
void Allocator::assign_chunks(std::size_t first, int cls, std::size_t run) {
  auto* desc = pool_.at<layout::ChunkDesc>(desc_off_);
  if (cls < kClasses && kLayouts[cls].inline_owners) {
    auto* owners = pool_.at<std::byte>(heap_off_ + first * kChunkSize);
    fill_bytes(owners, 0, kLayouts[cls].blocks * 8);
    flush(owners, kLayouts[cls].blocks * 8);
  } else {
    fill_bytes(desc[first].owners, 0, sizeof desc[first].owners);
    flush(desc[first].owners, sizeof desc[first].owners);
  }
  fence();
  for (std::size_t i = 0; i < run; ++i) {
    int c = cls == layout::kLargeClass && i > 0 ? layout::kContClass : cls;
    store(&desc[first + i].state, encode_state(c, c == layout::kLargeClass ? run : 0));
    flush(&desc[first + i].state, 8);
    chunks_[first + i] =
        ChunkInfo{c, static_cast<std::uint32_t>(c == layout::kLargeClass ? run : 0), 0, {}, false};
  }
  fence();
  std::size_t blocks = cls < kClasses ? kLayouts[cls].blocks : 1;
  chunks_[first].busy.assign((blocks + 63) / 64, 0);
  used_chunks_ += run;
  peak_used_chunks_ = std::max(peak_used_chunks_, used_chunks_);
}

// Back to free. No fence: a stale durable state is harmless because the owner words it
// would read are already clear (or stale, which recovery tells by *owner != block), and
// assign_chunks makes the next state durable before reuse.
void Allocator::release_chunks(std::size_t first, std::size_t run) {
  auto* desc = pool_.at<layout::ChunkDesc>(desc_off_);
  for (std::size_t i = first; i < first + run; ++i) {
    store(&desc[i].state, layout::kStateFree);
    flush(&desc[i].state, 8);
    chunks_[i] = ChunkInfo{};
  }
  used_chunks_ -= run;
}

std::uint64_t Allocator::reserve(std::size_t size) {
  CategoryScope cat(Category::alloc);
  std::size_t bsize = block_size_for(size);
  std::lock_guard g(mu_);
  if (bsize > kChunkSize) {
    std::size_t run = bsize / kChunkSize;
    std::size_t first = take_free_run(run);
    assign_chunks(first, layout::kLargeClass, run);
    mark(first, 0, true);
    std::uint64_t off = block_offset(first, 0);
    reserved_.insert(off);
    return off;
  }
  int cls = class_for(size);
  if (partial_[cls].empty()) {
    std::size_t c = take_free_run(1);
    assign_chunks(c, cls, 1);
    list_partial(c);
  }
  std::size_t c = partial_[cls].back();
  auto& ci = chunks_[c];
  std::size_t slot = 0;
  for (std::size_t w = 0; w < ci.busy.size(); ++w) {
    if (~ci.busy[w] != 0) {
      slot = w * 64 + static_cast<std::size_t>(std::countr_one(ci.busy[w]));
      break;
    }
  }
  mark(c, slot, true);
  if (ci.used == kLayouts[cls].blocks) {
    partial_[cls].pop_back();
    ci.in_partial = false;
  }
  std::uint64_t off = block_offset(c, slot);
  reserved_.insert(off);
  return off;
}

void Allocator::activate(std::uint64_t* dest, std::uint64_t block) {
  CategoryScope cat(Category::alloc);
  check_dest(dest, "activate");
  std::lock_guard g(mu_);
  std::size_t chunk = 0, slot = 0;
  if (!reserved_.contains(block) || !locate(block, chunk, slot))
    throw Error(Errc::invalid_argument, "activate: block " + std::to_string(block) +
                                            " is not a reservation of pool '" + pool_.name() +
                                            "': activate what reserve() returned, once");
  if (*dest != 0)
    throw Error(Errc::invalid_argument, "activate: the destination word already holds block " +
                                            std::to_string(*dest) +
                                            ": free it first, or activate into an empty pointer");
  auto dest_off = pool_.offset_of(dest);
  if (dest_off >= block && dest_off < block + block_size(block))
    throw Error(Errc::invalid_argument,
                "activate: the destination word lies inside the block "
                "itself: store the pointer outside the block");
  // Owner first: once *dest = block is durable, the block must be known to be owned by dest.
  std::uint64_t* owner = owner_word(chunk, slot);
  store(owner, dest_off);
  flush(owner, 8);
  fence();
  store(dest, block);  // the commit point: one 8-byte failure-atomic store
  flush(dest, 8);
  fence();
  reserved_.erase(block);
}

void Allocator::cancel(std::uint64_t block) {
  std::lock_guard g(mu_);
  std::size_t chunk = 0, slot = 0;
  if (!reserved_.erase(block) || !locate(block, chunk, slot))
    throw Error(Errc::invalid_argument, "cancel: block " + std::to_string(block) +
                                            " is not a reservation: cancel only what reserve() "
                                            "returned and was not activated");
  give_back(chunk, slot);
}

void Allocator::free(std::uint64_t* dest) {
  CategoryScope cat(Category::alloc);
  check_dest(dest, "free");
  std::lock_guard g(mu_);
  std::uint64_t block = *dest;
  if (block == 0) return;  // freed before (possibly before a crash): nothing to do
  std::size_t chunk = 0, slot = 0;
  if (!locate(block, chunk, slot) || reserved_.contains(block) || !busy(chunk, slot))
    throw Error(Errc::corrupt, "free: the word at offset " + std::to_string(pool_.offset_of(dest)) +
                                   " points to " + std::to_string(block) +
                                   ", which is not an allocated block of pool '" + pool_.name() +
                                   "'");
  std::uint64_t* owner = owner_word(chunk, slot);
  if (*owner != pool_.offset_of(dest))
    throw Error(Errc::corrupt, "free: block " + std::to_string(block) +
                                   " is not owned by the word at offset " +
                                   std::to_string(pool_.offset_of(dest)) +
                                   ": free through the pointer it was activated into");
  store(dest, 0);  // the commit point
  flush(dest, 8);
  fence();
  // The owner word is stale now (*owner != block); clear it without a fence of its own. The
  // next fence of this thread makes it durable, and recovery clears it if a crash comes first.
  store(owner, 0);
  flush(owner, 8);
  give_back(chunk, slot);
}

std::size_t Allocator::block_size(std::uint64_t block) const {
  std::size_t chunk = 0, slot = 0;
  if (!locate(block, chunk, slot)) return 0;
  int cls = chunks_[chunk].cls;
  return cls == layout::kLargeClass ? chunks_[chunk].run * kChunkSize : kLayouts[cls].size;
}

bool Allocator::is_live(std::uint64_t block) const {
  std::lock_guard g(mu_);
  std::size_t chunk = 0, slot = 0;
  return locate(block, chunk, slot) && !reserved_.contains(block) && busy(chunk, slot);
}

std::uint64_t Allocator::owner_of(std::uint64_t block) const {
  std::lock_guard g(mu_);
  std::size_t chunk = 0, slot = 0;
  if (!locate(block, chunk, slot) || reserved_.contains(block) || !busy(chunk, slot)) return 0;
  return *owner_word(chunk, slot);
}

void Allocator::owners_of(std::span<const std::uint64_t> blocks, std::span<Owned> out) const {
  std::lock_guard g(mu_);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    std::size_t chunk = 0, slot = 0;
    const std::uint64_t b = blocks[i];
    if (!locate(b, chunk, slot) || reserved_.contains(b) || !busy(chunk, slot)) {
      out[i] = {};
      continue;
    }
    const int cls = chunks_[chunk].cls;
    out[i] = {*owner_word(chunk, slot),
              cls == layout::kLargeClass ? chunks_[chunk].run * kChunkSize : kLayouts[cls].size};
  }
}

std::uint64_t Allocator::block_containing(std::uint64_t off) const {
  std::lock_guard g(mu_);
  if (off < heap_off_ || off >= heap_off_ + nchunks_ * kChunkSize) return 0;
  std::size_t chunk = (off - heap_off_) / kChunkSize;
  while (chunk > 0 && chunks_[chunk].cls == layout::kContClass) --chunk;
  const int cls = chunks_[chunk].cls;
  std::size_t slot = 0;
  if (cls == layout::kLargeClass) {
    if (off >= block_offset(chunk, 0) + chunks_[chunk].run * kChunkSize) return 0;
  } else {
    if (cls < 0 || cls >= kClasses) return 0;
    const std::uint64_t in = off - heap_off_ - chunk * kChunkSize;
    const auto& l = kLayouts[cls];
    if (in < l.first) return 0;
    slot = (in - l.first) / l.size;
    if (slot >= l.blocks) return 0;
  }
  const std::uint64_t block = block_offset(chunk, slot);
  if (reserved_.contains(block) || !busy(chunk, slot)) return 0;
  return block;
}

void Allocator::for_each_live_block(
    const std::function<void(std::uint64_t, std::size_t)>& fn) const {
  std::lock_guard g(mu_);
  for (std::size_t c = 0; c < nchunks_; ++c) {
    const auto& ci = chunks_[c];
    if (ci.used == 0) continue;
    if (ci.cls == layout::kLargeClass) {
      std::uint64_t off = block_offset(c, 0);
      if (!reserved_.contains(off)) fn(off, ci.run * kChunkSize);
      continue;
    }
    if (ci.cls < 0 || ci.cls >= kClasses) continue;
    for (std::size_t s = 0; s < kLayouts[ci.cls].blocks; ++s) {
      if (!busy(c, s)) continue;
      std::uint64_t off = block_offset(c, s);
      if (!reserved_.contains(off)) fn(off, kLayouts[ci.cls].size);
    }
  }
}

std::size_t Allocator::peak_used_bytes() const {
  std::lock_guard g(mu_);
  return peak_used_chunks_ * kChunkSize;
}

Allocator::Stats Allocator::stats() const {
  Stats s;
  s.capacity_bytes = nchunks_ * kChunkSize;
  s.total_chunks = nchunks_;
  {
    std::lock_guard g(mu_);
    for (const auto& ci : chunks_) s.used_chunks += ci.cls != -1;
    s.peak_used_chunks = std::max(peak_used_chunks_, s.used_chunks);
    s.reserved_blocks = reserved_.size();
  }
  for_each_live_block([&](std::uint64_t, std::size_t size) {
    ++s.live_blocks;
    s.live_bytes += size;
  });
  return s;
}

// Rebuilds the volatile state from the chunk states and owner words (§2.4: after any crash,
// no leaked block and no double free). A block is live iff its owner word points to a word
// that holds the block's offset. Stale owners and chunks of dead large blocks are cleared.
void Allocator::recover() {
  CategoryScope cat(Category::alloc);
  auto* desc = pool_.at<layout::ChunkDesc>(desc_off_);
  bool wrote = false;
  std::vector<bool> covered(nchunks_, false);  // followers of a live large block
  for (std::size_t c = 0; c < nchunks_; ++c) {
    std::uint64_t st = desc[c].state;
    int code = static_cast<int>(st & 0xff);
    if (code == layout::kContClass) {
      if (covered[c]) continue;
      code = 0;  // follower of a large block that is not live: free
    }
    if (code == 0) {
      if (st != layout::kStateFree) {
        store(&desc[c].state, layout::kStateFree);
        flush(&desc[c].state, 8);
        wrote = true;
      }
      continue;
    }
    if (code == layout::kLargeClass) {
      wrote |= recover_large(c, covered);
      continue;
    }
    if (code < 1 || code > kClasses)
      throw Error(Errc::corrupt, "pool '" + pool_.name() + "': chunk " + std::to_string(c) +
                                     " has unknown state " + std::to_string(st) +
                                     ": the pool is damaged");
    wrote |= recover_small(c, code - 1);
  }
  if (wrote) fence();
  used_chunks_ = static_cast<std::size_t>(std::count_if(
      chunks_.begin(), chunks_.end(), [](const ChunkInfo& ci) { return ci.cls != -1; }));
  peak_used_chunks_ = used_chunks_;
}

// The large block starting at chunk c: live (its followers covered, c moved to its last
// chunk) or, with a stale owner, released. Returns whether it wrote to PM.
bool Allocator::recover_large(std::size_t& c, std::vector<bool>& covered) {
  auto* desc = pool_.at<layout::ChunkDesc>(desc_off_);
  const std::size_t run = desc[c].state >> 8;
  if (run == 0 || c + run > nchunks_)
    throw Error(Errc::corrupt, "pool '" + pool_.name() + "': chunk " + std::to_string(c) +
                                   " claims a run of " + std::to_string(run) +
                                   " chunks past the heap: the pool is damaged");
  chunks_[c] = ChunkInfo{layout::kLargeClass, static_cast<std::uint32_t>(run), 0, {0}, false};
  std::uint64_t* owner = &desc[c].owners[0];
  if (owner_is_valid(*owner, block_offset(c, 0))) {
    mark(c, 0, true);
    for (std::size_t i = 1; i < run; ++i) {
      covered[c + i] = true;
      chunks_[c + i] = ChunkInfo{layout::kContClass, 0, 0, {}, false};
    }
    c += run - 1;
    return false;
  }
  if (*owner != 0) {
    store(owner, 0);
    flush(owner, 8);
  }
  release_chunks(c, 1);  // followers are freed when reached: not covered
  return true;
}

// Chunk c of size class cls: its blocks with a valid owner are live, the other owners are
// cleared. Returns whether it wrote to PM.
bool Allocator::recover_small(std::size_t c, int cls) {
  const auto& l = kLayouts[cls];
  bool wrote = false;
  chunks_[c] = ChunkInfo{cls, 0, 0, std::vector<std::uint64_t>((l.blocks + 63) / 64, 0), false};
  for (std::size_t s = 0; s < l.blocks; ++s) {
    std::uint64_t* owner = owner_word(c, s);
    if (*owner == 0) continue;
    if (owner_is_valid(*owner, block_offset(c, s))) {
      mark(c, s, true);
    } else {
      store(owner, 0);  // an activate that did not commit, or a free whose clear did not land
      flush(owner, 8);
      wrote = true;
    }
  }
  if (chunks_[c].used < l.blocks) list_partial(c);
  return wrote;
}

}  // namespace dptree::pm
