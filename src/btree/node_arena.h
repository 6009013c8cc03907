// A memory policy for btree.h's BPlusTree whose nodes come from chunks (chunk_memory.h) that
// release_all() rewinds instead of freeing. A tree emptied and refilled to about the same size
// again and again (DPTree's buffer, emptied by every merge) then allocates, frees and faults in
// no node memory after its first fill. release() of a single node keeps its bytes until
// release_all(), so the policy suits trees that only grow between clears.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>

#include "btree/chunk_memory.h"

namespace dptree::btree {

class ArenaNodes {
 public:
  template <class T>
  using ptr = T*;

  template <class T>
  T* make() {
    static_assert(std::is_trivially_destructible_v<T>, "release_all() runs no destructor");
    static_assert(alignof(T) <= kNodeAlign);
    return new (bump_.take(sizeof(T))) T();
  }
  template <class T>
  void release(T*) {}
  // Every node made so far is free again; the chunks stay for the next fill.
  void release_all() { bump_.rewind(); }
  static void will_write(const void*, std::size_t) {}
  std::size_t held_bytes() const { return bump_.held_bytes(); }

 private:
  BumpChunks bump_;
};

}  // namespace dptree::btree
