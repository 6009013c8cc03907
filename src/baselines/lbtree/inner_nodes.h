// LB+-Tree's inner nodes (the paper's non-leaf nodes, §3): a volatile B+-tree of nodes whose
// entries are a key and the child whose range starts at that key, 16 bytes each as in the
// paper, over the PM leaves. A search loads a node's lines together and finds its child in the
// line of the key it stopped at, so each level costs one overlapped miss. The nodes are the
// paper's 256 bytes (15 keys): with 512-byte nodes, a level shorter at 10M keys, lookups ran
// at about half the speed (docs/indexes.md, LB+-Tree).
//
// A node: e[0].key is its number of keys n (at most 15), e[0].child the child of the range below
// e[1].key; e[i].child (1 <= i <= n) holds the keys from e[i].key up to e[i + 1].key. At the
// bottom level children are leaf offsets, above it node addresses. The tree maps the start of
// each leaf's key range to the leaf; the leftmost range starts below every key, so it has no
// key of its own (reset()). Inserts only: empty leaves keep their entry, as in the paper.
// Not thread-safe: LB+-Tree's inner-node lock guards it.
#pragma once

#include <array>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "btree/chunk_memory.h"
#include "dptree/index.h"

namespace dptree::baselines {

class LBInnerNodes {
  struct Node;
  // 16 levels of nodes with 8 children or more: 2^48 ranges, more leaves than a pool holds
  static constexpr std::size_t kMaxHeight = 16;

 public:
  static constexpr unsigned kMaxKeys = 15;

  // The nodes a descent passed, level 1 (the bottom) first: a leaf split inserts its separator
  // along them, as the paper's insert keeps its path (parray) for the split, with no second
  // descent.
  class Path {
    friend class LBInnerNodes;
    std::array<const Node*, kMaxHeight> node_;
  };

  // Empties the tree and makes `first` the child of every key.
  void reset(std::uint64_t first) {
    memory_.rewind();
    root_ = make();
    root_->e[0] = {0, first};
    height_ = 1;
  }

  // The child whose range holds k.
  std::uint64_t find(Key k) const {
    return descend(k, [](std::size_t, const Node*) {});
  }
  // The same, noting the nodes passed in `path`.
  std::uint64_t find(Key k, Path& path) const {
    return descend(k, [&](std::size_t level, const Node* n) { path.node_[level - 1] = n; });
  }

  // Starts a new range at k, held by child: false (and no change) if a range starts at k.
  bool insert(Key k, std::uint64_t child) {
    if (k == 0) return false;  // the leftmost range starts at 0
    Path path;
    const Node* n = root_;
    for (std::size_t level = height_;; --level) {
      path.node_[level - 1] = n;
      const unsigned s = floor_slot(*n, k);
      // A split moves a bottom node's first key up a level, so k may start a range there.
      if (s > 0 && n->e[s].key == k) return false;
      if (level == 1) break;
      n = node(n->e[s].child);
    }
    insert_along(path, k, child);
    return true;
  }

  // insert() for a key inside the range that `path`'s descent ended in, above its start (a leaf
  // split's separator, which no range starts at), with no change to the nodes since the descent.
  void insert_along(const Path& path, Key k, std::uint64_t child) {
    Entry up{k, child};
    for (std::size_t level = 1; level <= height_; ++level) {
      // Our own nodes, noted by a const descent.
      if (!add(*const_cast<Node*>(path.node_[level - 1]), up)) return;  // room: done
    }
    grow(up);  // the root split
  }

  std::size_t height() const { return height_; }
  std::size_t memory_bytes() const { return sizeof(*this) + memory_.held_bytes(); }

  // Calls f(start, child) for every bottom-level range in ascending order; the leftmost one's
  // start is 0.
  template <class F>
  void for_each(F&& f) const {
    if (root_) visit(*root_, height_, 0, f);
  }

  // Keys ascending within each node and inside the range its parent gives it, counts in
  // bounds: what a search relies on.
  std::vector<std::string> check() const {
    std::vector<std::string> problems;
    if (root_) check_node(*root_, height_, 0, ~Key{0}, problems);
    return problems;
  }

 private:
  struct Entry {
    Key key;
    std::uint64_t child;
  };
  struct alignas(64) Node {
    Entry e[kMaxKeys + 1];
  };
  static_assert(sizeof(Node) == 256);

