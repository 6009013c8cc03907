// uTree (Chen et al., VLDB 2020, and its authors' slides): a volatile B+-tree (the
// array layer) whose leaf entries point into a persistent sorted singly linked list of
// key-value nodes (the shadow list layer) in PM.
//
// A put writes and persists one list node, then links it behind its predecessor with one
// 8-byte store or CAS (slides: "PUT: list layer => array layer"); sorting, splits and merges happen
// only in the DRAM array layer ("never perform SROs in PM"), which is where the design gets
// its low tail latency. A get goes array layer => list node; a range query finds its first
// node through the array layer and then walks the list ("probe in the list layer directly").
// Recovery rebuilds the array layer from the list.
//
// Coordinated concurrency control (slides, "Coordinated Concurrency Control"): a writer locks
// the array-layer leaf that covers its key (a version lock; readers of the array layer take
// none and retry when the version moved). A link from one node of a leaf to another has only
// that leaf's lock holder as writer, who stores it; a link at a leaf's edge (from the last
// node of one leaf to the first node of the next, or across empty leaves) can also be changed
// by the writer of the neighbouring leaf and changes by 8-byte CAS only. Three low bits of a
// node's next word (nodes are 32-byte aligned) coordinate that:
//   kBusy   the paper's version bit: set while the node's value is updated in place, so a
//           scan that reads values straight from the list never returns an unpersisted one
//           (put-get conflicts);
//   kMark   set before a remove unlinks the node: its next is then frozen, so an insert
//           behind it fails its CAS instead of being lost (put-del conflicts, as in Harris's
//           list);
//   kDirty  a link that is written but not yet persisted; whoever reads it persists it first.
// Removed nodes return to the slab only when every operation in flight at their removal has
// ended: the epoch-based reclamation of the paper, each thread counting its operations on a
// line of its own. The inner nodes of the array layer are a B-link tree in DRAM whose readers
// take no lock (route_tree.h), and the array leaves a B-link chain: a split takes only the
// split leaf's lock (the original locks one page of its array layer), and a thread that
// reaches a leaf before its new sibling is in the inner nodes follows the leaf's link. List nodes
// come from a slab arena (baselines/slab), a run of slots per thread at a time.
//
// Why no acknowledged write is lost when several threads write (a fence persists only the
// fencing thread's own flushes):
//  - a node is persisted by its writer before the store or CAS that makes it reachable;
//  - a link is written with kDirty, persisted, then cleaned; a thread that reads a dirty link
//    persists it itself before building on it, so what it then acknowledges never hangs off
//    a link that only another thread's pending fence would make durable;
//  - a node enters the array layer (where other threads find it without walking the list)
//    only after its link is durable, and its leaf stays locked until then;
//  - a store into a link inside a leaf replaces no other thread's value: other writers CAS
//    only links to nodes of their own leaf's range, and the link and both its nodes change
//    only under the leaf's lock;
//  - the clean-up CAS can clear a dirty bit that another thread set for the same value (ABA),
//    but only a remove can put an old value back (no slot is reused while an operation in
//    flight at its removal runs), and a remove's own thread persists its link before it
//    returns; the durable list then still holds the removed node, an operation in flight.
#include "baselines/utree/utree.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>

#include "baselines/common.h"
#include "baselines/slab/slab_arena.h"
#include "baselines/slab/version_lock.h"
#include "baselines/utree/route_tree.h"
#include "btree/chunk_memory.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/registry.h"
#include "registry/index_table.h"
#include "registry/option_table.h"

