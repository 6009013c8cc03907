// Node memory in chunks, for trees that free their nodes all at once. A tree larger than the
// L2 cache waits on TLB misses as much as on cache misses: with 4 KiB pages a 24 MB tree spans
// 6,000 pages, three times what the second-level TLB maps. A chunk of 2 MiB is aligned and
// advised for a transparent huge page (MADV_HUGEPAGE: honoured where THP is `madvise` or
// `always`, a no-op elsewhere), so a large tree needs one TLB entry per 2 MiB. The chunks of a
// BumpChunks start at 64 KiB and double up to 2 MiB, so a tree of a few nodes holds no huge
// page. (At 10M keys LB+-Tree's lookups ran 6-23% faster: docs/architecture.md, "Node
// memory".)
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace dptree::btree {

inline constexpr std::size_t kSmallChunk = std::size_t{64} << 10;
inline constexpr std::size_t kHugeChunk = std::size_t{2} << 20;
inline constexpr std::size_t kNodeAlign = 64;  // nodes start on cache lines

// A chunk of `bytes`, a power of two from 64 KiB: up to 2 MiB from the heap, from 2 MiB a
// mapping of its own, aligned to 2 MiB and advised for huge pages.
inline std::byte* alloc_chunk(std::size_t bytes) {
  if (bytes < kHugeChunk) return new (std::align_val_t{kNodeAlign}) std::byte[bytes];
  // Map 2 MiB more than asked, then unmap the unaligned head and the tail beyond.
  void* m =
      mmap(nullptr, bytes + kHugeChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(m);
  const std::uintptr_t start = (base + kHugeChunk - 1) & ~(kHugeChunk - 1);
  if (start > base) munmap(m, start - base);
  munmap(reinterpret_cast<void*>(start + bytes), base + kHugeChunk - start);
  auto* p = reinterpret_cast<std::byte*>(start);
  madvise(p, bytes, MADV_HUGEPAGE);  // a hint: the chunk works with or without it
  return p;
}
inline void free_chunk(std::byte* p, std::size_t bytes) {
  if (bytes < kHugeChunk)
    ::operator delete[](p, std::align_val_t{kNodeAlign});
  else
    munmap(p, bytes);
}

// 2 MiB chunks shared by a family of trees that replace one another: a tree takes chunks while
// it grows and gives them back when it is destroyed, for the next tree to refill. The concurrent
// DPTree builds a new Front every merge cycle and destroys the merged Middle (DPTree paper
// §3.2): from the heap, each Front's nodes were fresh pages whose first-touch faults fell on the
// writers; from a NodeChunks, a Front reuses the pages the last Middle faulted in (the
// two-thread insert p99.9: docs/cdptree.md, "Where the time goes"). Thread-safe.
class NodeChunks {
 public:
  static constexpr std::size_t kChunkBytes = kHugeChunk;

  NodeChunks() = default;
  NodeChunks(const NodeChunks&) = delete;
  NodeChunks& operator=(const NodeChunks&) = delete;
  // Every tree that took chunks has given them back by now.
  ~NodeChunks() {
    for (std::byte* c : free_) free_chunk(c, kChunkBytes);
  }

  // A chunk, recycled when one is free; its bytes are whatever the last tree left there.
  std::byte* take() {
    {
      std::lock_guard g(mu_);
      if (!free_.empty()) {
        std::byte* c = free_.back();
        free_.pop_back();
        return c;
      }
    }
    return alloc_chunk(kChunkBytes);
  }
  void give(std::byte* c) {
    std::lock_guard g(mu_);
    free_.push_back(c);
  }
  // Bytes held for the next tree (not in any tree now).
  std::size_t spare_bytes() const {
    std::lock_guard g(mu_);
    return free_.size() * kChunkBytes;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::byte*> free_;
};

// Bump allocation over a list of chunks: from the heap, 64 KiB first and each chunk twice the
// last up to 2 MiB, or 2 MiB chunks from a NodeChunks. Nodes are never freed one by one:
// rewind() makes every byte free again and keeps the chunks; the destructor frees them or gives
// them back to their NodeChunks. Not thread-safe.
class BumpChunks {
 public:
  explicit BumpChunks(NodeChunks* source = nullptr) : source_(source) {}
  BumpChunks(const BumpChunks&) = delete;
  BumpChunks& operator=(const BumpChunks&) = delete;
  // Moves swap: the moved-from side frees what the target held (BPlusTree's move is a swap).
  BumpChunks(BumpChunks&& o) noexcept : source_(o.source_) { swap(o); }
  BumpChunks& operator=(BumpChunks&& o) noexcept {
    swap(o);
    return *this;
  }
  ~BumpChunks() {
    for (const Chunk& c : chunks_) {
      if (source_)
        source_->give(c.p);
      else
        free_chunk(c.p, c.bytes);
    }
  }

  // `bytes` rounded up to whole cache lines, starting on a line.
  void* take(std::size_t bytes) {
    bytes = (bytes + kNodeAlign - 1) / kNodeAlign * kNodeAlign;
    while (cur_ == chunks_.size() || used_ + bytes > chunks_[cur_].bytes) {
      if (cur_ < chunks_.size()) ++cur_;
      if (cur_ == chunks_.size()) chunks_.push_back(new_chunk(bytes));
      used_ = 0;
    }
    void* p = chunks_[cur_].p + used_;
    used_ += bytes;
    return p;
  }
  void rewind() {
    cur_ = 0;
    used_ = 0;
  }
  std::size_t held_bytes() const {
    std::size_t n = 0;
    for (const Chunk& c : chunks_) n += c.bytes;
    return n;
  }

 private:
  struct Chunk {
    std::byte* p;
    std::size_t bytes;
  };
  void swap(BumpChunks& o) noexcept {
    std::swap(source_, o.source_);
    std::swap(chunks_, o.chunks_);
    std::swap(cur_, o.cur_);
    std::swap(used_, o.used_);
  }
  Chunk new_chunk(std::size_t at_least) {
    if (source_ && at_least <= NodeChunks::kChunkBytes)
      return {source_->take(), NodeChunks::kChunkBytes};
    if (source_) throw std::bad_alloc();  // a node larger than a shared chunk
    std::size_t bytes =
        chunks_.empty() ? kSmallChunk : std::min(kHugeChunk, 2 * chunks_.back().bytes);
    bytes = std::max(bytes, std::bit_ceil(at_least));
    return {alloc_chunk(bytes), bytes};
  }

  NodeChunks* source_;
  std::vector<Chunk> chunks_;
  std::size_t cur_ = 0;   // the chunk being filled (chunks_.size(): none yet)
  std::size_t used_ = 0;  // its bytes handed out
};

}  // namespace dptree::btree
