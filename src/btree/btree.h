// A plain volatile B+-tree in DRAM: sorted nodes, doubly linked leaves for range scans, no
// persistence and no internal synchronisation (wrap it in a lock for concurrent use, as the
// registered `btree` index does). It is the benchmark's upper bound and the DRAM index that
// TIPS-style designs put on top of a PM layer, so it is a reusable template.
//
// Deletion frees a node as soon as it becomes empty and never merges half-empty siblings
// (the "free at empty" policy of many practical B-trees): under deletes nodes may be sparse,
// but no empty node is ever kept, and lookups stay O(log n) in the number of inserts.
//
// `Nodes` is the memory policy (HeapNodes by default: new/delete, raw pointers, no hooks).
// A policy supplies the node pointer type, node creation and release, and a store hook that
// the tree calls before it modifies any byte of a node or of the tree object itself; a policy
// with release_all() frees every node at once, and clear() then walks no node (ArenaNodes in
// node_arena.h: DPTree's buffer, emptied by every merge, reuses its nodes that way). TIPS
// (TIPS paper, "two simple guidelines for the conversion") puts the same tree in PM this way:
// its policy allocates nodes from the PM allocator, uses position-independent pointers, and
// undo-logs each address before it changes (src/tips/, docs/tips.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dptree::btree {

// The default memory policy: plain heap nodes and raw pointers; the hook does nothing.
struct HeapNodes {
  template <class T>
  using ptr = T*;
  template <class T>
  static T* make() {
    return new T();
  }
  template <class T>
  static void release(T* p) {
    delete p;
  }
  static void will_write(const void*, std::size_t) {}
};

// How a node is searched; each wins somewhere (measured with `dptree bench`):
//  - `prefetched` (the default) first loads every line of the node's keys, so the binary search
//    over them waits for one overlapped miss instead of one miss per line it reaches (the
//    prefetching B+-tree's whole-node fetch, which LB+-Tree's inner nodes use), then halves
//    with branches, which let the CPU run ahead on predicted steps: best on a tree larger than
//    the caches (the btree index: about 15% more lookups per second than `branch_free`).
//  - `branch_free` loads the node's lines too, then halves with conditional moves: best on a
//    smaller tree of random keys whose nodes are mostly cached (DPTree's buffer tree), where a
//    mispredicted branch costs more than a load. It needs arithmetic keys.
//  - `plain` halves with branches and loads nothing ahead: the fewest instructions, for a tree
//    searched on the way to a slower structure (FPTree's inner nodes over its PM leaves, whose
//    own probe dominates).
enum class NodeSearch { prefetched, branch_free, plain };

template <class K, class V, std::size_t LeafSlots = 64, std::size_t InnerSlots = 64,
          class Less = std::less<K>, class Nodes = HeapNodes,
          NodeSearch Search = NodeSearch::prefetched>
class BPlusTree {
  static_assert(LeafSlots >= 4 && InnerSlots >= 4, "nodes need room to split");
  static_assert(Search != NodeSearch::branch_free || std::is_arithmetic_v<K>,
                "a branch-free search compares keys with conditional moves");

  template <class T>
  using P = typename Nodes::template ptr<T>;

  struct Node {
    bool leaf;
    std::uint32_t n = 0;  // keys in the node
    explicit Node(bool is_leaf) : leaf(is_leaf) {}
  };
  struct Leaf : Node {
    Leaf() : Node(true) {}
    K keys[LeafSlots];
    V vals[LeafSlots];
    P<Leaf> prev = nullptr;
    P<Leaf> next = nullptr;
  };
  // child[i] holds keys < keys[i]; child[i + 1] holds keys >= keys[i].
  struct Inner : Node {
    Inner() : Node(false) {}
    K keys[InnerSlots];
    P<Node> child[InnerSlots + 1];
  };

  // The store hook (see the policy above): called before every modification.
  static void W(const void* p, std::size_t len) { Nodes::will_write(p, len); }
  template <class T>
  static void W1(const T& field) {
    Nodes::will_write(&field, sizeof(T));
  }
  void W_header() { W(this, sizeof(*this)); }