namespace dptree::baselines {
namespace {

constexpr std::uint64_t kMagic = 0x31454552'5455504dull;  // "MPUTREE1"

constexpr std::uint64_t kMark = 1, kDirty = 2, kBusy = 4, kFlags = 7;

struct ListNode {
  Key key;             // written before the node is linked, never changed
  Value value;         // ld/st: updated in place
  std::uint64_t next;  // offset of the next larger key's node | flags; ld/st/cas
  std::uint64_t pad;
};
static_assert(sizeof(ListNode) == 32);  // two per cache line, never straddling one

struct alignas(64) Root {
  std::uint64_t magic;
  std::uint64_t slab_size;
  std::uint64_t list_dir;  // SlabArena directory of the list nodes
  std::uint64_t head;      // first list node | flags
  std::uint64_t pad[4];
};
static_assert(sizeof(Root) == 64);

// An array-layer leaf: the sorted keys in [low, high) and their list nodes. Changed under
// `lock`; read optimistically. A split moves the upper half to a new right sibling and
// lowers `high` (a B-link tree: Lehman and Yao, TODS 1981), so a thread that the inner nodes
// routed here before the split finds its key's leaf by following `next`; `low` never changes
// and leaves are never freed while the index lives.
template <std::size_t Slots>
struct alignas(64) ArrayLeaf {
  VersionLock lock;
  Key low = 0;
  Key high = ~Key{0};  // the next leaf's low; ~0 (and no next) for the last leaf
  std::atomic<ArrayLeaf*> next{nullptr};
  std::uint32_t n = 0;
  Key keys[Slots];
  std::uint64_t offs[Slots];
};

// What one thread changes on every operation, on lines of its own, so that two threads'
// operations write no common line: its operations in flight (by epoch parity, see OpGuard),
// its share of the record count and a run of free list-node slots taken from the arena at
// once (each thread's nodes are then neighbours of its own, not of the other thread's: two
// threads persisting halves of one line would wait for each other). Threads pick a slot by a
// process-wide thread number; beyond kThreadSlots threads two may share one, correctly.
struct alignas(64) ThreadSlot {
  static constexpr std::uint32_t kCache = 32;
  std::atomic<std::uint64_t> active[2] = {0, 0};
  std::atomic<std::int64_t> records{0};
  std::atomic_flag cache_lock;
  std::uint32_t cached = 0;
  std::uint64_t cache[kCache];
};
constexpr std::size_t kThreadSlots = 64;

std::size_t thread_slot() {
  static std::atomic<std::size_t> threads{0};
  thread_local const std::size_t slot =
      threads.fetch_add(1, std::memory_order_relaxed) % kThreadSlots;
  return slot;
}

template <std::size_t Slots>
class UTree final : public PutIndex<UTree<Slots>> {
  friend class PutIndex<UTree<Slots>>;  // its name, upsert, insert and update
  static constexpr const char* kName = "utree";

  using Leaf = ArrayLeaf<Slots>;

 public:
  // `shared`: several threads may use the index (IndexConfig::threads != 1). With one thread
  // a put takes no lock and links with a plain store and its persist: the dirty bit and the
  // version bit exist for other threads, which there are none of (as FAST_FAIR, FPTree and
  // LB+-Tree in their one-thread configuration; docs/indexes.md, uTree).
  UTree(pm::Pool& pool, bool shared) : claim_(pool, kName), pool_(pool), shared_(shared) {
    root_ = static_cast<Root*>(open_arena_root(pool, sizeof(Root), kMagic, kName));
    base_ = reinterpret_cast<std::byte*>(root_) - *pool.root_word();
    list_ = std::make_unique<SlabArena>(pool, &root_->list_dir, sizeof(ListNode), root_->slab_size);
    recover();
  }

  bool remove(Key k) override {
    {
      OpGuard op(*this);
      Leaf* l = lock_leaf(route(k), k);
      std::lock_guard g(l->lock, std::adopt_lock);
      std::uint32_t n = l->n, pos = lower(l, n, k);
      if (pos == n || l->keys[pos] != k) return false;
      pm::CategoryScope cat(pm::Category::node);
      std::uint64_t x = l->offs[pos];
      // Freeze x's link: an insert behind x (from the next leaf) now fails its CAS.
      std::uint64_t s = ld(node(x)->next);
      while (!cas(node(x)->next, s, s | kMark)) {
      }
      std::uint64_t p = pos ? l->offs[pos - 1] : left_pred(l);
      for (unsigned spins = 0;;) {
        std::uint64_t* w = link_word(p);
        s = ld(*w);
        if (s & kDirty) pm::persist(w, 8);  // never build on a link a crash could lose
        if (s & kMark) {      // p (left of this leaf) is being removed: find the new predecessor
          spin_pause(spins);  // its remover may be waiting for a core
          p = left_pred(l);
          continue;
        }
        if (s & kBusy) {
          spin_pause(spins);
          continue;
        }
        if ((s & ~kFlags) != x) {  // a node was linked between p and x meanwhile
          p = s & ~kFlags;
          continue;
        }
        std::uint64_t succ = ld(node(x)->next) & ~kFlags;
        if (publish(w, s, succ)) break;  // the commit: one 8-byte CAS, persisted
      }
      for (std::uint32_t i = pos; i + 1 < n; ++i) {
        st(l->keys[i], l->keys[i + 1]);
        st(l->offs[i], l->offs[i + 1]);
      }
      st(l->n, n - 1);
      slots_[thread_slot()].records.fetch_sub(1, std::memory_order_relaxed);
      std::lock_guard a(arena_mu_);
      retired_.push_back(x);
      retired_count_.store(retired_.size(), std::memory_order_relaxed);
    }
    if (retired_count_.load(std::memory_order_relaxed) >= kReclaimBatch) reclaim();
    return true;
  }

