// A concurrent volatile B+-tree synchronised by Optimistic Lock Coupling (OLC; Leis et al.,
// "The ART of Practical Synchronization", DaMoN 2016), the in-DRAM tree of the concurrent
// DPTree's buffer (DPTree paper §3.1) and, registered as `olc-btree`, the benchmark's
// scalable DRAM upper bound.
//
// Every node carries a version lock: bit 0 obsolete (unused: nodes are never retired while
// the tree lives), bit 1 locked, the rest a counter. Readers take no lock: they note the
// version, read, and restart from the root if the version changed. Writers lock-couple down:
// a full node on the path is split eagerly with its parent write-locked, then the operation
// restarts. Every field read optimistically is an atomic, stored with release and loaded with
// acquire (plain moves on x86), so a reader that saw a writer's store also sees its lock in
// the version check that follows (the seqlock pattern without a fence, which ThreadSanitizer
// cannot model); a reader's result counts only when that check finds the version unchanged.
//
// Deleting keys (erase) never merges nodes. Nodes are freed only by the destructor, so an
// optimistic reader can always dereference the pointer it read. They come from the heap, or
// from a NodeChunks (chunk_memory.h) when the tree is built on one: then the destructor hands
// their chunks on to the next tree instead of freeing each node.
//
// upsert_with(k, fn) calls fn while it holds the write lock of the leaf that holds or will
// hold k: the concurrent DPTree appends the log record and updates its bloom filter there, so
// the log order of a key equals its order in the tree (§3.1).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "btree/node_pool.h"

namespace dptree::btree {

// LeafSlots entries per leaf, InnerSlots separators (InnerSlots + 1 children) per inner node.
template <int LeafSlots = 64, int InnerSlots = 64>
class BasicOlcBTree {
  static_assert(LeafSlots >= 4 && InnerSlots >= 4, "nodes need room to split");

 public:
  using u64 = std::uint64_t;
  static constexpr int kLeafSlots = LeafSlots;
  static constexpr int kInnerSlots = InnerSlots;

  BasicOlcBTree() { root_.store(make<Leaf>(), std::memory_order_release); }
  explicit BasicOlcBTree(NodeChunks& chunks) : pooled_(std::make_unique<PooledNodes>(chunks)) {
    root_.store(make<Leaf>(), std::memory_order_release);
  }
  ~BasicOlcBTree() {
    if (!pooled_) destroy(root_.load(std::memory_order_acquire));
  }
  BasicOlcBTree(const BasicOlcBTree&) = delete;
  BasicOlcBTree& operator=(const BasicOlcBTree&) = delete;

  std::optional<u64> lookup(u64 k) const {
    for (;;) {
      bool restart = false;
      auto r = try_lookup(k, restart);
      if (!restart) return r;
    }
  }

  // Calls fn(const u64* current) under the write lock of k's leaf; current is null when k
  // is absent. If fn returns a value, k is set to it (inserted or overwritten). fn runs
  // exactly once; if it throws, the tree is unchanged and the exception propagates. Then,
  // still under the lock, before_unlock() runs (whether or not fn returned a value).
  // Returns whether k was inserted.
  template <class F, class G>
  bool upsert_with(u64 k, F&& fn, G&& before_unlock) {
    return at_key(k, [&](Leaf* leaf, int n, int pos, bool present) {
      u64 cur = present ? leaf->vals[pos].load(std::memory_order_acquire) : 0;
      // The shift of an insert stores to every value line from pos on: request them now,
      // so that their misses overlap fn's work (the concurrent DPTree's log persist).
      if (!present) leaf->prefetch_values(pos, n);
      std::optional<u64> v;
      try {
        v = fn(present ? &cur : nullptr);
      } catch (...) {
        leaf->unlock();  // fn threw (the DPTree's log ran out of PM): nothing changed
        throw;
      }
      bool inserted = false;
      if (v) {
        if (present) {
          leaf->vals[pos].store(*v, std::memory_order_release);
        } else {
          leaf->insert_at(pos, n, k, *v);
          inserted = true;
        }
      }
      before_unlock();
      leaf->unlock();
      return inserted;
    });
  }
  template <class F>
  bool upsert_with(u64 k, F&& fn) {
    return upsert_with(k, std::forward<F>(fn), [] {});
  }
  // Inserts or overwrites; returns whether k was new.
  bool upsert(u64 k, u64 v) {
    return upsert_with(k, [&](const u64*) { return std::optional<u64>(v); });
  }
  bool insert(u64 k, u64 v) {
    return upsert_with(k,
                       [&](const u64* cur) { return cur ? std::nullopt : std::optional<u64>(v); });
  }
  bool update(u64 k, u64 v) {
    bool found = false;
    upsert_with(k, [&](const u64* cur) {
      found = cur != nullptr;
      return cur ? std::optional<u64>(v) : std::nullopt;
    });
    return found;
  }
  // Removes k from its leaf (no node merge); returns whether it was present.
  bool erase(u64 k) {
    return at_key(k, [](Leaf* leaf, int n, int pos, bool present) {
      if (present) leaf->erase_at(pos, n);
      leaf->unlock();
      return present;
    });
  }

