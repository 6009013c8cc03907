// The buffer tree of DPTree (§2.1): a small in-DRAM B+-tree of upserts. It is volatile; its
// durability comes from the PM log (plog.h), replayed into a new buffer tree on recovery.
// Values carry DPTree's tombstone bit untouched: the tree only stores and orders them.
//
// The tree is emptied by every merge and refilled to the same size, so its nodes come from an
// arena that clear() rewinds instead of freeing: no allocation, free or fresh page fault per
// node after the first merge cycle. Searches inside a node are branch-free.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "format/layout.h"

namespace dptree::detail {

// Fixed-size, 64-byte aligned node slots handed out from chunks; rewind() makes every slot
// free again and keeps the chunks.
class NodeArena {
 public:
  explicit NodeArena(std::size_t slot_bytes) : slot_((slot_bytes + 63) / 64 * 64) {}
  void* take() {
    if (used_ == chunks_.size() * kSlotsPerChunk)
      chunks_.emplace_back(new (std::align_val_t{64}) std::byte[slot_ * kSlotsPerChunk]);
    std::byte* p = chunks_[used_ / kSlotsPerChunk].get() + slot_ * (used_ % kSlotsPerChunk);
    ++used_;
    return p;
  }
  void rewind() { used_ = 0; }
  std::size_t held_bytes() const { return chunks_.size() * kSlotsPerChunk * slot_; }

 private:
  static constexpr std::size_t kSlotsPerChunk = 256;
  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::size_t slot_;
  std::size_t used_ = 0;
  std::vector<std::unique_ptr<std::byte[], AlignedDelete>> chunks_;
};

class BufferTree {
  static constexpr int kFan = 32;  // entries per node

  struct Node {
    bool leaf;
    int n = 0;
    std::uint64_t keys[kFan];
    explicit Node(bool l) : leaf(l) {}
  };
  struct Leaf : Node {
    std::uint64_t vals[kFan];
    Leaf* next = nullptr;
    Leaf() : Node(true) {}
  };
  struct Inner : Node {
    // keys[i] = smallest key of child i+1 (keys[0..n-2] used); n children.
    Node* child[kFan];
    Inner() : Node(false) {}
  };
  static_assert(std::is_trivially_destructible_v<Leaf> && std::is_trivially_destructible_v<Inner>,
                "the arena never runs destructors");

 public:
  BufferTree() = default;
  BufferTree(const BufferTree&) = delete;
  BufferTree& operator=(const BufferTree&) = delete;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t dram_bytes() const { return arena_.held_bytes(); }

  // Inserts or overwrites; returns true if the key was new.
  bool upsert(std::uint64_t k, std::uint64_t v) {
    if (!root_) root_ = new_leaf();
    std::uint64_t sep = 0;
    Node* split = nullptr;
    bool added = insert_rec(root_, k, v, sep, split);
    if (split) {
      auto* r = new_inner();
      r->child[0] = root_;
      r->child[1] = split;
      r->keys[0] = sep;
      r->n = 2;
      root_ = r;
    }
    if (added) ++size_;
    return added;
  }

  const std::uint64_t* find(std::uint64_t k) const {
    if (!root_) return nullptr;
    const Leaf* l = leaf_for(k);
    int i = lower(l, k);
    return i < l->n && l->keys[i] == k ? &l->vals[i] : nullptr;
  }
  // Ordered iteration from the first key >= k.
  class Iter {
   public:
    bool valid() const { return l_ != nullptr; }
    std::uint64_t key() const { return l_->keys[i_]; }
    std::uint64_t value() const { return l_->vals[i_]; }
    void next() {
      if (++i_ >= l_->n) {
        l_ = l_->next;
        i_ = 0;
        while (l_ && l_->n == 0) l_ = l_->next;
      }
    }

   private:
    friend class BufferTree;
    const Leaf* l_ = nullptr;
    int i_ = 0;
  };
  Iter lower_bound(std::uint64_t k) const {
    Iter it;
    if (!root_) return it;
    const Leaf* l = leaf_for(k);
    int i = lower(l, k);
    it.l_ = l;
    it.i_ = i;
    if (i >= l->n) {
      it.i_ = l->n - 1 < 0 ? 0 : l->n - 1;
      if (l->n == 0) {
        it.l_ = nullptr;
        return it;
      }
      it.next();
    }
    return it;
  }
  Iter begin() const { return lower_bound(0); }

  void clear() {
    arena_.rewind();
    root_ = nullptr;
    size_ = 0;
  }