  std::optional<Value> lookup(Key k) const override {
    OpGuard op(*this);
    return read_leaf(k, [&](const Leaf* l) {
      std::uint32_t n = ld(l->n), pos = lower(l, n, k);
      std::optional<Value> r;
      if (pos < n && ld(l->keys[pos]) == k)
        if (std::uint64_t off = ld(l->offs[pos])) r = ld(node(off)->value);
      return r;
    });
  }

  // Finds the greatest node below `start` through the array layer, then walks the list.
  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    OpGuard op(*this);
    const Leaf* l = nullptr;
    std::uint64_t p = read_leaf(start, [&](const Leaf* at) {
      l = at;
      std::uint32_t n = ld(at->n), pos = lower(at, n, start);
      return pos ? ld(at->offs[pos - 1]) : 0;
    });
    if (!p) p = left_pred(l);
    std::size_t got = 0;
    bool any = false;
    Key last = 0;
    const std::uint64_t* w = link_word(p);
    while (got < count) {
      std::uint64_t s = ld(*w);
      if (s & kDirty) pm::persist(w, 8);  // never return what a crash could still lose
      std::uint64_t off = s & ~kFlags;
      if (!off) break;
      const ListNode* c = node(off);
      std::uint64_t nx;
      Value val;
      for (unsigned spins = 0;; spin_pause(spins)) {  // the version bit: a persisted value
        nx = ld(c->next);
        if (nx & kBusy) continue;
        val = ld(c->value);
        if (!(ld(c->next) & kBusy)) break;
      }
      if (!(nx & kMark) && c->key >= start && (!any || c->key > last)) {
        out.emplace_back(c->key, val);
        ++got;
        any = true;
        last = c->key;
      }
      w = &c->next;
    }
    return got;
  }

  IndexStats stats() const override {
    IndexStats s;
    s.records = record_count();
    std::size_t leaves = leaf_count_.load(std::memory_order_relaxed);
    s.dram_bytes = inner_.dram_bytes() + leaves * sizeof(Leaf);
    s.pm_bytes = pool_.allocator().block_size(*pool_.root_word()) + list_->pm_bytes();
    s.extra = {{"array_leaves", double(leaves)}, {"array_height", double(inner_.height() + 1)}};
    return s;
  }