  // Above the bottom level a child word holds a node's address: one entry is a key and its
  // child in 16 bytes, as in the paper.
  static const Node* node(std::uint64_t c) { return reinterpret_cast<const Node*>(c); }
  static std::uint64_t word(const Node* n) { return reinterpret_cast<std::uint64_t>(n); }
  // Walks from the root to k's child, calling note(level, node) at each node.
  template <class Note>
  std::uint64_t descend(Key k, Note&& note) const {
    const Node* n = root_;
    for (std::size_t level = height_;; --level) {
      note(level, n);
      const std::uint64_t c = n->e[floor_slot(*n, k)].child;
      if (level == 1) return c;
      n = node(c);
      prefetch(n);
    }
  }
  static void prefetch(const Node* n) {
    for (std::size_t line = 0; line < sizeof(Node) / 64; ++line)
      __builtin_prefetch(reinterpret_cast<const char*>(n) + 64 * line);
  }
  // The number of keys <= k, which is the entry of k's range. Halvings narrow it to eight keys,
  // then a scan stops at the first key above k: the paper's search, with branches. A count
  // without branches made the next node's address wait for every key of this one; with
  // branches the core follows its prediction to the next level (and the next lookup) while
  // this node's lines are still in flight, and lookups ran 1.5-1.7x faster at 10M keys.
  static unsigned floor_slot(const Node& n, Key k) {
    unsigned lo = 1, hi = static_cast<unsigned>(n.e[0].key);  // the answer is in [lo - 1, hi]
    while (hi >= lo + 7) {
      const unsigned mid = (lo + hi) / 2;
      if (n.e[mid].key == k) return mid;
      if (n.e[mid].key < k)
        lo = mid + 1;
      else
        hi = mid - 1;
    }
    // By pointer: an index would be widened and scaled again at every step.
    const Entry* e = &n.e[lo];
    const Entry* const last = &n.e[hi];
    while (e <= last && e->key <= k) ++e;
    return static_cast<unsigned>(e - n.e) - 1;
  }

  Node* make() { return new (memory_.take(sizeof(Node))) Node{}; }

  // Puts `up` in n. When n is full it splits: n keeps the lower half of the keys, a new node the
  // rest but its first key, which goes up with the new node in `up`; returns whether it split.
  bool add(Node& n, Entry& up) {
    const unsigned count = static_cast<unsigned>(n.e[0].key);
    std::array<Entry, kMaxKeys + 2> all;  // e[0] and the keys, up among them
    unsigned pos = 1;
    while (pos <= count && n.e[pos].key < up.key) ++pos;
    if (count < kMaxKeys) {
      for (unsigned i = count + 1; i > pos; --i) n.e[i] = n.e[i - 1];
      n.e[pos] = up;
      n.e[0].key = count + 1;
      return false;
    }
    for (unsigned i = 0, j = 0; i <= count + 1; ++i) all[i] = i == pos ? up : n.e[j++];
    constexpr unsigned kLeft = (kMaxKeys + 1) / 2;  // keys staying in n
    Node* right = make();
    right->e[0] = {kMaxKeys - kLeft, all[kLeft + 1].child};
    for (unsigned i = kLeft + 2; i <= kMaxKeys + 1; ++i) right->e[i - kLeft - 1] = all[i];
    for (unsigned i = 1; i <= kLeft; ++i) n.e[i] = all[i];
    n.e[0].key = kLeft;
    up = {all[kLeft + 1].key, word(right)};
    return true;
  }

  void grow(const Entry& up) {
    if (height_ == kMaxHeight) throw std::logic_error("LB+-Tree inner nodes: too many levels");
    Node* r = make();
    r->e[0] = {1, word(root_)};
    r->e[1] = up;
    root_ = r;
    ++height_;
  }

  template <class F>
  static void visit(const Node& n, std::size_t level, Key lo, F& f) {
    const unsigned count = static_cast<unsigned>(n.e[0].key);
    for (unsigned i = 0; i <= count; ++i) {
      const Key start = i == 0 ? lo : n.e[i].key;
      if (level == 1)
        f(start, n.e[i].child);
      else
        visit(*node(n.e[i].child), level - 1, start, f);
    }
  }

  // Checks the subtree of n, whose range is [lo, hi]: its keys lie above lo (the start of its
  // first child's range, named by its parent or, on the leftmost path, 0) and up to hi.
  static void check_node(const Node& n, std::size_t level, Key lo, Key hi,
                         std::vector<std::string>& problems) {
    if (problems.size() >= 20) return;
    const Key count = n.e[0].key;
    const std::string at = "node at level " + std::to_string(level);
    if (count > kMaxKeys) {
      problems.push_back(at + " holds " + std::to_string(count) + " keys");
      return;
    }
    for (unsigned i = 1; i <= count; ++i) {
      const Key k = n.e[i].key;
      if ((i > 1 && k <= n.e[i - 1].key) || k <= lo || k > hi)
        problems.push_back(at + ": key " + std::to_string(k) + " out of order or range");
    }
    if (level == 1) return;
    for (unsigned i = 0; i <= count; ++i) {
      const Key clo = i == 0 ? lo : n.e[i].key;
      const Key chi = i == count ? hi : n.e[i + 1].key - 1;
      check_node(*node(n.e[i].child), level - 1, clo, chi, problems);
    }
  }

  Node* root_ = nullptr;
  std::size_t height_ = 0;
  // The nodes, on huge pages once the tree passes 2 MiB: at 10M keys it is about 25 MB, and
  // with 4 KiB pages a lookup paid TLB misses on its lower levels.
  btree::BumpChunks memory_;
};

}  // namespace dptree::baselines
