// The inner nodes of uTree's array layer (DRAM): a B-link tree (Lehman and Yao, TODS 1981)
// from the low bound of every array leaf to the leaf, built for what the array layer asks of
// it. The paper's inner nodes are a volatile B+-tree over its array leaves ("fast query with
// the volatile b+-tree"), and every operation starts with this search, so it is made lean:
//  - the bottom nodes point at the array leaves themselves, which hold their own bounds and
//    a link to their right sibling (uTree's utree.cc), so no level of (key, leaf) pairs sits
//    between the inner nodes and the leaves;
//  - a reader takes no lock and checks each node's version once, after reading it: if the
//    node changed it reads the same node again, since a node's low bound never changes and a
//    split only moves its upper part to a right sibling that its `high` and `next` lead to
//    (no lock coupling, no restart from the root);
//  - keys are integers and unused separator slots hold ~0, so a node is searched by a fixed
//    number of halvings with conditional moves, its lines loaded ahead at once;
//  - writers, one array-leaf split in half a leaf's inserts, take one mutex for the whole
//    insert (DRAM only: no persist is ever done under it), which readers never touch;
//  - nodes come from chunks advised for huge pages (btree/chunk_memory.h): at 10M keys the
//    bottom nodes span 5 MB, more pages than the TLB maps.
//
// floor(k) returns the leaf with the greatest low bound <= k among those entered, or one to
// its left that a concurrent insert has not finished entering beside; never one right of k.
// Nodes are freed only by the destructor.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "baselines/slab/version_lock.h"
#include "btree/chunk_memory.h"

namespace dptree::baselines {

// Slots separator slots a node (a power of two; the last always holds ~0), as many children.
template <std::uint32_t Slots = 64>
class BasicRouteTree {
  static_assert(Slots >= 4 && (Slots & (Slots - 1)) == 0, "halvings need a power of two");

 public:
  using Key = std::uint64_t;
  static constexpr std::uint32_t kSlots = Slots;
  static constexpr std::uint32_t kMaxKeys = kSlots - 1;

  // A tree of one bottom node naming `first`, the leaf from key 0.
  explicit BasicRouteTree(std::uintptr_t first) {
    Node* n = make(0);
    n->child[0].store(first, std::memory_order_relaxed);
    root_.store(n, std::memory_order_release);
  }
  BasicRouteTree(const BasicRouteTree&) = delete;
  BasicRouteTree& operator=(const BasicRouteTree&) = delete;

  // The leaf whose range holds k, or one to its left (see above). No lock, no store.
  std::uintptr_t floor(Key k) const {
    const Node* n = root_.load(std::memory_order_acquire);
    for (;;) {
      prefetch_node(n);
      const Node* right;
      std::uintptr_t c;
      for (;;) {  // a node that changed while read is read again: its low bound stands
        std::uint64_t v = n->lock.read_begin();
        right = k >= ld(n->high) ? n->next.load(std::memory_order_acquire) : nullptr;
        c = n->child[slot(n, k)].load(std::memory_order_acquire);
        if (n->lock.read_valid(v)) break;
      }
      if (right)
        n = right;  // split meanwhile: k lies in its right sibling
      else if (n->level == 0)
        return c;
      else
        n = as_node(c);
    }
  }

  // Enters `leaf`, whose range starts at `low` (> 0, not yet entered), beside the leaf left
  // of it. Readers meanwhile find either the left leaf or `leaf`.
  void insert(Key low, std::uintptr_t leaf) {
    std::lock_guard g(write_mu_);
    Node* path[kMaxHeight];
    Node* n = root_.load(std::memory_order_relaxed);
    for (;;) {  // writers are serialised and finish their splits: no sibling to follow
      path[n->level] = n;
      if (n->level == 0) break;
      n = as_node(n->child[slot(n, low)].load(std::memory_order_relaxed));
    }
    Key sep = low;
    std::uintptr_t right = leaf;
    for (std::uint32_t level = 0;; ++level) {
      n = path[level];
      if (n->count() < kMaxKeys) return place(n, sep, right);
      Node* r = split(n, sep, right);  // sep becomes the separator between n and r
      right = reinterpret_cast<std::uintptr_t>(r);
      if (n == root_.load(std::memory_order_relaxed)) return grow(n, sep, r);
    }
  }

  // fn(low bound, leaf) for every leaf in key order; for a tree no thread changes.
  template <class F>
  void for_each_leaf(F&& fn) const {
    const Node* n = root_.load(std::memory_order_acquire);
    while (n->level) n = as_node(n->child[0].load());
    for (Key low = 0; n; low = n->high.load(), n = n->next.load())
      for (std::uint32_t i = 0; i <= n->count(); ++i)
        fn(i ? n->keys[i - 1].load() : low, n->child[i].load());
  }