  // With no operation in flight, as every index's check.
  CheckReport check() const override {
    CheckReport r;
    for (const auto& p : inner_.check()) r.fail("array layer inner nodes: " + p);
    // The list: ascending, every node a used slot, no remove or update left half-done.
    std::map<Key, std::uint64_t> listed;
    std::set<std::uint64_t> seen;
    bool first = true;
    Key prev = 0;
    for (std::uint64_t s = root_->head; s & ~kFlags && r.problems.size() < 20;) {
      std::uint64_t off = s & ~kFlags;
      if (!list_->is_slot(off) || !seen.insert(off).second) {
        r.fail("list node " + std::to_string(off) + " is not a slot or is reached twice");
        break;
      }
      if (!list_->is_used(off)) r.fail("list node " + std::to_string(off) + " is free");
      const ListNode& ln = *node(off);
      if (ln.next & (kMark | kBusy)) r.fail("list node " + std::to_string(off) + " is flagged");
      if (!first && ln.key <= prev) r.fail("list keys are not ascending at " + std::to_string(off));
      first = false;
      prev = ln.key;
      listed[ln.key] = off;
      s = ln.next;
    }
    // The array layer: leaves in order, each sorted within its range, naming the list nodes.
    std::vector<const Leaf*> leaves;
    std::vector<Key> bounds;  // where the inner nodes say each leaf starts
    inner_.for_each_leaf([&](Key low, std::uintptr_t leaf) {
      leaves.push_back(reinterpret_cast<const Leaf*>(leaf));
      bounds.push_back(low);
    });
    std::size_t held = 0;
    for (std::size_t i = 0; i < leaves.size() && r.problems.size() < 20; ++i) {
      const Leaf* l = leaves[i];
      std::string at = "array leaf at " + std::to_string(l->low);
      if (l->low != bounds[i])
        r.fail(at + ": the inner nodes say it starts at " + std::to_string(bounds[i]));
      const Leaf* next = i + 1 < leaves.size() ? leaves[i + 1] : nullptr;
      if (l->next.load() != next || l->high != (next ? next->low : ~Key{0}))
        r.fail(at + ": its sibling link or high bound disagrees with the inner nodes");
      if (l->n > Slots) r.fail(at + " is overfull");
      for (std::uint32_t j = 0; j < l->n && j < Slots; ++j) {
        Key k = l->keys[j];
        if (k < l->low || (i + 1 < leaves.size() && k >= leaves[i + 1]->low) ||
            (j && k <= l->keys[j - 1]))
          r.fail(at + ": key " + std::to_string(k) + " out of order or range");
        auto f = listed.find(k);
        if (f == listed.end() || f->second != l->offs[j])
          r.fail(at + ": key " + std::to_string(k) + " does not name its list node");
      }
      held += l->n;
    }
    if (leaves.size() != leaf_count_.load()) r.fail("array leaves are lost from the inner nodes");
    if (held != listed.size() || held != record_count())
      r.fail("array layer holds " + std::to_string(held) + " keys, list " +
             std::to_string(listed.size()) + ", count " + std::to_string(record_count()));
    std::size_t cached = 0;
    for (const ThreadSlot& t : slots_) cached += t.cached;
    if (list_->used_slots() != listed.size() + retired_.size() + cached)
      r.fail("arena uses " + std::to_string(list_->used_slots()) + " slots, list has " +
             std::to_string(listed.size()) + ", " + std::to_string(retired_.size()) +
             " wait for reclamation and threads hold " + std::to_string(cached));
    check_arena_blocks(pool_, {list_.get()}, r);
    r.facts = {{"records", double(listed.size())},
               {"array_leaves", double(leaves.size())},
               {"array_height", double(inner_.height() + 1)}};
    return r;
  }

 private:
  static constexpr std::size_t kReclaimBatch = 256;

  // Offsets are never 0 here (pool_.at would map 0 to nullptr).
  const ListNode* node(std::uint64_t off) const {
    return reinterpret_cast<const ListNode*>(base_ + off);
  }
  ListNode* node(std::uint64_t off) { return reinterpret_cast<ListNode*>(base_ + off); }
  const std::uint64_t* link_word(std::uint64_t p) const {
    return p ? &node(p)->next : &root_->head;
  }
  std::uint64_t* link_word(std::uint64_t p) { return p ? &node(p)->next : &root_->head; }

  // An operation in flight, counted in its thread's slot under the parity of the epoch it
  // began in: removed list nodes return to the arena only once every operation that was in
  // flight when they were unlinked has ended (reclaim(): the paper's epoch-based
  // reclamation). The count is on the thread's own line, so operations share no written word.
  class OpGuard {
   public:
    explicit OpGuard(const UTree& t) {
      if (!t.shared_) return;  // one thread: reclaim() runs between its operations
      slot_ = &t.slots_[thread_slot()];
      for (;;) {
        std::uint64_t e = t.epoch_.load();
        parity_ = e & 1;
        slot_->active[parity_].fetch_add(1);
        if (t.epoch_.load() == e) return;  // else reclaim() may have counted this slot already
        slot_->active[parity_].fetch_sub(1, std::memory_order_release);
      }
    }
    ~OpGuard() {
      if (slot_) slot_->active[parity_].fetch_sub(1, std::memory_order_release);
    }
    OpGuard(const OpGuard&) = delete;
    OpGuard& operator=(const OpGuard&) = delete;

   private:
    ThreadSlot* slot_ = nullptr;
    std::uint64_t parity_ = 0;
  };

  // The leaf the inner nodes name for k: k's leaf, or one to its left whose split has not
  // yet entered the new sibling (beyond() then leads on).
  Leaf* route(Key k) const { return reinterpret_cast<Leaf*>(inner_.floor(k)); }
  // The next leaf if k lies beyond l's range (a split moved it right), else null.
  static Leaf* beyond(const Leaf* l, Key k) {
    return k < ld(l->high) ? nullptr : l->next.load(std::memory_order_acquire);
  }
  // Locks k's leaf, starting from l (k's leaf or one left of it).
  static Leaf* lock_leaf(Leaf* l, Key k) {
    for (;;) {
      l->lock.lock();
      Leaf* r = beyond(l, k);
      if (!r) return l;
      l->lock.unlock();
      l = r;
    }
  }
  // f(k's leaf) under an optimistic read, until it ran on an unchanged leaf; its result.
  template <class F>
  auto read_leaf(Key k, F f) const {
    const Leaf* l = route(k);
    prefetch(l);  // the search's key lines and the entry's line: one overlapped miss
    for (;;) {
      std::uint64_t v = l->lock.read_begin();
      if (const Leaf* r = beyond(l, k)) {  // lows never change: k's leaf is r or further
        l = r;
        continue;
      }
      auto res = f(l);
      if (l->lock.read_valid(v)) return res;
    }
  }

