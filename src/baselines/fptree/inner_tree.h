// FPTree's DRAM inner nodes (Oukid et al., SIGMOD 2016, §4): a B+-tree of separator keys whose
// bottom level points at the PM leaves. It is volatile: built bottom-up from the leaf list on
// open (§4.5, recovery) and grown by one separator per leaf split. No synchronisation of its
// own: FPTree's lock fallback protects it (readers shared, splits exclusive). K is the key type
// of the separators (Key, or std::string for the string form, found by std::string_view).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dptree/index.h"

namespace dptree::baselines {

template <class LeafRef, class K = Key, std::size_t Fanout = 64>
class InnerTree {
  static_assert(Fanout >= 4, "inner nodes need room to split");

 public:
  // keys[i] separates child[i] (keys below it) from child[i + 1] (keys at or above it).
  struct Node {
    bool bottom = true;  // children are leaves
    std::uint32_t n = 0;
    K keys[Fanout];
    void* child[Fanout + 1];
  };

  // Rebuilds from the leaves in key order, (low key, leaf) pairs; the first low key is the
  // smallest possible key, so every key has a leaf. Nodes are filled completely (a freshly
  // rebuilt tree, as the paper's recovery builds it).
  void build(const std::vector<std::pair<K, LeafRef*>>& leaves) {
    nodes_.clear();
    root_ = nullptr;
    height_ = 0;
    if (leaves.empty()) return;
    // One level at a time: (lowest key under it, child) for every child of the next level.
    std::vector<std::pair<K, void*>> level;
    level.reserve(leaves.size());
    for (const auto& [k, l] : leaves) level.emplace_back(k, l);
    bool bottom = true;
    do {
      std::vector<std::pair<K, void*>> up;
      for (std::size_t i = 0; i < level.size(); i += Fanout + 1) {
        Node* x = make(bottom);
        const std::size_t end = std::min(level.size(), i + Fanout + 1);
        x->child[0] = level[i].second;
        for (std::size_t j = i + 1; j < end; ++j) {
          x->keys[x->n] = std::move(level[j].first);
          x->child[++x->n] = level[j].second;
        }
        up.emplace_back(std::move(level[i].first), x);
      }
      level = std::move(up);
      bottom = false;
      ++height_;
    } while (level.size() > 1);
    root_ = static_cast<Node*>(level[0].second);
  }

  // The leaf whose range holds k.
  template <class Q>
  LeafRef* find(const Q& k) const {
    const Node* x = root_;
    for (;;) {
      void* c = x->child[slot(x, k)];
      if (x->bottom) return static_cast<LeafRef*>(c);
      x = static_cast<const Node*>(c);
    }
  }

  // A leaf split: `right` now holds the keys at or above `sep` of the leaf left of it.
  void insert(K sep, LeafRef* right) {
    std::vector<Node*> path;
    Node* x = root_;
    for (;;) {
      path.push_back(x);
      if (x->bottom) break;
      x = static_cast<Node*>(x->child[slot(x, sep)]);
    }
    K k = std::move(sep);
    void* c = right;
    for (std::size_t d = path.size(); d-- > 0;) {
      Node* node = path[d];
      if (node->n < Fanout) {
        put(node, k, c);
        return;
      }
      // Full: split around the middle key, which moves up with the new right node.
      Node* r = make(node->bottom);
      const std::uint32_t mid = node->n / 2;
      K up = node->keys[mid];
      r->n = node->n - mid - 1;
      std::move(node->keys + mid + 1, node->keys + node->n, r->keys);
      std::copy(node->child + mid + 1, node->child + node->n + 1, r->child);
      node->n = mid;
      Node* into = k < up ? node : r;  // before k is moved from
      put(into, std::move(k), c);
      k = std::move(up);
      c = r;
    }
    Node* top = make(false);  // the root split: one level more
    top->child[0] = root_;
    top->keys[0] = std::move(k);
    top->child[1] = c;
    top->n = 1;
    root_ = top;
    ++height_;
  }

  std::size_t nodes() const { return nodes_.size(); }
  std::size_t height() const { return height_; }
  // The nodes, and the separators' own heap bytes (a std::string longer than its inline buffer).
  std::size_t memory_bytes() const {
    std::size_t n = nodes_.size() * sizeof(Node);
    if constexpr (std::is_same_v<K, std::string>)
      for (const auto& x : nodes_)
        for (std::uint32_t i = 0; i < x->n; ++i) {
          const auto* in = reinterpret_cast<const char*>(&x->keys[i]);
          const char* d = x->keys[i].data();
          const std::less<const char*> lt;  // a total order also for unrelated pointers
          if (lt(d, in) || !lt(d, in + sizeof(K))) n += x->keys[i].capacity() + 1;
        }
    return n;
  }

  // Every (separator, right child) pair in key order, for check(): bottom level only.
  template <class Fn>
  void for_each_leaf(Fn&& fn) const {
    if (root_) visit(root_, fn);
  }

 private:
  template <class Q>
  static std::size_t slot(const Node* x, const Q& k) {
    return static_cast<std::size_t>(std::upper_bound(x->keys, x->keys + x->n, k) - x->keys);
  }
  static void put(Node* x, K k, void* c) {
    const std::size_t i = slot(x, k);
    std::move_backward(x->keys + i, x->keys + x->n, x->keys + x->n + 1);
    std::copy_backward(x->child + i + 1, x->child + x->n + 1, x->child + x->n + 2);
    x->keys[i] = std::move(k);
    x->child[i + 1] = c;
    ++x->n;
  }
  template <class Fn>
  void visit(const Node* x, Fn& fn) const {
    for (std::uint32_t i = 0; i <= x->n; ++i) {
      if (x->bottom)
        fn(static_cast<LeafRef*>(x->child[i]));
      else
        visit(static_cast<const Node*>(x->child[i]), fn);
    }
  }
  Node* make(bool bottom) {
    nodes_.push_back(std::make_unique<Node>());
    nodes_.back()->bottom = bottom;
    return nodes_.back().get();
  }

  std::vector<std::unique_ptr<Node>> nodes_;
  Node* root_ = nullptr;
  std::size_t height_ = 0;
};

}  // namespace dptree::baselines