  // Calls fn(key, value) in key order for keys >= start until fn returns false. Each leaf is
  // copied under an optimistic read and validated before fn sees its entries.
  template <class F>
  void scan(u64 start, F&& fn) const {
    u64 from = start;
    std::pair<u64, u64> buf[kLeafSlots];
    for (;;) {
      // Descend to the leaf of `from` (a fresh descent after every restart).
      bool restart = false;
      const Leaf* leaf = nullptr;
      u64 v = 0;
      descend_read(from, leaf, v, restart);
      if (restart) continue;
      for (;;) {
        int n = std::min<int>(leaf->count.load(std::memory_order_acquire), kLeafSlots);
        int got = 0;
        for (int i = 0; i < n; ++i) {
          u64 key = leaf->keys[i].load(std::memory_order_acquire);
          if (key >= from) buf[got++] = {key, leaf->vals[i].load(std::memory_order_acquire)};
        }
        const Leaf* next = leaf->next.load(std::memory_order_acquire);
        if (!leaf->validate(v)) {
          restart = true;
          break;
        }
        for (int i = 0; i < got; ++i) {
          if (!fn(buf[i].first, buf[i].second)) return;
          if (buf[i].first == ~u64{0}) return;
          from = buf[i].first + 1;
        }
        if (!next) return;
        v = next->await_unlocked();
        leaf = next;
      }
    }
  }

  // Every entry in key order, for a tree no thread writes any more (the concurrent DPTree's
  // middle buffer, §3.2): plain traversal of the leaf list, no validation.
  template <class F>
  void for_each_frozen(F&& fn) const {
    const Node* nd = root_.load(std::memory_order_acquire);
    while (!nd->leaf) nd = static_cast<const Inner*>(nd)->child[0].load(std::memory_order_acquire);
    for (auto* l = static_cast<const Leaf*>(nd); l; l = l->next.load(std::memory_order_acquire)) {
      int n = l->count.load(std::memory_order_acquire);
      for (int i = 0; i < n; ++i)
        fn(l->keys[i].load(std::memory_order_acquire), l->vals[i].load(std::memory_order_acquire));
    }
  }
  // Entries (a full walk of the leaves; approximate while writers run).
  std::size_t size() const {
    std::size_t n = 0;
    scan(0, [&](u64, u64) {
      ++n;
      return true;
    });
    return n;
  }
  std::size_t node_count() const { return nodes_.load(std::memory_order_acquire); }
  std::size_t dram_bytes() const { return node_count() * sizeof(Leaf); }
  int height() const {
    int h = 1;
    const Node* nd = root_.load(std::memory_order_acquire);
    while (!nd->leaf) {
      nd = static_cast<const Inner*>(nd)->child[0].load(std::memory_order_acquire);
      ++h;
    }
    return h;
  }

  // Structural invariants of a quiescent tree: sorted keys, separators bounding their
  // subtrees, all leaves at one depth and linked in order. Returns the problems found.
  std::vector<std::string> check() const {
    std::vector<std::string> out;
    int leaf_depth = -1;
    const Leaf* prev_leaf = nullptr;
    const Leaf* first_leaf = nullptr;
    check_rec(root_.load(std::memory_order_acquire), 0, 0, ~u64{0}, true, leaf_depth, prev_leaf,
              first_leaf, out);
    std::size_t linked = 0;
    for (const Leaf* l = first_leaf; l && linked <= nodes_; l = l->next.load()) ++linked;
    if (linked > nodes_) out.push_back("leaf list has a cycle");
    return out;
  }