  // Levels of inner nodes, their number and bytes.
  int height() const { return int(root_.load(std::memory_order_acquire)->level) + 1; }
  std::size_t nodes() const { return nodes_.load(std::memory_order_relaxed); }
  std::size_t dram_bytes() const { return nodes() * sizeof(Node); }

  // Structural invariants of a tree no thread changes: each level a chain of nodes whose
  // separators ascend strictly within each node's bounds (its low bound the high bound of
  // the node before it), ~0 in every unused slot, and the children of each level, in order,
  // the nodes of the level below, each starting where its parent's separator says. Returns
  // the problems found.
  std::vector<std::string> check() const {
    std::vector<std::string> out;
    std::vector<std::pair<const Node*, Key>> level{{root_.load(), 0}};  // nodes, low bounds
    if (level[0].first->next.load()) out.push_back("the root has a right sibling");
    while (out.empty()) {
      const Node* first = level.front().first;
      std::string at = "level " + std::to_string(first->level) + ": ";
      std::vector<std::pair<const Node*, Key>> below;
      Key low = 0;
      std::size_t i = 0;
      for (const Node* n = first; n && out.empty(); n = n->next.load(), ++i) {
        if (i >= level.size() || level[i].first != n || level[i].second != low)
          out.push_back(at + "its nodes are not their parents' children, in order");
        check_node(n, low, first->level, below, out);
        low = n->high.load();
      }
      if (i != level.size()) out.push_back(at + "a child is not on its level's chain");
      if (!first->level) break;
      level.swap(below);
    }
    return out;
  }

 private:
  // A node keeps at least two children (a split leaves half its keys and moves the rest
  // less one), so 32 levels hold more than 2^31 leaves.
  static constexpr std::uint32_t kMaxHeight = 32;

  // keys[i] is the low bound of child[i + 1]; child[0] starts at the node's own low bound.
  // The header fills the first line, so the keys start on a line of their own (8 lines of
  // keys and 8 of children at 64 slots).
  struct alignas(64) Node {
    explicit Node(std::uint32_t l) : level(l) {
      for (auto& k : keys) k.store(~Key{0}, std::memory_order_relaxed);
    }
    VersionLock lock;
    std::atomic<std::uint32_t> n{0};  // separators used
    const std::uint32_t level;        // 0: the children are array leaves
    std::atomic<Key> high{~Key{0}};   // keys from here on are right of this node
    std::atomic<Node*> next{nullptr};
    std::atomic<Key> keys[kSlots];
    std::atomic<std::uintptr_t> child[kSlots];

    std::uint32_t count() const { return std::min(n.load(std::memory_order_acquire), kMaxKeys); }
  };
  static_assert(sizeof(Node) == 64 + 16 * kSlots);
  static_assert(std::is_trivially_destructible_v<Node>, "nodes go with their chunks");

  static Node* as_node(std::uintptr_t c) { return reinterpret_cast<Node*>(c); }
  static Key ld(const std::atomic<Key>& a) { return a.load(std::memory_order_acquire); }

  // One node of check(), from low bound `low`; appends its children and their low bounds.
  static void check_node(const Node* n, Key low, std::uint32_t level,
                         std::vector<std::pair<const Node*, Key>>& below,
                         std::vector<std::string>& out) {
    std::string at = "node from " + std::to_string(low) + " at level " + std::to_string(level);
    std::uint32_t c = n->n.load();
    Key high = n->high.load();
    if (c > kMaxKeys || n->level != level || low >= high || (!n->next.load() && high != ~Key{0}))
      return out.push_back(at + ": overfull, out of its level or its bounds disagree");
    for (std::uint32_t i = 0; i < kSlots; ++i) {
      Key s = n->keys[i].load(), before = i ? n->keys[i - 1].load() : low;
      if (i >= c ? s != ~Key{0} : s <= before || s >= high)
        out.push_back(at + ": separator " + std::to_string(i) + " out of order or bounds");
    }
    if (level)
      for (std::uint32_t i = 0; i <= c; ++i)
        below.emplace_back(as_node(n->child[i].load()), i ? n->keys[i - 1].load() : low);
  }

