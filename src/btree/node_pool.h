// Node memory for a family of concurrent trees that replace one another: 64 KiB chunks a tree
// takes while it grows and gives back when it is destroyed, for the next tree to refill. The
// concurrent DPTree builds a new Front every merge cycle and destroys the merged Middle
// (DPTree paper §3.2). From the heap, each Front's nodes were fresh pages whose first-touch
// faults fell on the writers; from a NodeChunks, a Front reuses the pages the last Middle
// faulted in (the two-thread insert p99.9: docs/cdptree.md, "Where the time goes").
#pragma once

#include <cstddef>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace dptree::btree {

class NodeChunks {
 public:
  static constexpr std::size_t kChunkBytes = std::size_t{64} << 10;
  static constexpr std::size_t kAlign = 64;  // nodes start on cache lines

  NodeChunks() = default;
  NodeChunks(const NodeChunks&) = delete;
  NodeChunks& operator=(const NodeChunks&) = delete;
  // Every tree that took chunks has given them back by now.
  ~NodeChunks() {
    for (std::byte* c : free_) ::operator delete[](c, std::align_val_t{kAlign});
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
    return new (std::align_val_t{kAlign}) std::byte[kChunkBytes];
  }
  void give(std::vector<std::byte*>& chunks) {
    std::lock_guard g(mu_);
    free_.insert(free_.end(), chunks.begin(), chunks.end());
    chunks.clear();
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

// One tree's share of a NodeChunks: bump allocation under a lock (a tree allocates a node per
// split, so the lock is rarely contended), every chunk given back at once by the destructor.
// A node is never released on its own; the tree must not outlive its NodeChunks.
class PooledNodes {
 public:
  explicit PooledNodes(NodeChunks& src) : src_(src) {}
  PooledNodes(const PooledNodes&) = delete;
  PooledNodes& operator=(const PooledNodes&) = delete;
  ~PooledNodes() { src_.give(mine_); }

  void* take(std::size_t bytes) {
    bytes = (bytes + NodeChunks::kAlign - 1) / NodeChunks::kAlign * NodeChunks::kAlign;
    std::lock_guard g(mu_);
    if (mine_.empty() || used_ + bytes > NodeChunks::kChunkBytes) {
      mine_.push_back(src_.take());
      used_ = 0;
    }
    void* p = mine_.back() + used_;
    used_ += bytes;
    return p;
  }

 private:
  NodeChunks& src_;
  std::mutex mu_;
  std::vector<std::byte*> mine_;
  std::size_t used_ = 0;
};

}  // namespace dptree::btree
