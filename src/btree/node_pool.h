// One tree's share of a NodeChunks (chunk_memory.h): bump allocation under a lock (a tree
// allocates a node per split, so the lock is rarely contended), every chunk given back at once
// by the destructor. A node is never released on its own; the tree must not outlive its
// NodeChunks.
#pragma once

#include <cstddef>
#include <mutex>

#include "btree/chunk_memory.h"

namespace dptree::btree {

class PooledNodes {
 public:
  explicit PooledNodes(NodeChunks& src) : bump_(&src) {}
  PooledNodes(const PooledNodes&) = delete;
  PooledNodes& operator=(const PooledNodes&) = delete;

  void* take(std::size_t bytes) {
    std::lock_guard g(mu_);
    return bump_.take(bytes);
  }

 private:
  std::mutex mu_;
  BumpChunks bump_;
};

}  // namespace dptree::btree