 private:
  // Write-locks k's leaf and calls f(leaf, count, k's position, whether k is there); f unlocks.
  // Forced inline: a call here on every write costs the concurrent DPTree about 1% of an
  // insert.
  template <class F>
  [[gnu::always_inline]] inline auto at_key(u64 k, F&& f) {
    for (;;) {
      Leaf* leaf = lock_leaf_for_write(k);
      if (!leaf) continue;
      int n = leaf->count.load(std::memory_order_acquire);
      int pos = leaf->lower(k, n);
      bool present = pos < n && leaf->keys[pos].load(std::memory_order_acquire) == k;
      return f(leaf, n, pos, present);
    }
  }

  struct Node {
    explicit Node(bool l) : leaf(l) {}
    const bool leaf;
    mutable std::atomic<u64> version{0};  // bit 1: locked; counter above (bit 0 unused)
    std::atomic<int> count{0};            // keys in the node

    u64 await_unlocked() const {
      u64 v = version.load(std::memory_order_acquire);
      while (v & 2) {
        std::this_thread::yield();
        v = version.load(std::memory_order_acquire);
      }
      return v;
    }
    // The reads since await_unlocked() saw a consistent node.
    bool validate(u64 v) const { return version.load(std::memory_order_acquire) == v; }
    bool try_upgrade(u64 v) const {
      return version.compare_exchange_strong(v, v + 2, std::memory_order_acquire);
    }
    void lock() const {
      for (;;) {
        u64 v = await_unlocked();
        if (try_upgrade(v)) return;
      }
    }
    // Only the holder changes a locked version (a locker's CAS fails on it without writing),
    // so a plain store unlocks: a locked add would also wait for the holder's last flush
    // (the concurrent DPTree's log append) to complete.
    void unlock() const {
      version.store(version.load(std::memory_order_relaxed) + 2, std::memory_order_release);
    }
  };
  // First position whose key >= k among keys[0, n). n is clamped by the caller to the
  // node's size: a racing reader may see any n; its result is discarded by validation, but
  // it must not read out of bounds.
  static int lower_bound_of(const std::atomic<u64>* keys, int n, u64 k) {
    int lo = 0, hi = std::max(n, 0);
    // The search reaches one key line after another, each a dependent miss: load them all
    // first so the misses overlap.
    for (int b = 0; b < hi; b += 8) __builtin_prefetch(keys + b);
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (keys[mid].load(std::memory_order_acquire) < k)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }
  struct Leaf : Node {
    Leaf() : Node(true) {}
    std::atomic<u64> keys[kLeafSlots];
    std::atomic<u64> vals[kLeafSlots];
    std::atomic<Leaf*> next{nullptr};

    int lower(u64 k, int n) const { return lower_bound_of(keys, std::min(n, kLeafSlots), k); }
    void prefetch_values(int pos, int n) {
      for (int i = pos & ~7; i <= std::min(n, kLeafSlots - 1); i += 8)
        __builtin_prefetch(vals + i, 1);
    }
    void insert_at(int pos, int n, u64 k, u64 v) {
      for (int j = n; j > pos; --j) {
        keys[j].store(keys[j - 1].load(std::memory_order_acquire), std::memory_order_release);
        vals[j].store(vals[j - 1].load(std::memory_order_acquire), std::memory_order_release);
      }
      keys[pos].store(k, std::memory_order_release);
      vals[pos].store(v, std::memory_order_release);
      this->count.store(n + 1, std::memory_order_release);
    }
    void erase_at(int pos, int n) {
      for (int j = pos; j + 1 < n; ++j) {
        keys[j].store(keys[j + 1].load(std::memory_order_acquire), std::memory_order_release);
        vals[j].store(vals[j + 1].load(std::memory_order_acquire), std::memory_order_release);
      }
      this->count.store(n - 1, std::memory_order_release);
    }
  };
  // child[i] holds keys <= keys[i]; child[n] holds keys > keys[n - 1].
  struct Inner : Node {
    Inner() : Node(false) {}
    std::atomic<u64> keys[kInnerSlots];
    std::atomic<Node*> child[kInnerSlots + 1];

