// A memory policy for btree.h's BPlusTree whose nodes come from 64 KiB chunks that
// release_all() rewinds instead of freeing. A tree emptied and refilled to about the same size
// again and again (DPTree's buffer, emptied by every merge) then allocates, frees and faults in
// no node memory after its first fill. release() of a single node keeps its bytes until
// release_all(), so the policy suits trees that only grow between clears.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace dptree::btree {

class ArenaNodes {
 public:
  template <class T>
  using ptr = T*;

  template <class T>
  T* make() {
    static_assert(std::is_trivially_destructible_v<T>, "release_all() runs no destructor");
    static_assert(alignof(T) <= kAlign);
    return new (take(sizeof(T))) T();
  }
  template <class T>
  void release(T*) {}
  // Every node made so far is free again; the chunks stay for the next fill.
  void release_all() {
    chunk_ = 0;
    used_ = 0;
  }
  static void will_write(const void*, std::size_t) {}
  std::size_t held_bytes() const { return chunks_.size() * kChunkBytes; }

 private:
  // Nodes start on cache lines, as a node's first line holds its header and first keys.
  static constexpr std::size_t kAlign = 64;
  static constexpr std::size_t kChunkBytes = std::size_t{64} << 10;
  void* take(std::size_t bytes) {
    bytes = (bytes + kAlign - 1) / kAlign * kAlign;
    if (used_ + bytes > kChunkBytes) {
      ++chunk_;
      used_ = 0;
    }
    if (chunk_ == chunks_.size())
      chunks_.emplace_back(new (std::align_val_t{kAlign}) std::byte[kChunkBytes]);
    std::byte* p = chunks_[chunk_].get() + used_;
    used_ += bytes;
    return p;
  }
  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{kAlign}); }
  };
  std::vector<std::unique_ptr<std::byte[], AlignedDelete>> chunks_;
  std::size_t chunk_ = 0;  // the chunk being filled
  std::size_t used_ = 0;   // its bytes handed out
};

}  // namespace dptree::btree