 private:
  Leaf* new_leaf() { return new (arena_.take()) Leaf; }
  Inner* new_inner() { return new (arena_.take()) Inner; }
  // How many of keys[0..n) are below k (or, with `or_equal`, not above k): a binary search
  // whose steps are conditional moves, not branches the random keys would mispredict.
  template <bool or_equal>
  static int count_below(const std::uint64_t* keys, int n, std::uint64_t k) {
    // The search's steps each reach another of the node's key lines, one dependent miss
    // after another; loading them all first overlaps those misses.
    for (int b = 0; b < n; b += 8) __builtin_prefetch(keys + b);
    const std::uint64_t* base = keys;
    while (n > 1) {
      const int half = n / 2;
      base = (or_equal ? base[half - 1] <= k : base[half - 1] < k) ? base + half : base;
      n -= half;
    }
    return static_cast<int>(base - keys) + (n == 1 && (or_equal ? *base <= k : *base < k));
  }
  static int lower(const Node* nd, std::uint64_t k) {
    return count_below<false>(nd->keys, nd->n, k);
  }
  static int child_index(const Inner* in, std::uint64_t k) {
    // child i holds keys in [keys[i-1], keys[i]).
    return count_below<true>(in->keys, in->n - 1, k);
  }
  const Leaf* leaf_for(std::uint64_t k) const {
    const Node* nd = root_;
    while (!nd->leaf) {
      auto* in = static_cast<const Inner*>(nd);
      nd = in->child[child_index(in, k)];
    }
    return static_cast<const Leaf*>(nd);
  }

  bool insert_rec(Node* nd, std::uint64_t k, std::uint64_t v, std::uint64_t& sep, Node*& split) {
    split = nullptr;
    if (nd->leaf) {
      auto* l = static_cast<Leaf*>(nd);
      int i = lower(l, k);
      if (i < l->n && l->keys[i] == k) {
        l->vals[i] = v;
        return false;
      }
      if (l->n == kFan) {
        Leaf* r = split_leaf(l, sep);
        split = r;
        Leaf* t = k >= sep ? r : l;
        insert_at(t, lower(t, k), k, v);
        return true;
      }
      insert_at(l, i, k, v);
      return true;
    }
    auto* in = static_cast<Inner*>(nd);
    int ci = child_index(in, k);
    std::uint64_t csep = 0;
    Node* csplit = nullptr;
    bool added = insert_rec(in->child[ci], k, v, csep, csplit);
    if (!csplit) return added;
    if (in->n == kFan) {
      split = split_inner(in, ci, csep, csplit, sep);
      return added;
    }
    for (int i = in->n; i > ci + 1; --i) in->child[i] = in->child[i - 1];
    for (int i = in->n - 1; i > ci; --i) in->keys[i] = in->keys[i - 1];
    in->child[ci + 1] = csplit;
    in->keys[ci] = csep;
    ++in->n;
    return added;
  }
  // Moves the upper half of the full leaf l into a new leaf linked after it; sep = its first key.
  Leaf* split_leaf(Leaf* l, std::uint64_t& sep) {
    auto* r = new_leaf();
    int half = kFan / 2;
    r->n = kFan - half;
    std::copy(l->keys + half, l->keys + kFan, r->keys);
    std::copy(l->vals + half, l->vals + kFan, r->vals);
    l->n = half;
    r->next = l->next;
    l->next = r;
    sep = r->keys[0];
    return r;
  }
  // Splits the full inner node `in` whose child ci just split into (csep, csplit): the n + 1
  // children and n separators are gathered, `in` keeps the first half, a new node the rest;
  // sep = the separator between them.
  Inner* split_inner(Inner* in, int ci, std::uint64_t csep, Node* csplit, std::uint64_t& sep) {
    std::uint64_t keys[kFan];
    Node* ch[kFan + 1];
    int nk = 0, nc = 0;
    for (int i = 0; i < in->n; ++i) {
      ch[nc++] = in->child[i];
      if (i == ci) ch[nc++] = csplit;
    }
    for (int i = 0; i < in->n - 1; ++i) {
      if (i == ci) keys[nk++] = csep;
      keys[nk++] = in->keys[i];
    }
    if (ci == in->n - 1) keys[nk++] = csep;
    // nc = kFan + 1 children, nk = kFan separators.
    auto* r = new_inner();
    int left = nc / 2;
    in->n = left;
    for (int i = 0; i < left; ++i) in->child[i] = ch[i];
    for (int i = 0; i < left - 1; ++i) in->keys[i] = keys[i];
    sep = keys[left - 1];
    r->n = nc - left;
    for (int i = 0; i < r->n; ++i) r->child[i] = ch[left + i];
    for (int i = 0; i < r->n - 1; ++i) r->keys[i] = keys[left + i];
    return r;
  }
  static void insert_at(Leaf* l, int i, std::uint64_t k, std::uint64_t v) {
    for (int j = l->n; j > i; --j) {
      l->keys[j] = l->keys[j - 1];
      l->vals[j] = l->vals[j - 1];
    }
    l->keys[i] = k;
    l->vals[i] = v;
    ++l->n;
  }
  NodeArena arena_{std::max(sizeof(Leaf), sizeof(Inner))};
  Node* root_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace dptree::detail
