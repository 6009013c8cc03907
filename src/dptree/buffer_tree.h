// The buffer tree of DPTree (§2.1): a small in-DRAM B+-tree of upserts. It is volatile; its
// durability comes from the PM log (plog.h), replayed into a new buffer tree on recovery.
// Values carry DPTree's tombstone bit untouched: the tree only stores and orders them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "dptree/layout.h"

namespace dptree::detail {

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

 public:
  BufferTree() = default;
  ~BufferTree() { clear(); }
  BufferTree(const BufferTree&) = delete;
  BufferTree& operator=(const BufferTree&) = delete;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t dram_bytes() const { return nodes_ * sizeof(Leaf); }

  // Inserts or overwrites; returns true if the key was new.
  bool upsert(std::uint64_t k, std::uint64_t v) {
    if (!root_) {
      auto* l = new Leaf;
      ++nodes_;
      root_ = l;
    }
    std::uint64_t sep = 0;
    Node* split = nullptr;
    bool added = insert_rec(root_, k, v, sep, split);
    if (split) {
      auto* r = new Inner;
      ++nodes_;
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
    if (root_) destroy(root_);
    root_ = nullptr;
    size_ = 0;
    nodes_ = 0;
  }

 private:
  static int lower(const Node* nd, std::uint64_t k) {
    return static_cast<int>(std::lower_bound(nd->keys, nd->keys + nd->n, k) - nd->keys);
  }
  static int child_index(const Inner* in, std::uint64_t k) {
    // child i holds keys in [keys[i-1], keys[i]).
    return static_cast<int>(std::upper_bound(in->keys, in->keys + in->n - 1, k) - in->keys);
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
        auto* r = new Leaf;
        ++nodes_;
        int half = kFan / 2;
        r->n = kFan - half;
        std::copy(l->keys + half, l->keys + kFan, r->keys);
        std::copy(l->vals + half, l->vals + kFan, r->vals);
        l->n = half;
        r->next = l->next;
        l->next = r;
        sep = r->keys[0];
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
      // Split the inner node: gather n+1 children, keep half.
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
      auto* r = new Inner;
      ++nodes_;
      int left = nc / 2;
      in->n = left;
      for (int i = 0; i < left; ++i) in->child[i] = ch[i];
      for (int i = 0; i < left - 1; ++i) in->keys[i] = keys[i];
      sep = keys[left - 1];
      r->n = nc - left;
      for (int i = 0; i < r->n; ++i) r->child[i] = ch[left + i];
      for (int i = 0; i < r->n - 1; ++i) r->keys[i] = keys[left + i];
      split = r;
      return added;
    }
    for (int i = in->n; i > ci + 1; --i) in->child[i] = in->child[i - 1];
    for (int i = in->n - 1; i > ci; --i) in->keys[i] = in->keys[i - 1];
    in->child[ci + 1] = csplit;
    in->keys[ci] = csep;
    ++in->n;
    return added;
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
  void destroy(Node* nd) {
    if (nd->leaf) {
      delete static_cast<Leaf*>(nd);
      return;
    }
    auto* in = static_cast<Inner*>(nd);
    for (int i = 0; i < in->n; ++i) destroy(in->child[i]);
    delete in;
  }

  Node* root_ = nullptr;
  std::size_t size_ = 0;
  std::size_t nodes_ = 0;
};

}  // namespace dptree::detail