    int lower(u64 k, int n) const { return lower_bound_of(keys, std::min(n, kInnerSlots), k); }
    // Adds separator sep with `right` as the child after it (the caller holds the lock).
    void insert_child(u64 sep, Node* right) {
      int n = this->count.load(std::memory_order_acquire);
      int pos = lower(sep, n);
      for (int j = n; j > pos; --j) {
        keys[j].store(keys[j - 1].load(std::memory_order_acquire), std::memory_order_release);
        child[j + 1].store(child[j].load(std::memory_order_acquire), std::memory_order_release);
      }
      keys[pos].store(sep, std::memory_order_release);
      child[pos + 1].store(right, std::memory_order_release);
      this->count.store(n + 1, std::memory_order_release);
    }
  };

  static u64 ld(const std::atomic<u64>& a) { return a.load(std::memory_order_acquire); }

  std::optional<u64> try_lookup(u64 k, bool& restart) const {
    const Leaf* leaf = nullptr;
    u64 v = 0;
    descend_read(k, leaf, v, restart);
    if (restart) return std::nullopt;
    int n = leaf->count.load(std::memory_order_acquire);
    int pos = leaf->lower(k, n);
    std::optional<u64> r;
    if (pos < std::clamp(n, 0, kLeafSlots) && ld(leaf->keys[pos]) == k) r = ld(leaf->vals[pos]);
    if (!leaf->validate(v)) restart = true;
    return r;
  }

  // Optimistic descent: on success `leaf` is k's leaf and v the version it was read under
  // (the caller validates its own reads of the leaf against v).
  void descend_read(u64 k, const Leaf*& leaf, u64& v, bool& restart) const {
    const Node* nd = root_.load(std::memory_order_acquire);
    v = nd->await_unlocked();
    if (nd != root_.load(std::memory_order_acquire)) {
      restart = true;
      return;
    }
    while (!nd->leaf) {
      auto* in = static_cast<const Inner*>(nd);
      const Node* c = in->child[in->lower(k, in->count.load(std::memory_order_acquire))].load(
          std::memory_order_acquire);
      if (!in->validate(v)) {
        restart = true;
        return;
      }
      u64 cv = c->await_unlocked();
      if (!in->validate(v)) {  // the child is still the one this version points to
        restart = true;
        return;
      }
      nd = c;
      v = cv;
    }
    leaf = static_cast<const Leaf*>(nd);
  }

  // Lock coupling down to k's leaf, splitting full nodes on the way (their parent locked);
  // returns the leaf write-locked and not full, or null to restart.
  Leaf* lock_leaf_for_write(u64 k) {
    Node* nd = root_.load(std::memory_order_acquire);
    u64 v = nd->await_unlocked();
    if (nd != root_.load(std::memory_order_acquire)) return nullptr;
    Inner* parent = nullptr;
    u64 pv = 0;
    for (;;) {
      int n = nd->count.load(std::memory_order_acquire);
      bool full = nd->leaf ? n >= kLeafSlots : n >= kInnerSlots;
      if (full) {
        split(nd, v, parent, pv);
        return nullptr;  // restart after a split (or a failed attempt)
      }
      if (nd->leaf) {
        if (!nd->try_upgrade(v)) return nullptr;
        if (parent && !parent->validate(pv)) {
          nd->unlock();
          return nullptr;
        }
        return static_cast<Leaf*>(nd);
      }
      auto* in = static_cast<Inner*>(nd);
      Node* c = in->child[in->lower(k, n)].load(std::memory_order_acquire);
      if (!in->validate(v)) return nullptr;
      u64 cv = c->await_unlocked();
      if (!in->validate(v)) return nullptr;
      parent = in;
      pv = v;
      nd = c;
      v = cv;
    }
  }