 public:
  // Forward iterator over (key, value) in ascending key order.
  class Iterator {
   public:
    Iterator() = default;
    bool valid() const { return leaf_ != nullptr; }
    const K& key() const { return leaf_->keys[pos_]; }
    const V& value() const { return leaf_->vals[pos_]; }
    V& value() { return leaf_->vals[pos_]; }
    Iterator& operator++() {
      if (++pos_ >= leaf_->n) {
        leaf_ = leaf_->next;
        pos_ = 0;
      }
      return *this;
    }

   private:
    friend class BPlusTree;
    Iterator(Leaf* l, std::uint32_t p) : leaf_(l), pos_(p) {
      if (leaf_ && pos_ >= leaf_->n) {  // past the end of this leaf: the next one's first key
        leaf_ = leaf_->next;
        pos_ = 0;
      }
    }
    Leaf* leaf_ = nullptr;
    std::uint32_t pos_ = 0;
  };

  static constexpr std::size_t kLeafSlots = LeafSlots;
  static constexpr std::size_t kInnerSlots = InnerSlots;
  static constexpr std::size_t kLeafBytes = sizeof(Leaf);
  static constexpr std::size_t kInnerBytes = sizeof(Inner);

  BPlusTree() = default;
  ~BPlusTree() { clear(); }
  BPlusTree(const BPlusTree&) = delete;
  BPlusTree& operator=(const BPlusTree&) = delete;
  BPlusTree(BPlusTree&& o) noexcept { swap(o); }
  BPlusTree& operator=(BPlusTree&& o) noexcept {
    if (this != &o) {
      clear();
      swap(o);
    }
    return *this;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t height() const { return height_; }
  std::size_t leaf_count() const { return leaves_; }
  std::size_t inner_count() const { return inners_; }
  const Nodes& nodes() const { return nodes_; }  // the memory policy (an arena's bytes held)
  std::size_t memory_bytes() const {
    return sizeof(*this) + leaves_ * sizeof(Leaf) + inners_ * sizeof(Inner);
  }

  // Lookups take K, or with a transparent Less (is_transparent) any key type it compares with
  // K, as std::map does: a std::string tree is searched by std::string_view, no copy made.
  template <class Q>
  static constexpr bool kLookupKey = std::is_same_v<Q, K> || requires {
    typename Less::is_transparent;
  };

  const V* find(const K& k) const { return find<K>(k); }
  template <class Q>
  requires kLookupKey<Q>
  const V* find(const Q& k) const {
    if (!root_) return nullptr;
    const Leaf* l = leaf_for(k);
    std::uint32_t i = lower(l, k);
    return i < l->n && equal(l->keys[i], k) ? &l->vals[i] : nullptr;
  }
  V* find(const K& k) { return const_cast<V*>(std::as_const(*this).find(k)); }
  template <class Q>
  requires kLookupKey<Q> V* find(const Q& k) {
    return const_cast<V*>(std::as_const(*this).find(k));
  }

  // The value of the greatest key <= k, or nullptr if every key is above k: a tree of range
  // starts (FPTree's inner nodes, keyed by each leaf's low key) routes k to its range this way.
  template <class Q = K>
  requires kLookupKey<Q>
  const V* find_floor(const Q& k) const {
    if (!root_) return nullptr;
    // One loop for every level (a leaf's keys <= k are counted as an inner node's are): small
    // enough to be inlined where it is called on every operation.
    const Node* n = root_;
    for (;;) {
      const K* keys =
          n->leaf ? static_cast<const Leaf*>(n)->keys : static_cast<const Inner*>(n)->keys;
      prefetch_keys(keys, n->n);
      const std::uint32_t i = count_before(keys, n->n, [&](const K& x) { return !less_(k, x); });
      if (!n->leaf) {
        n = static_cast<const Inner*>(n)->child[i];
        continue;
      }
      const Leaf* l = static_cast<const Leaf*>(n);
      if (i > 0) return &l->vals[i - 1];
      const Leaf* p = static_cast<const Leaf*>(l->prev);  // the floor ends the leaf before
      return p ? &p->vals[p->n - 1] : nullptr;
    }
  }

  // First entry with key >= k.
  Iterator lower_bound(const K& k) const { return lower_bound<K>(k); }
  template <class Q>
  requires kLookupKey<Q> Iterator lower_bound(const Q& k)
  const {
    if (!root_) return {};
    Leaf* l = leaf_for(k);
    return Iterator(l, lower(l, k));
  }
  Iterator begin() const { return Iterator(first_, 0); }

  // Adds (k, v) if k is absent; returns false and changes nothing if it is present.
  bool insert(const K& k, const V& v) { return put(k, v, false); }
  // Writes v under k whether k exists or not; returns true if k was new.
  bool insert_or_assign(const K& k, const V& v) { return put(k, v, true); }
  // The K a key k of a lookup type becomes when it is added (find_or_insert's default).
  struct MakeKey {
    template <class Q>
    K operator()(const Q& k) const {
      return K(k);
    }
  };
  // Finds k, or adds (k, v) when it is absent: returns k's value slot, valid until the tree
  // next changes, and whether k was added. A caller that decides from the old value what to
  // write searches once instead of twice, unless k's leaf is full and has to split. k may be
  // any type lookups take (a std::string_view for a std::string tree); the K stored is
  // make(k), made only when k is added (a key whose bytes the caller copies to memory of its
  // own only then).
  template <class Q, class Make = MakeKey>
  requires kLookupKey<Q> std::pair<V*, bool> find_or_insert(const Q& k, const V& v,
                                                            Make make = {}) {
    if (root_) {
      Leaf* l = leaf_for(k);
      const std::uint32_t i = lower(l, k);
      if (i < l->n && equal(l->keys[i], k)) return {&l->vals[i], false};
      if (l->n < LeafSlots) {
        W_header();
        ++size_;
        return {insert_at(l, i, make(k), v), true};
      }
    }
    const K key = make(k);
    put(key, v, false);
    return {find(key), true};
  }
  // Writes v under an existing k; returns false if k is absent.
  bool update(const K& k, const V& v) {
    V* p = find(k);
    if (!p) return false;
    W1(*p);
    *p = v;
    return true;
  }
  // Removes k; returns whether it was present.
  bool erase(const K& k) {
    if (!root_) return false;
    W_header();
    bool removed = false;
    if (erase_in(root_, k, removed)) {  // the root emptied
      free_node(root_);
      root_ = nullptr;
      first_ = nullptr;
      height_ = 0;
    }
    // An inner root left with one child is a useless level.
    while (root_ && !root_->leaf && root_->n == 0) {
      Inner* in = static_cast<Inner*>(static_cast<Node*>(root_));
      root_ = static_cast<Node*>(in->child[0]);
      nodes_.release(in);
      --inners_;
      --height_;
    }
    return removed;
  }

  // Replaces the contents with `sorted`, whose keys ascend strictly, built bottom-up with every
  // node full but the last of each level (a tree rebuilt from a sorted source, as FPTree's
  // recovery rebuilds its inner nodes, needs no splits).
  void assign_sorted(const std::vector<std::pair<K, V>>& sorted) {
    clear();
    if (sorted.empty()) return;
    W_header();
    std::vector<std::pair<K, Node*>> level;  // (lowest key below it, node) for the next level
    Leaf* prev = nullptr;
    for (std::size_t i = 0; i < sorted.size(); i += LeafSlots) {
      Leaf* l = nodes_.template make<Leaf>();
      ++leaves_;
      for (std::size_t j = i; j < std::min(sorted.size(), i + LeafSlots); ++j) {
        l->keys[l->n] = sorted[j].first;
        l->vals[l->n++] = sorted[j].second;
      }
      l->prev = prev;
      (prev ? prev->next : first_) = l;
      prev = l;
      level.emplace_back(l->keys[0], l);
    }
    size_ = sorted.size();
    for (height_ = 1; level.size() > 1; ++height_) {
      std::vector<std::pair<K, Node*>> up;
      for (std::size_t i = 0; i < level.size(); i += InnerSlots + 1) {
        Inner* in = nodes_.template make<Inner>();
        ++inners_;
        in->child[0] = level[i].second;
        for (std::size_t j = i + 1; j < std::min(level.size(), i + InnerSlots + 1); ++j) {
          in->keys[in->n] = std::move(level[j].first);
          in->child[++in->n] = level[j].second;
        }
        up.emplace_back(std::move(level[i].first), in);
      }
      level = std::move(up);
    }
    root_ = level[0].second;
  }

  void clear() {
    if constexpr (requires { nodes_.release_all(); })
      nodes_.release_all();
    else if (root_)
      free_subtree(root_);
    root_ = nullptr;
    first_ = nullptr;
    size_ = leaves_ = inners_ = height_ = 0;
  }

  // Calls fn(key) for every key the nodes hold, separators included (to count the heap bytes
  // of keys such as long std::strings).
  template <class Fn>
  void for_each_stored_key(Fn&& fn) const {
    if (root_) visit_keys(root_, fn);
  }

  // Calls fn(node address, node bytes) for every node (a PM policy checks for leaks with it).
  void for_each_node(const std::function<void(const void*, std::size_t)>& fn) const {
    if (root_) visit(root_, fn);
  }

  // Structural self-check: key order inside nodes and against separators, all leaves at one
  // depth, no empty node, the leaf chain in order both ways, the size. Empty result = sound.
  // For a tree in untrusted memory (a PM pool opened again): proves, before anything else
  // follows it, that every node pointer passes `node_ok(p, bytes)` (the caller's bounds and
  // ownership test), no node is reached twice, leaf flags are 0 or 1, counts fit the slots,
  // leaves sit at the tree's height and the leaf chain and counters match the tree. Returns
  // the first problem, empty when the tree is safe to use. Not for the hot path: once, at
  // open.
  std::string validate_untrusted(
      const std::function<bool(const void*, std::size_t)>& node_ok) const;  // btree_check.h
  std::vector<std::string> check() const;                                   // btree_check.h

 private:
  template <class Q>
  bool equal(const K& a, const Q& b) const {
    return !less_(a, b) && !less_(b, a);
  }
  // How many of keys[0..n) satisfy `before`, which holds for a prefix of them (see NodeSearch).
  template <class Before>
  static std::uint32_t count_before(const K* keys, std::uint32_t n, Before before) {
    if constexpr (Search == NodeSearch::branch_free) {
      const K* base = keys;
      while (n > 1) {
        const std::uint32_t half = n / 2;
        base = before(base[half - 1]) ? base + half : base;
        n -= half;
      }
      return static_cast<std::uint32_t>(base - keys) + (n == 1 && before(*base));
    } else {
      return static_cast<std::uint32_t>(std::partition_point(keys, keys + n, before) - keys);
    }
  }
  // Position of the first key of the leaf not below k.
  template <class Q>
  std::uint32_t lower(const Leaf* l, const Q& k) const {
    return count_before(l->keys, l->n, [&](const K& x) { return less_(x, k); });
  }
  // Child index for k: the number of separators <= k.
  template <class Q>
  std::uint32_t route(const Inner* in, const Q& k) const {
    return count_before(in->keys, in->n, [&](const K& x) { return !less_(k, x); });
  }
  // Loads every line of a node's keys ahead of its search (see NodeSearch).
  static void prefetch_keys(const K* keys, std::uint32_t n) { prefetch_bytes(keys, n * sizeof(K)); }
  static void prefetch_bytes(const void* at, std::size_t bytes) {
    if constexpr (Search != NodeSearch::plain) {
      const char* p = static_cast<const char*>(at);
      for (std::size_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
    }
  }
  template <class Q>
  Leaf* leaf_for(const Q& k) const {
    Node* n = root_;
    while (!n->leaf) {
      const Inner* in = static_cast<const Inner*>(n);
      prefetch_keys(in->keys, in->n);
      n = in->child[route(in, k)];
    }
    prefetch_keys(static_cast<Leaf*>(n)->keys, n->n);
    return static_cast<Leaf*>(n);
  }

  struct Split {
    K sep;
    Node* right;
  };

  bool put(const K& k, const V& v, bool assign) {
    W_header();
    if (!root_) {
      Leaf* l = nodes_.template make<Leaf>();
      ++leaves_;
      root_ = l;
      first_ = l;
      height_ = 1;
    }
    bool inserted = false;
    std::optional<Split> s = put_in(root_, k, v, assign, inserted);
    if (s) {  // the root split: grow a level
      Inner* in = nodes_.template make<Inner>();
      ++inners_;
      in->n = 1;
      in->keys[0] = s->sep;
      in->child[0] = static_cast<Node*>(root_);
      in->child[1] = s->right;
      root_ = in;
      ++height_;
    }
    if (inserted) ++size_;
    return inserted;
  }

  std::optional<Split> put_in(Node* n, const K& k, const V& v, bool assign, bool& inserted) {
    if (n->leaf) {
      Leaf* l = static_cast<Leaf*>(n);
      // The values' lines too: an insert shifts them, and their misses then overlap the keys'.
      prefetch_keys(l->keys, l->n);
      prefetch_bytes(l->vals, (l->n + 1) * sizeof(V));
      std::uint32_t i = lower(l, k);
      if (i < l->n && equal(l->keys[i], k)) {
        if (assign) {
          W1(l->vals[i]);
          l->vals[i] = v;
        }
        return std::nullopt;
      }
      inserted = true;
      if (l->n < LeafSlots) {
        insert_at(l, i, k, v);
        return std::nullopt;
      }
      return split_leaf(l, i, k, v);
    }
    Inner* in = static_cast<Inner*>(n);
    prefetch_keys(in->keys, in->n);
    const std::uint32_t c = route(in, k);
    std::optional<Split> s = put_in(in->child[c], k, v, assign, inserted);
    if (!s) return std::nullopt;
    if (in->n < InnerSlots) {
      insert_child(in, c, s->sep, s->right);
      return std::nullopt;
    }
    return split_inner(in, c, *s);
  }

  // A full leaf split in half, then (k, v) inserted at i into the half it belongs to.
  Split split_leaf(Leaf* l, std::uint32_t i, const K& k, const V& v) {
    Leaf* r = nodes_.template make<Leaf>();
    ++leaves_;
    const std::uint32_t half = l->n / 2;
    r->n = l->n - half;
    std::move(l->keys + half, l->keys + l->n, r->keys);
    std::move(l->vals + half, l->vals + l->n, r->vals);
    W1(l->n);
    l->n = half;
    r->next = static_cast<Leaf*>(l->next);
    r->prev = l;
    if (l->next) {
      W1(l->next->prev);
      l->next->prev = r;
    }
    W1(l->next);
    l->next = r;
    if (i <= half)
      insert_at(l, i, k, v);
    else
      insert_at(r, i - half, k, v);
    return Split{r->keys[0], r};
  }

  // A full inner node split around its middle separator, which moves up; then the child split
  // `s` of child c inserted into the half it belongs to.
  Split split_inner(Inner* in, std::uint32_t c, const Split& s) {
    Inner* r = nodes_.template make<Inner>();
    ++inners_;
    const std::uint32_t mid = in->n / 2;
    const K up = in->keys[mid];
    r->n = in->n - mid - 1;
    std::move(in->keys + mid + 1, in->keys + in->n, r->keys);
    std::copy(in->child + mid + 1, in->child + in->n + 1, r->child);
    W1(in->n);
    in->n = mid;
    if (c <= mid)
      insert_child(in, c, s.sep, s.right);
    else
      insert_child(r, c - mid - 1, s.sep, s.right);
    return Split{up, r};
  }

  // Returns the new entry's value slot.
  static V* insert_at(Leaf* l, std::uint32_t i, K k, const V& v) {
    W(l->keys + i, (l->n - i + 1) * sizeof(K));
    W(l->vals + i, (l->n - i + 1) * sizeof(V));
    W1(l->n);
    std::move_backward(l->keys + i, l->keys + l->n, l->keys + l->n + 1);
    std::move_backward(l->vals + i, l->vals + l->n, l->vals + l->n + 1);
    l->keys[i] = std::move(k);
    l->vals[i] = v;
    ++l->n;
    return &l->vals[i];
  }
  // After child c split into (child[c], right) at `sep`.
  static void insert_child(Inner* in, std::uint32_t c, const K& sep, Node* right) {
    W(in->keys + c, (in->n - c + 1) * sizeof(K));
    W(in->child + c + 1, (in->n - c + 1) * sizeof(in->child[0]));
    W1(in->n);
    std::move_backward(in->keys + c, in->keys + in->n, in->keys + in->n + 1);
    std::copy_backward(in->child + c + 1, in->child + in->n + 1, in->child + in->n + 2);
    in->keys[c] = sep;
    in->child[c + 1] = right;
    ++in->n;
  }

  // Returns true when `n` became empty (the caller frees and unlinks it).
  bool erase_in(Node* n, const K& k, bool& removed) {
    if (n->leaf) {
      Leaf* l = static_cast<Leaf*>(n);
      std::uint32_t i = lower(l, k);
      if (i >= l->n || !equal(l->keys[i], k)) return false;
      W(l->keys + i, (l->n - i) * sizeof(K));
      W(l->vals + i, (l->n - i) * sizeof(V));
      W1(l->n);
      std::move(l->keys + i + 1, l->keys + l->n, l->keys + i);
      std::move(l->vals + i + 1, l->vals + l->n, l->vals + i);
      --l->n;
      --size_;
      removed = true;
      return l->n == 0;
    }
    Inner* in = static_cast<Inner*>(n);
    const std::uint32_t c = route(in, k);
    if (!erase_in(in->child[c], k, removed)) return false;
    free_node(in->child[c]);
    if (in->n == 0) return true;  // that was the only child
    // Drop the child and one separator next to it: its neighbour takes over its key range.
    const std::uint32_t ki = c > 0 ? c - 1 : 0;
    W(in->keys + ki, (in->n - ki) * sizeof(K));
    W(in->child + c, (in->n + 1 - c) * sizeof(in->child[0]));
    W1(in->n);
    std::move(in->keys + ki + 1, in->keys + in->n, in->keys + ki);
    std::copy(in->child + c + 1, in->child + in->n + 1, in->child + c);
    --in->n;
    return false;
  }

  // Frees an empty node (unlinking a leaf from the chain).
  void free_node(Node* n) {
    if (n->leaf) {
      Leaf* l = static_cast<Leaf*>(n);
      if (l->prev) {
        W1(l->prev->next);
        l->prev->next = static_cast<Leaf*>(l->next);
      }
      if (l->next) {
        W1(l->next->prev);
        l->next->prev = static_cast<Leaf*>(l->prev);
      }
      if (first_ == l) first_ = static_cast<Leaf*>(l->next);
      nodes_.release(l);
      --leaves_;
    } else {
      nodes_.release(static_cast<Inner*>(n));
      --inners_;
    }
  }

  void free_subtree(Node* n) {
    if (n->leaf) {
      nodes_.release(static_cast<Leaf*>(n));
      return;
    }
    Inner* in = static_cast<Inner*>(n);
    for (std::uint32_t i = 0; i <= in->n; ++i) free_subtree(in->child[i]);
    nodes_.release(in);
  }

  static void visit(const Node* n, const std::function<void(const void*, std::size_t)>& fn) {
    if (n->leaf) {
      fn(n, sizeof(Leaf));
      return;
    }
    const Inner* in = static_cast<const Inner*>(n);
    fn(n, sizeof(Inner));
    for (std::uint32_t i = 0; i <= in->n; ++i) visit(in->child[i], fn);
  }

  template <class Fn>
  static void visit_keys(const Node* n, Fn& fn) {
    if (n->leaf) {
      for (std::uint32_t i = 0; i < n->n; ++i) fn(static_cast<const Leaf*>(n)->keys[i]);
      return;
    }
    const Inner* in = static_cast<const Inner*>(n);
    for (std::uint32_t i = 0; i < in->n; ++i) fn(in->keys[i]);
    for (std::uint32_t i = 0; i <= in->n; ++i) visit_keys(in->child[i], fn);
  }

  void check_node(const Node* n, const K* lo, const K* hi, std::size_t depth,
                  std::vector<const Leaf*>& leaves, std::size_t& count,
                  std::vector<std::string>& problems) const;  // btree_check.h

  void swap(BPlusTree& o) noexcept {
    std::swap(root_, o.root_);
    std::swap(first_, o.first_);
    std::swap(size_, o.size_);
    std::swap(leaves_, o.leaves_);
    std::swap(inners_, o.inners_);
    std::swap(height_, o.height_);
    std::swap(nodes_, o.nodes_);
  }

  P<Node> root_ = nullptr;
  P<Leaf> first_ = nullptr;
  std::size_t size_ = 0;
  std::size_t leaves_ = 0;
  std::size_t inners_ = 0;
  std::size_t height_ = 0;
  [[no_unique_address]] Less less_{};
  [[no_unique_address]] Nodes nodes_{};
};

}  // namespace dptree::btree

#include "btree/btree_check.h"  // NOLINT: the out-of-class checks, after the class