  // Loads every line of l at once, so that the search, the entry (and a put's predecessor
  // entry and shift) wait for one overlapped miss rather than one after another (as the
  // btree's prefetched node search; an array leaf is DRAM, so this reads no PM).
  static void prefetch(const Leaf* l) {
    const char* p = reinterpret_cast<const char*>(l);
    for (std::size_t i = 0; i < sizeof(Leaf); i += 64) __builtin_prefetch(p + i);
  }

  // First position in l's first n keys with key >= k.
  static std::uint32_t lower(const Leaf* l, std::uint32_t n, Key k) {
    std::uint32_t lo = 0, hi = std::min<std::uint32_t>(n, Slots);
    while (lo < hi) {
      std::uint32_t mid = (lo + hi) / 2;
      if (ld(l->keys[mid]) < k)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }

  // The greatest list node below l's range: the last node of the nearest non-empty leaf to
  // the left (read optimistically), 0 for the head word.
  std::uint64_t left_pred(const Leaf* l) const {
    for (Key low = l->low; low > 0;) {
      std::uint64_t off = read_leaf(low - 1, [&](const Leaf* left) {
        std::uint32_t n = std::min<std::uint32_t>(ld(left->n), Slots);
        low = left->low;
        return n ? ld(left->offs[n - 1]) : 0;
      });
      if (off) return off;
    }
    return 0;
  }

  // CASes link word w from s to `to` (flagged dirty until persisted). Returns false if w
  // changed. With one thread, a plain store of `to` and its persist: nothing can change w.
  bool publish(std::uint64_t* w, std::uint64_t s, std::uint64_t to) {
    if (!shared_) {  // nothing else reads or writes w
      st(*w, to);
      pm::persist(w, 8);
      return true;
    }
    if (!cas(*w, s, to | kDirty)) return false;
    pm::persist(w, 8);
    std::uint64_t d = to | kDirty;
    cas(*w, d, to);  // fails harmlessly if another writer has replaced the link since
    return true;
  }

  bool put(Key k, Value v, bool may_insert, bool may_update) {
    pm::CategoryScope cat(pm::Category::node);
    OpGuard op(*this);
    for (;;) {
      Leaf* r;
      {
        Leaf* l = route(k);
        prefetch(l);
        std::unique_lock<VersionLock> g;
        if (shared_) {
          l = lock_leaf(l, k);
          g = std::unique_lock(l->lock, std::adopt_lock);
        }
        std::uint32_t n = l->n, pos = lower(l, n, k);
        if (pos < n && l->keys[pos] == k) {
          if (!may_update) return false;
          ListNode* ln = node(l->offs[pos]);
          if (!shared_) {
            st(ln->value, v);
            pm::persist(&ln->value, 8);
            return true;
          }
          // In place, bracketed by the version bit (put-get conflicts).
          pm::update(&ln->next, [](std::atomic_ref<std::uint64_t> x) {
            x.fetch_or(kBusy, std::memory_order_acq_rel);
          });
          st(ln->value, v);
          pm::persist(&ln->value, 8);
          pm::update(&ln->next, [](std::atomic_ref<std::uint64_t> x) {
            x.fetch_and(~kBusy, std::memory_order_release);
          });
          return true;
        }
        if (!may_insert) return false;
        if (n < Slots) {
          if (shared_)
            link_in(l, pos, k, v);
          else
            link_alone(l, pos, k, v);
          return true;
        }
        r = split(l);  // a full array leaf (DRAM only)
      }
      inner_.insert(r->low, reinterpret_cast<std::uintptr_t>(r));  // l is unlocked: B-link
    }
  }

  // Writes and persists a new node for k, links it into the list (lock-free: the link may be
  // shared with the neighbouring leaf's writer) and then into l at pos.
  void link_in(Leaf* l, std::uint32_t pos, Key k, Value v) {
    std::uint64_t off = alloc_node();
    ListNode* ln = node(off);
    pm::store(&ln->key, k);
    pm::store(&ln->value, v);
    pm::store(&ln->pad, 0);
    if (pos > 0 && pos < l->n)
      link_inside(l->offs[pos - 1], l->offs[pos], ln, off);
    else
      link_at_edge(l, pos, k, ln, off);
    std::uint32_t n = l->n;
    for (std::uint32_t i = n; i > pos; --i) {
      st(l->keys[i], l->keys[i - 1]);
      st(l->offs[i], l->offs[i - 1]);
    }
    st(l->keys[pos], k);
    st(l->offs[pos], off);
    st(l->n, n + 1);
    slots_[thread_slot()].records.fetch_add(1, std::memory_order_relaxed);
  }

  // Links node off (ln) between two nodes of l, p and succ. A link from one node of l to
  // another is written only under l's lock: the writers of other leaves CAS only a link to a
  // node of their own range (the one they insert behind, the node they remove), and changing
  // p or succ needs l's lock. So stores do the CAS's work, and succ is the leaf's next entry:
  // the insert reads no list node. The dirty bit still marks the link until it is durable, for
  // the scans and the edge writers that walk across it.
  void link_inside(std::uint64_t p, std::uint64_t succ, ListNode* ln, std::uint64_t off) {
    std::uint64_t* w = &node(p)->next;
    __builtin_prefetch(w, 1);  // written after the node's persist: fetch the line meanwhile
    pm::store(&ln->next, succ);
    pm::persist(ln, sizeof(ListNode));  // before the link makes it reachable
    st(*w, off | kDirty);
    pm::persist(w, 8);  // the commit
    st(*w, off);
  }

  // Links node off (ln) at an end of l, behind a node that may be in another leaf: the link
  // is shared with the writers of the neighbouring leaves, so it changes by CAS only.
  void link_at_edge(Leaf* l, std::uint32_t pos, Key k, ListNode* ln, std::uint64_t off) {
    std::uint64_t p = pos ? l->offs[pos - 1] : left_pred(l);
    for (unsigned spins = 0;;) {
      std::uint64_t* w = link_word(p);
      std::uint64_t s = ld(*w);
      if (s & kDirty) pm::persist(w, 8);  // never build on a link a crash could lose
      if (s & kMark) {                    // p (left of this leaf) is being removed
        spin_pause(spins);                // its remover may be waiting for a core
        p = left_pred(l);
        continue;
      }
      if (s & kBusy) {  // p's value is being updated
        spin_pause(spins);
        continue;
      }
      std::uint64_t succ = s & ~kFlags;
      if (succ && node(succ)->key < k) {  // linked left of this leaf meanwhile
        p = succ;
        continue;
      }
      pm::store(&ln->next, succ);  // the node is not reachable yet
      pm::persist(ln, sizeof(ListNode));
      if (publish(w, s, off)) return;  // the commit: one 8-byte CAS, persisted
    }
  }

  // A free list-node slot from the thread's run, refilled from the arena kCache at a time.
  std::uint64_t alloc_node() {
    ThreadSlot& t = slots_[thread_slot()];
    for (unsigned spins = 0; t.cache_lock.test_and_set(std::memory_order_acquire);)
      spin_pause(spins);  // only a thread sharing the slot holds it
    struct Release {
      std::atomic_flag& f;
      ~Release() { f.clear(std::memory_order_release); }
    } release{t.cache_lock};
    if (!t.cached) {
      std::lock_guard a(arena_mu_);
      try {
        while (t.cached < ThreadSlot::kCache) t.cache[t.cached++] = list_->alloc();
      } catch (const Error&) {
        if (!t.cached) throw;  // the pool is full: no slot at all
      }
    }
    return t.cache[--t.cached];
  }

  // link_in with one thread. The array layer then names every list node in list order
  // (recovery builds it from the list and only this thread changes either), so k's list
  // successor is the leaf's entry at pos: the insert reads no list node, and only writes the
  // new node and its predecessor's link, keeping PM reads off the insert's path as the
  // array layer is meant to (the paper's abstract). At the end of a leaf the successor is in
  // another leaf, and the predecessor's link is read instead.
  void link_alone(Leaf* l, std::uint32_t pos, Key k, Value v) {
    std::uint64_t off = list_->alloc();
    std::uint64_t p = pos ? l->offs[pos - 1] : left_pred(l);
    std::uint64_t* w = link_word(p);
    __builtin_prefetch(w, 1);  // written after the node's persist: fetch the line meanwhile
    std::uint64_t succ = pos < l->n ? l->offs[pos] : *w & ~kFlags;
    ListNode* ln = node(off);
    pm::store(&ln->key, k);
    pm::store(&ln->value, v);
    pm::store(&ln->next, succ);
    pm::store(&ln->pad, 0);
    pm::persist(ln, sizeof(ListNode));  // before the link makes it reachable
    publish(w, 0, off);                 // the commit: one 8-byte store, persisted
    place_alone(l, pos, k, off);
  }

  // Puts (k, off) at pos of l with one thread: no reader can see the leaf meanwhile, so the
  // entries move as two blocks and the count needs no atomic add (a locked instruction would
  // wait here for the link's write-back instead of letting the next put start).
  void place_alone(Leaf* l, std::uint32_t pos, Key k, std::uint64_t off) {
    std::uint32_t n = l->n;
    std::memmove(l->keys + pos + 1, l->keys + pos, (n - pos) * sizeof(Key));
    std::memmove(l->offs + pos + 1, l->offs + pos, (n - pos) * sizeof(std::uint64_t));
    l->keys[pos] = k;
    l->offs[pos] = off;
    l->n = n + 1;
    auto& records = slots_[0].records;
    records.store(records.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // A new, empty array leaf (see leaf_memory_).
  Leaf* make_leaf() {
    static_assert(std::is_trivially_destructible_v<Leaf>, "leaves go with their chunks");
    std::lock_guard g(leaf_memory_mu_);
    return new (leaf_memory_.take(sizeof(Leaf))) Leaf;
  }

  // Moves the upper half of the full leaf l (locked, or the one thread) to a new right
  // sibling, linked before l's range shrinks; the caller enters it into the inner nodes once
  // l is unlocked (until then, threads routed to l follow its link).
  Leaf* split(Leaf* l) {
    Leaf* r = make_leaf();
    std::uint32_t half = Slots / 2;
    r->low = l->keys[half];
    r->high = l->high;
    r->n = l->n - half;
    std::copy(l->keys + half, l->keys + l->n, r->keys);
    std::copy(l->offs + half, l->offs + l->n, r->offs);
    r->next.store(l->next.load(std::memory_order_relaxed), std::memory_order_relaxed);
    l->next.store(r, std::memory_order_release);  // a reader that sees the new high finds r
    st(l->high, r->low);
    st(l->n, half);
    leaf_count_.fetch_add(1, std::memory_order_relaxed);
    return r;
  }

  // Outside any operation: returns the nodes removed so far to the arena once every
  // operation in flight at their removal has ended. Operations from now on count under the
  // other parity (OpGuard); the old parity then drains in every slot. One reclaimer at a
  // time; another leaves the work to it.
  void reclaim() {
    std::unique_lock one(reclaim_mu_, std::try_to_lock);
    if (!one.owns_lock()) return;
    std::vector<std::uint64_t> batch;
    {
      std::lock_guard a(arena_mu_);
      batch.swap(retired_);
      retired_count_.store(0, std::memory_order_relaxed);
    }
    std::uint64_t old = epoch_.fetch_add(1) & 1;
    for (const ThreadSlot& t : slots_)
      for (unsigned spins = 0; t.active[old].load(std::memory_order_acquire);) spin_pause(spins);
    std::lock_guard a(arena_mu_);
    for (std::uint64_t off : batch) list_->release(off);
  }

  std::size_t record_count() const {
    std::int64_t n = 0;
    for (const ThreadSlot& t : slots_) n += t.records.load(std::memory_order_relaxed);
    return std::size_t(n);
  }

  // A new last leaf from `low` on, right of l (recovery: one thread, before any operation).
  Leaf* new_leaf(Leaf* l, Key low) {
    Leaf* r = make_leaf();
    r->low = low;
    l->high = low;
    l->next.store(r, std::memory_order_release);
    inner_.insert(low, reinterpret_cast<std::uintptr_t>(r));
    leaf_count_.fetch_add(1, std::memory_order_relaxed);
    return r;
  }

  // Rebuilds the array layer from the list (leaves filled to 3/4). A remove that a crash
  // interrupted after marking its node is finished (the unlink persisted; idempotent);
  // otherwise recovery writes only flag bits of the working image, whose meaning is volatile.
  void recover() {
    list_->open();
    Leaf* l = first_;
    leaf_count_ = 1;
    std::int64_t records = 0;
    constexpr std::uint32_t kFill = Slots * 3 / 4;
    bool first = true;
    Key prev = 0;
    std::uint64_t* w = &root_->head;
    std::unordered_set<std::uint64_t> unlinked;  // marked nodes passed: no cycle of them
    for (;;) {
      std::uint64_t off = *w & ~kFlags;
      if (*w != off) pm::store(w, off);
      if (!off) break;
      if (!list_->is_slot(off) || list_->is_used(off) || unlinked.contains(off))
        problem("list node " + std::to_string(off) + " is not a slot or is reached twice");
      ListNode& ln = *node(off);
      if (ln.next & kMark) {  // a remove in flight at the crash: finish it
        unlinked.insert(off);
        pm::store(w, ln.next & ~kFlags);
        pm::persist(w, 8);
        continue;
      }
      list_->mark_used(off);
      if (!first && ln.key <= prev)
        problem("list out of order: node " + std::to_string(off) + " (key " +
                std::to_string(ln.key) + ", value " + std::to_string(ln.value) + ") after key " +
                std::to_string(prev));
      first = false;
      prev = ln.key;
      if (l->n == kFill) l = new_leaf(l, ln.key);
      l->keys[l->n] = ln.key;
      l->offs[l->n++] = off;
      ++records;
      w = &ln.next;
    }
    slots_[0].records = records;
    list_->finish();
  }
  // PM is untrusted: what recovery cannot make sense of refuses the pool, before any
  // operation follows it.
  [[noreturn]] void problem(const std::string& s) const { refuse_damaged(pool_, kName, s); }

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  const bool shared_;  // several threads may use the index: puts lock and link with CASes
  Root* root_ = nullptr;
  std::byte* base_ = nullptr;  // the pool's offset 0
  std::unique_ptr<SlabArena> list_;
  // The array leaves, never freed one by one: from chunks advised for huge pages
  // (btree/chunk_memory.h), all freed with the index (also when recovery refuses a damaged
  // pool, from the constructor). At 10M keys they span 230 MB: on 4 KiB pages nearly every
  // lookup would wait for a page walk as well as for the leaf's lines.
  std::mutex leaf_memory_mu_;  // splits of two leaves take memory at once
  btree::BumpChunks leaf_memory_;
  Leaf* first_ = make_leaf();  // the leaf from key 0
  // The inner nodes over the array leaves (route_tree.h): routing takes no lock, and a split
  // of an array leaf enters its new sibling under the inner nodes' own writer mutex, DRAM
  // work only.
  RouteTree inner_{reinterpret_cast<std::uintptr_t>(first_)};
  std::atomic<std::size_t> leaf_count_{0};
  mutable std::array<ThreadSlot, kThreadSlots> slots_;
  alignas(64) std::atomic<std::uint64_t> epoch_{0};  // changed by reclaim() only
  std::mutex arena_mu_;                              // the slab arena and retired_
  std::mutex reclaim_mu_;
  std::vector<std::uint64_t> retired_;
  std::atomic<std::size_t> retired_count_{0};
};

}  // namespace
}  // namespace dptree::baselines

namespace dptree {
namespace {

struct UTreeOptions {
  unsigned leaf_slots = 64;
};

const option_values::OptionTable<UTreeOptions>& utree_options() {
  static const auto t = option_values::OptionTable<UTreeOptions>("utree").choice(
      "leaf_slots", &UTreeOptions::leaf_slots, {{"64", 64u}, {"16", 16u}},
      "entries per DRAM array-layer leaf");
  return t;
}

}  // namespace

void register_utree_index() {
  add_persistent_index(
      "utree", "uTree",
      "uTree (Chen et al., VLDB 2020): DRAM B+-tree array layer over a persistent sorted "
      "list of PM key-value nodes; one node write + one 8-byte CAS link per insert; "
      "concurrent: array-leaf locks, lock-free list updates (coordinated concurrency "
      "control) with dirty-bit links",
      true, utree_options().docs(),
      {.fuzz = TestPlan::Fuzz{{{"leaf_slots", "16"}}},
       .kill = TestPlan::Kill{2, {{"leaf_slots", "16"}}},
       .generic = TestPlan::Generic{{{"leaf_slots", "16"}}, "array_leaves", 80, true, 3000}},
      [](pm::Pool& pool, const IndexConfig& cfg) -> std::unique_ptr<Index> {
        if (utree_options().parse(cfg.options).leaf_slots == 16)
          return std::make_unique<baselines::UTree<16>>(pool, cfg.threads != 1);
        return std::make_unique<baselines::UTree<64>>(pool, cfg.threads != 1);
      });
}

}  // namespace dptree