  // Splits the full node nd (read under version v) whose parent (read under pv) is `parent`,
  // or grows a new root; gives up silently when a version moved.
  void split(Node* nd, u64 v, Inner* parent, u64 pv) {
    if (parent && !parent->try_upgrade(pv)) return;
    if (!nd->try_upgrade(v)) {
      if (parent) parent->unlock();
      return;
    }
    if (!parent && nd != root_.load(std::memory_order_acquire)) {
      nd->unlock();
      return;
    }
    u64 sep = 0;
    Node* right = nullptr;
    if (nd->leaf) {
      auto* l = static_cast<Leaf*>(nd);
      auto* r = make<Leaf>();
      int n = l->count.load(std::memory_order_acquire), keep = n / 2;
      for (int i = keep; i < n; ++i) {
        r->keys[i - keep].store(ld(l->keys[i]), std::memory_order_release);
        r->vals[i - keep].store(ld(l->vals[i]), std::memory_order_release);
      }
      r->count.store(n - keep, std::memory_order_release);
      r->next.store(l->next.load(std::memory_order_acquire), std::memory_order_release);
      l->count.store(keep, std::memory_order_release);
      l->next.store(r, std::memory_order_release);
      sep = ld(l->keys[keep - 1]);
      right = r;
    } else {
      auto* in = static_cast<Inner*>(nd);
      auto* r = make<Inner>();
      int n = in->count.load(std::memory_order_acquire), keep = n / 2;
      sep = ld(in->keys[keep]);
      for (int i = keep + 1; i < n; ++i)
        r->keys[i - keep - 1].store(ld(in->keys[i]), std::memory_order_release);
      for (int i = keep + 1; i <= n; ++i)
        r->child[i - keep - 1].store(in->child[i].load(std::memory_order_acquire),
                                     std::memory_order_release);
      r->count.store(n - keep - 1, std::memory_order_release);
      in->count.store(keep, std::memory_order_release);
      right = r;
    }
    if (parent) {
      parent->insert_child(sep, right);
    } else {
      auto* root = make<Inner>();
      root->keys[0].store(sep, std::memory_order_release);
      root->child[0].store(nd, std::memory_order_release);
      root->child[1].store(right, std::memory_order_release);
      root->count.store(1, std::memory_order_release);
      root_.store(root, std::memory_order_release);
    }
    nd->unlock();
    if (parent) parent->unlock();
  }

  void check_rec(const Node* nd, int depth, u64 lo, u64 hi, bool lo_open, int& leaf_depth,
                 const Leaf*& prev_leaf, const Leaf*& first_leaf,
                 std::vector<std::string>& out) const {
    int n = nd->count.load();
    auto in_range = [&](u64 k) { return (lo_open || k > lo) && k <= hi; };
    if (nd->leaf) {
      auto* l = static_cast<const Leaf*>(nd);
      if (leaf_depth < 0) leaf_depth = depth;
      if (depth != leaf_depth) out.push_back("leaves at different depths");
      for (int i = 0; i < n; ++i) {
        if (!in_range(ld(l->keys[i]))) out.push_back("leaf key outside its separators");
        if (i && ld(l->keys[i - 1]) >= ld(l->keys[i])) out.push_back("leaf keys not sorted");
      }
      if (prev_leaf && prev_leaf->next.load() != l) out.push_back("leaf list out of order");
      if (!first_leaf) first_leaf = l;
      prev_leaf = l;
      return;
    }
    auto* in = static_cast<const Inner*>(nd);
    if (n < 1) out.push_back("inner node without separator");
    for (int i = 0; i <= n; ++i) {
      u64 clo = i == 0 ? lo : ld(in->keys[i - 1]);
      u64 chi = i == n ? hi : ld(in->keys[i]);
      if (i < n && !in_range(ld(in->keys[i]))) out.push_back("separator outside its range");
      check_rec(in->child[i].load(), depth + 1, clo, chi, i == 0 ? lo_open : false, leaf_depth,
                prev_leaf, first_leaf, out);
    }
  }

  // A new node, counted; from the tree's chunks when it has them (nothing to destroy there:
  // nodes hold only atomics and pointers).
  template <class T>
  T* make() {
    static_assert(std::is_trivially_destructible_v<T> && sizeof(T) <= NodeChunks::kChunkBytes);
    nodes_.fetch_add(1, std::memory_order_relaxed);
    if (pooled_) return new (pooled_->take(sizeof(T))) T();
    return new T;
  }

  static void destroy(Node* nd) {
    if (nd->leaf) {
      delete static_cast<Leaf*>(nd);
      return;
    }
    auto* in = static_cast<Inner*>(nd);
    for (int i = 0; i <= in->count.load(std::memory_order_acquire); ++i)
      destroy(in->child[i].load(std::memory_order_acquire));
    delete in;
  }

  std::unique_ptr<PooledNodes> pooled_;  // null: nodes from the heap
  std::atomic<Node*> root_;
  std::atomic<std::size_t> nodes_{0};
};

using OlcBTree = BasicOlcBTree<>;

}  // namespace dptree::btree