  // The child whose range holds k: the number of separators <= k. Unused slots hold ~0, so
  // log2(Slots) halvings over all slots need no branch on the keys; k = ~0 counts the unused
  // slots too, hence the bound by the count. A racing reader may see any count and keys; the
  // result stays below kSlots and is discarded by its version check.
  static std::uint32_t slot(const Node* n, Key k) {
    std::uint32_t i = 0;
#pragma GCC unroll 8
    for (std::uint32_t step = kSlots / 2; step; step /= 2)
      i += ld(n->keys[i + step - 1]) <= k ? step : 0;
    return std::min(i, n->count());
  }
  // Loads every line of n at once: the halvings and the child they pick then wait for one
  // overlapped miss, not one per line they reach (the prefetching B+-tree's whole-node
  // fetch). The child lines too: at 10M keys the bottom nodes (5 MB) miss the L2 cache.
  static void prefetch_node(const Node* n) {
    const char* p = reinterpret_cast<const char*>(n->keys);  // the header is read first
    for (std::size_t b = 0; b < sizeof(n->keys) + sizeof(n->child); b += 64)
      __builtin_prefetch(p + b);
  }

  // Adds separator sep with child c after it to n, which has room (the writer holds the
  // mutex; readers see the node locked meanwhile).
  void place(Node* n, Key sep, std::uintptr_t c) {
    std::uint32_t cnt = n->count(), pos = slot(n, sep);  // no prefetch: a writer's rare work
    std::lock_guard g(n->lock);
    for (std::uint32_t i = cnt; i > pos; --i) {
      n->keys[i].store(n->keys[i - 1].load(), std::memory_order_release);
      n->child[i + 1].store(n->child[i].load(), std::memory_order_release);
    }
    n->keys[pos].store(sep, std::memory_order_release);
    n->child[pos + 1].store(c, std::memory_order_release);
    n->n.store(cnt + 1, std::memory_order_release);
  }

  // Splits the full node n around the new entry (sep, c): the upper half moves to a new
  // right sibling, built before n lowers its high bound and links it. On return sep is the
  // separator between n and the sibling, which the caller enters one level up.
  Node* split(Node* n, Key& sep, std::uintptr_t c) {
    Key keys[kSlots];
    std::uintptr_t kids[kSlots + 1];
    std::uint32_t pos = slot(n, sep);
    for (std::uint32_t i = 0, j = 0; i <= kMaxKeys; ++i) {
      if (i == pos) {
        keys[i] = sep;
        kids[i + 1] = c;
        continue;
      }
      keys[i] = n->keys[j].load();
      kids[i + 1] = n->child[j + 1].load();
      ++j;
    }
    kids[0] = n->child[0].load();
    constexpr std::uint32_t half = kSlots / 2;  // of kSlots keys: half stay, one goes up
    Node* r = make(n->level);
    for (std::uint32_t i = half + 1; i < kSlots; ++i)
      r->keys[i - half - 1].store(keys[i], std::memory_order_relaxed);
    for (std::uint32_t i = half + 1; i <= kSlots; ++i)
      r->child[i - half - 1].store(kids[i], std::memory_order_relaxed);
    r->n.store(kSlots - half - 1, std::memory_order_relaxed);
    r->high.store(n->high.load(), std::memory_order_relaxed);
    r->next.store(n->next.load(), std::memory_order_relaxed);
    sep = keys[half];
    std::lock_guard g(n->lock);
    for (std::uint32_t i = 0; i < kSlots; ++i) {
      n->keys[i].store(i < half ? keys[i] : ~Key{0}, std::memory_order_release);
      if (i <= half) n->child[i].store(kids[i], std::memory_order_release);
    }
    n->n.store(half, std::memory_order_release);
    n->high.store(sep, std::memory_order_release);
    n->next.store(r, std::memory_order_release);
    return r;
  }

  // A new root over the old one, l, and its new right sibling r, split at sep.
  void grow(Node* l, Key sep, Node* r) {
    Node* root = make(l->level + 1);
    root->keys[0].store(sep, std::memory_order_relaxed);
    root->child[0].store(reinterpret_cast<std::uintptr_t>(l), std::memory_order_relaxed);
    root->child[1].store(reinterpret_cast<std::uintptr_t>(r), std::memory_order_relaxed);
    root->n.store(1, std::memory_order_relaxed);
    root_.store(root, std::memory_order_release);
  }

  // A new node (the writer holds the mutex, or the constructor runs).
  Node* make(std::uint32_t level) {
    nodes_.fetch_add(1, std::memory_order_relaxed);
    return new (memory_.take(sizeof(Node))) Node(level);
  }

  btree::BumpChunks memory_;  // every node, freed together
  std::atomic<Node*> root_;
  std::atomic<std::size_t> nodes_{0};
  std::mutex write_mu_;
};

using RouteTree = BasicRouteTree<>;

}  // namespace dptree::baselines
