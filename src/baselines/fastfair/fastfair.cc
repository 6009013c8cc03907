// FAST_FAIR (Hwang et al., FAST 2018) on our PM layer: a B+-tree whose nodes all live in PM,
// entries sorted in place.
//  - FAST (failure-atomic shift): an in-node insert or delete shifts entries with 8-byte
//    stores in an order that leaves every intermediate state readable, persisting each cache
//    line as the shift leaves it; no log.
//  - FAIR (failure-atomic in-place rebalance): a split writes and persists the new sibling,
//    publishes it with one 8-byte sibling-pointer store, then truncates the old node with one
//    more; the parent is updated afterwards and readers reach a node whose parent entry is
//    missing through the sibling pointer (move right).
// Recovery is instant: opening repairs nothing in the tree; a node left mid-shift or
// mid-split is tolerated by readers and tidied by the next write to it.
//
// Entries hold the value inline, so values cannot mark the transient duplicate the way the
// original's unique record pointers do; two values are reserved instead (docs/peers.md):
// kEnd ends a node's entry array, kHole marks an entry being rewritten. Every entry rewrite
// is hole, key, value, so an entry is always a hole or a whole (key, value) pair, and a
// shift leaves at most one full duplicate of a neighbour, which readers skip.
//
// Concurrency (FAST_FAIR §5; the DPTree paper §4.4 for updates): searches take no lock. They
// read each entry as value, key, value again (a torn pair is read again), skip holes and
// duplicates, and move right past a split. A writer locks the leaf (moving right with lock
// coupling), then shifts, or updates the value in place with one failure-atomic 8-byte store.
// What a lock-free reader cannot tolerate is an entry moving left under it (a delete's shift,
// a split's truncation): those bump the node's version before and after, and readers of a
// leaf retry when the version changed. The lock and version share one word per node
// (Header::sync) that carries the epoch of the open that set it, so a lock a crash left set
// in PM is simply stale after reopening. Creating a node and publishing it is serialised by
// one mutex, which keeps the creation chain's one-unpublished-tail invariant.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "baselines/common.h"
#include "baselines/node_chain.h"
#include "baselines/peers.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"

namespace dptree::baselines {
namespace {

constexpr std::uint64_t kMagic = 0x52494146'54534146ull;  // "FASTFAIR"
constexpr Value kEnd = ~Value{0};
constexpr Value kHole = ~Value{0} - 1;

struct Entry {
  std::uint64_t key;
  std::uint64_t val;  // leaf: the value; inner: child offset; kEnd / kHole as above
};

struct Header {  // one cache line
  ChainLinks links;
  std::uint64_t sibling;   // right neighbour on this level
  std::uint64_t leftmost;  // inner: child for keys below the first entry
  std::uint64_t low_key;   // every key of this node is >= low_key (fixed at creation)
  std::uint32_t level;     // 0 = leaf
  std::uint32_t pad0;
  // Volatile in meaning though it lives in PM (never flushed on purpose): bit 0 the write
  // lock, bits 1..31 the version (odd while entries move left), bits 32..63 the epoch of the
  // open that last locked the node; a word of an older epoch is unlocked and stable.
  std::uint64_t sync;
};
static_assert(sizeof(Header) == 64);

struct Root {  // the root block (pool root word)
  std::uint64_t magic;
  std::uint64_t param;  // node_bytes
  ChainRoot chain;
  std::uint64_t tree_root;
  std::uint64_t epoch;  // bumped by every open (Header::sync)
};

constexpr std::uint64_t kLocked = 1;
constexpr std::uint64_t kChanging = 2;
constexpr std::uint64_t kVersionMask = 0xfffffffe;

class FastFair final : public Index {
 public:
  FastFair(pm::Pool& pool, std::size_t node_bytes_opt, bool explicit_size, bool shared)
      : claim_(pool, "fastfair"), pool_(pool), shared_(shared) {
    pm::CategoryScope cat(pm::Category::node);
    root_ = open_root<Root>(pool_, kMagic, "fastfair", "node_bytes", node_bytes_opt, explicit_size);
    node_bytes_ = root_->param;
    slots_ = (node_bytes_ - sizeof(Header)) / sizeof(Entry);
    cap_ = slots_ - 1;  // the last slot always holds kEnd
    const auto rw = *pool_.root_word();
    base_ = pool_.at<std::byte>(rw) - rw;
    recover();
  }

  std::string name() const override { return "fastfair"; }
  Value max_value() const override { return kHole - 1; }

  void upsert(Key k, Value v) override { write(k, v, Mode::upsert); }
  bool insert(Key k, Value v) override { return write(k, v, Mode::insert); }
  bool update(Key k, Value v) override { return write(k, v, Mode::update); }

  bool remove(Key k) override {
    pm::CategoryScope cat(pm::Category::node);
    std::vector<std::uint64_t> path;
    NodeLock leaf(*this, locked_leaf(k, path));
    repair(leaf.node);
    auto* e = ents(leaf.node);
    std::size_t n = end_of(leaf.node);
    for (std::size_t i = 0; i < n; ++i) {
      if (e[i].key == k) {
        shift_left(leaf.node, i);
        return true;
      }
      if (e[i].key > k) break;
    }
    return false;
  }

  std::optional<Value> lookup(Key k) const override {
    auto leaf = descend(k, nullptr);
    for (;;) {
      leaf = move_right(leaf, k);
      const std::uint64_t v0 = read_begin(leaf);
      std::optional<Value> found;
      const auto* e = ents(leaf);
      Entry x;
      for (std::size_t i = 0; i < slots_; ++i) {
        const Slot s = read_entry(e[i], x);
        if (s == Slot::end) break;
        if (s == Slot::skip) continue;
        if (x.key == k) {  // a duplicate holds the same pair: the first will do
          found = x.val;
          break;
        }
        if (x.key > k) break;
      }
      if (!read_valid(leaf, v0)) continue;  // an entry moved left under us: read again
      const auto sib = load8(&hdr(leaf)->sibling);
      if (sib && k >= hdr(sib)->low_key) continue;  // split meanwhile: k may have moved right
      return found;
    }
  }

  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    std::size_t got = 0;
    std::vector<Entry> es;
    bool any = false;
    Key last = 0;  // a leaf split between two leaves must not repeat keys
    for (auto leaf = descend(start, nullptr); leaf && got < count;) {
      std::uint64_t sib = 0;
      for (;;) {
        const std::uint64_t v0 = read_begin(leaf);
        sib = logical(leaf, es);
        if (read_valid(leaf, v0)) break;
      }
      for (const auto& x : es) {
        if (x.key < start || (any && x.key <= last)) continue;
        if (got == count) break;
        out.emplace_back(x.key, x.val);
        ++got;
        any = true;
        last = x.key;
      }
      leaf = sib;
    }
    return got;
  }

  IndexStats stats() const override {
    IndexStats s;
    std::size_t nodes = 0, leaves = 0;
    std::vector<Entry> es;
    for (auto first = load8(&root_->tree_root); first; first = level_first_child(first)) {
      for (auto x = first; x; x = load8(&hdr(x)->sibling)) {
        ++nodes;
        if (hdr(x)->level == 0) {
          ++leaves;
          logical(x, es);
          s.records += es.size();
        }
      }
      if (hdr(first)->level == 0) break;
    }
    s.pm_bytes = nodes * pool_.allocator().block_size(root_->tree_root) +
                 pool_.allocator().block_size(*pool_.root_word());
    s.extra = {{"nodes", double(nodes)}, {"leaves", double(leaves)}};
    return s;
  }

  CheckReport check() const override;

 private:
  enum class Mode { upsert, insert, update };

  // Node offsets are never 0 here; unlike Pool::at these have no null branch, which would
  // make GCC warn about atomic accesses through a null-derived pointer.
  Header* hdr(std::uint64_t n) const { return reinterpret_cast<Header*>(base_ + n); }
  Entry* ents(std::uint64_t n) const {
    return reinterpret_cast<Entry*>(base_ + n + sizeof(Header));
  }
  std::size_t end_of(std::uint64_t n) const {
    const auto* e = ents(n);
    std::size_t i = 0;
    while (i < slots_ && e[i].val != kEnd) ++i;
    return i;
  }
  std::uint64_t level_first_child(std::uint64_t n) const {
    return hdr(n)->level ? hdr(n)->leftmost : 0;
  }

  // --- lock-free reading ---------------------------------------------------------------

  enum class Slot { end, skip, ok };
  // One entry as a pair that was in the node at one instant: value, key, value again (every
  // rewrite stores hole, key, value, so equal values bracket a key of that same write).
  static Slot read_entry(const Entry& e, Entry& out) {
    for (;;) {
      const Value v1 = load8(&e.val);
      if (v1 == kEnd) return Slot::end;
      if (v1 == kHole) return Slot::skip;
      const Key k = load8(&e.key);
      if (load8(&e.val) != v1) continue;  // rewritten meanwhile
      out = {k, v1};
      return Slot::ok;
    }
  }

  // The entries readers see: holes and duplicates skipped, and entries a crash left behind a
  // FAIR split (keys at or past the sibling's low key, which the sibling holds) cut off.
  // Returns the sibling it cut at.
  std::uint64_t logical(std::uint64_t n, std::vector<Entry>& out) const {
    out.clear();
    const auto* e = ents(n);
    const std::uint64_t sib = load8(&hdr(n)->sibling);
    Entry x;
    for (std::size_t i = 0; i < slots_; ++i) {
      const Slot s = read_entry(e[i], x);
      if (s == Slot::end) break;
      if (s == Slot::skip) continue;
      if (!out.empty() && out.back().key == x.key) continue;
      if (sib && x.key >= hdr(sib)->low_key) break;
      out.push_back(x);
    }
    return sib;
  }

  // Seqlock-style validation of a lock-free read of a node against moves to the left.
  std::uint64_t* sync(std::uint64_t n) const { return &hdr(n)->sync; }
  bool current(std::uint64_t w) const { return (w >> 32) == epoch_; }
  std::uint64_t read_begin(std::uint64_t n) const {
    for (;;) {
      const std::uint64_t w = load8(sync(n));
      if (!current(w) || !(w & kChanging)) return w;
      std::this_thread::yield();
    }
  }
  // No fences: entries are loaded with acquire and stored with release, so a reader that saw
  // an entry written inside a change also sees the version that change set.
  bool read_valid(std::uint64_t n, std::uint64_t w0) const {
    return ((load8(sync(n)) ^ w0) & ~kLocked) == 0;
  }

  std::uint64_t move_right(std::uint64_t n, Key k) const {
    for (auto s = load8(&hdr(n)->sibling); s && k >= hdr(s)->low_key; s = load8(&hdr(n)->sibling))
      n = s;
    return n;
  }

  std::uint64_t child_for(std::uint64_t n, Key k) const {
    const auto* e = ents(n);
    std::uint64_t c = hdr(n)->leftmost;
    Entry x;
    for (std::size_t i = 0; i < slots_; ++i) {
      const Slot s = read_entry(e[i], x);
      if (s == Slot::end) break;
      if (s == Slot::skip) continue;
      if (x.key > k) break;
      c = x.val;
    }
    return c;
  }

  // Root to the node of `level` that covers k, moving right where a split's parent entry is
  // missing; path[l] = the node passed on level l.
  std::uint64_t descend(Key k, std::vector<std::uint64_t>* path, std::uint32_t level = 0) const {
    auto n = load8(&root_->tree_root);
    if (path) path->assign(hdr(n)->level + 1, 0);
    for (;;) {
      n = move_right(n, k);
      if (path) (*path)[hdr(n)->level] = n;
      if (hdr(n)->level == level) return n;
      n = child_for(n, k);
    }
  }

  // --- writers' locks ------------------------------------------------------------------

  // With one thread (IndexConfig::threads == 1) no lock is taken: nothing else writes.
  void lock(std::uint64_t n) const {
    if (!shared_) return;
    auto a = std::atomic_ref<std::uint64_t>(*sync(n));
    for (;;) {
      std::uint64_t w = a.load(std::memory_order_relaxed);
      if (current(w) && (w & kLocked)) {
        std::this_thread::yield();
        continue;
      }
      const std::uint64_t want = (current(w) ? w : epoch_ << 32) | kLocked;
      if (pm::update(sync(n), [&](std::atomic_ref<std::uint64_t> x) {
            return x.compare_exchange_weak(w, want, std::memory_order_acquire);
          }))
        return;
    }
  }
  void unlock(std::uint64_t n) const {
    if (!shared_) return;
    pm::update(sync(n), [](std::atomic_ref<std::uint64_t> x) {
      x.fetch_and(~kLocked, std::memory_order_release);
    });
  }
  // Around a change that moves entries left (the lock is held): readers see the version move.
  void bump_version(std::uint64_t n) {
    const std::uint64_t w = load8(sync(n));
    pm::store_release(sync(n), (w & ~kVersionMask) | ((w + 2) & kVersionMask));
  }
  void begin_change(std::uint64_t n) { bump_version(n); }
  void end_change(std::uint64_t n) { bump_version(n); }

  struct NodeLock {  // releases a node lock on every way out, exceptions included
    const FastFair& t;
    std::uint64_t node;
    NodeLock(const FastFair& tree, std::uint64_t n) : t(tree), node(n) {}
    ~NodeLock() {
      if (node) t.unlock(node);
    }
    NodeLock(const NodeLock&) = delete;
    NodeLock& operator=(const NodeLock&) = delete;
  };

  // Locks n, then moves right with lock coupling while k belongs further right.
  std::uint64_t lock_right(std::uint64_t n, Key k) const {
    lock(n);
    for (auto s = load8(&hdr(n)->sibling); s && k >= hdr(s)->low_key; s = load8(&hdr(n)->sibling)) {
      lock(s);
      unlock(n);
      n = s;
    }
    return n;
  }
  std::uint64_t locked_leaf(Key k, std::vector<std::uint64_t>& path) const {
    return lock_right(descend(k, &path), k);
  }

  // Persists the cache line of the previous write when the next write leaves it: FAST's
  // ordering across lines (a line's stores reach PM in program order, lines do not).
  struct LineWriter {
    const void* line = nullptr;
    void touch(const void* p) {
      auto* l = reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) &
                                              ~std::uintptr_t{pm::kCacheLine - 1});
      if (line && line != l) pm::persist(line, pm::kCacheLine);
      line = l;
    }
    void done() {
      if (line) pm::persist(line, pm::kCacheLine);
      line = nullptr;
    }
  };

  void put(LineWriter& w, Entry& dst, std::uint64_t key, std::uint64_t val) {
    w.touch(&dst);
    store8(&dst.val, kHole);
    store8(&dst.key, key);
    store8(&dst.val, val);
  }

  // FAST insert at position p of a node with n < cap entries.
  void shift_right(std::uint64_t node, std::size_t p, Key k, Value v) {
    auto* e = ents(node);
    std::size_t n = end_of(node);
    LineWriter w;
    if (e[n + 1].val != kEnd) {  // garbage a truncation left behind: end the array first
      w.touch(&e[n + 1]);
      store8(&e[n + 1].val, kEnd);
    }
    for (std::size_t i = n; i > p; --i) put(w, e[i], e[i - 1].key, e[i - 1].val);
    put(w, e[p], k, v);
    w.done();
  }

  // FAST delete of entry j (also removes a hole or a duplicate left by a crash).
  void shift_left(std::uint64_t node, std::size_t j) {
    auto* e = ents(node);
    std::size_t n = end_of(node);
    LineWriter w;
    begin_change(node);
    for (std::size_t i = j; i + 1 < n; ++i) put(w, e[i], e[i + 1].key, e[i + 1].val);
    w.touch(&e[n - 1]);
    store8(&e[n - 1].val, kEnd);
    w.done();
    end_change(node);
  }

  // Tidies what a crash left in this node before writing to it: a FAIR split whose
  // truncation did not land, then a hole or a duplicate from an interrupted shift.
  void repair(std::uint64_t node) {
    auto* e = ents(node);
    if (auto sib = hdr(node)->sibling) {
      std::size_t n = end_of(node);
      for (std::size_t i = 0; i < n; ++i)
        if (e[i].val != kHole && e[i].key >= hdr(sib)->low_key) {
          begin_change(node);
          store8(&e[i].val, kEnd);
          pm::persist(&e[i].val, 8);
          end_change(node);
          break;
        }
    }
    for (bool again = true; again;) {
      again = false;
      std::size_t n = end_of(node);
      for (std::size_t i = 0; i < n; ++i) {
        if (e[i].val == kHole || (i > 0 && e[i - 1].val != kHole && e[i - 1].key == e[i].key)) {
          shift_left(node, i);
          again = true;
          break;
        }
      }
    }
  }

  bool write(Key k, Value v, Mode mode) {
    if (v > max_value())
      throw Error(Errc::invalid_argument,
                  "fastfair: value " + std::to_string(v) + " is above max_value() " +
                      std::to_string(max_value()) + " (two values mark entries in PM)");
    pm::CategoryScope cat(pm::Category::node);
    std::vector<std::uint64_t> path;
    for (;;) {
      NodeLock leaf(*this, locked_leaf(k, path));
      repair(leaf.node);
      auto* e = ents(leaf.node);
      std::size_t n = end_of(leaf.node), p = n;
      for (std::size_t i = 0; i < n; ++i) {
        if (e[i].key == k) {
          if (mode == Mode::insert) return false;
          store8(&e[i].val, v);  // an 8-byte in-place update (the DPTree paper's §4.4)
          pm::persist(&e[i].val, 8);
          return true;
        }
        if (e[i].key > k) {
          p = i;
          break;
        }
      }
      if (mode == Mode::update) return false;
      if (n < cap_) {
        shift_right(leaf.node, p, k, v);
        return true;
      }
      split(leaf, path);  // unlocks the leaf; then retry: the key goes to one of the halves
    }
  }

  // A fresh node block, every slot kEnd, flushed (the activate that follows fences it).
  std::uint64_t new_node(std::uint32_t level, Key low, std::uint64_t creator) {
    auto blk = pool_.allocator().reserve(node_bytes_);
    auto* h = hdr(blk);
    Header init{};
    init.links.prev = root_->chain.last;
    init.links.creator = creator;
    init.level = level;
    init.low_key = low;
    pm::store(h, init);
    auto* e = ents(blk);
    for (std::size_t i = 0; i < slots_; ++i) pm::store(&e[i], Entry{0, kEnd});
    return blk;
  }

  // FAIR split of a full node x (locked by `held`, unlocked on return), then the parent
  // update, which holds no lock of this level (the B-link sibling covers the gap).
  void split(NodeLock& held, std::vector<std::uint64_t>& path) {
    const std::uint64_t x = held.node;
    auto* h = hdr(x);
    auto* e = ents(x);
    std::size_t n = end_of(x), m = n / 2;
    Key sep = e[m].key;
    std::uint64_t s = 0;
    {
      std::lock_guard g(grow_mu_);  // creation to publication: one node in flight
      s = new_node(h->level, sep, x);
      auto* sh = hdr(s);
      auto* se = ents(s);
      pm::store(&sh->sync, epoch_ << 32 | kLocked);  // no write to it before x is truncated
      pm::store(&sh->sibling, h->sibling);
      std::size_t from = m;
      if (h->level) {  // the separator moves up; its child becomes the sibling's leftmost
        pm::store(&sh->leftmost, e[m].val);
        from = m + 1;
      }
      pm::store_bytes(se, e + from, (n - from) * sizeof(Entry));
      pm::flush(pool_.at<std::byte>(s), node_bytes_);
      chain_activate(pool_, &root_->chain, s);
      store8(&h->sibling, s);  // FAIR commit: the sibling is reachable
      pm::persist(&h->sibling, 8);
    }
    begin_change(x);
    store8(&e[m].val, kEnd);  // truncate the old node
    pm::persist(&e[m].val, 8);
    end_change(x);
    unlock(s);
    held.node = 0;
    unlock(x);
    insert_parent(path, h->level + 1, sep, s);
  }

  void insert_parent(std::vector<std::uint64_t>& path, std::uint32_t level, Key k,
                     std::uint64_t child) {
    if (level >= path.size()) {  // the top level split: a new root over it
      std::unique_lock g(grow_mu_);
      const auto top = load8(&root_->tree_root);
      if (hdr(top)->level + 1 == level) {
        auto r = new_node(level, 0, 0);
        pm::store(&hdr(r)->leftmost, top);  // the root is always its level's leftmost node
        pm::store(&ents(r)[0], Entry{k, child});
        pm::flush(pool_.at<std::byte>(r), node_bytes_);
        chain_activate(pool_, &root_->chain, r);
        store8(&root_->tree_root, r);
        pm::persist(&root_->tree_root, 8);
        path.push_back(r);
        return;
      }
      g.unlock();
      descend(k, &path, level);  // another writer grew the tree first: find our parent
    }
    for (;;) {
      NodeLock p(*this, lock_right(path[level], k));
      repair(p.node);
      auto* e = ents(p.node);
      std::size_t n = end_of(p.node), pos = n;
      for (std::size_t i = 0; i < n; ++i)
        if (e[i].key > k) {
          pos = i;
          break;
        }
      if (n < cap_) {
        shift_right(p.node, pos, k, child);
        return;
      }
      path[level] = p.node;
      split(p, path);
    }
  }

  [[noreturn]] void corrupt(std::uint64_t off, const std::string& problem) const {
    throw Error(Errc::corrupt, "pool '" + pool_.name() + "': fastfair node at offset " +
                                   std::to_string(off) + " " + problem +
                                   ": the pool is damaged; restore it from a copy");
  }

  // PM is untrusted: before anything follows a word of the tree, every node must be a chain
  // node (node_chain.h), every child, sibling and creator a node, children one level down,
  // siblings on the same level with no cycle, and no lock word stamped with this open's
  // epoch (readers would wait on it forever). Lookups and writes then trust the tree.
  void validate(std::uint64_t epoch) const {
    if (node_bytes_ < 128 || node_bytes_ > 4096 || (node_bytes_ & (node_bytes_ - 1)))
      corrupt(pool_.offset_of(root_), "(the root) holds node_bytes " + std::to_string(node_bytes_));
    auto order = chain_nodes(pool_, &root_->chain, node_bytes_, "fastfair");
    std::unordered_map<std::uint64_t, std::uint32_t> level;
    for (auto n : order) level[n] = hdr(n)->level;
    auto node_at = [&](std::uint64_t from, std::uint64_t to, std::int64_t want, const char* what) {
      auto it = level.find(to);
      if (it == level.end() || (want >= 0 && it->second != want))
        corrupt(from, std::string("names ") + what + " " + std::to_string(to) +
                          ", not a node of the right level");
    };
    for (auto n : order) {
      const auto* h = hdr(n);
      if (h->level > 64) corrupt(n, "has level " + std::to_string(h->level));
      if ((h->sync >> 32) == epoch) corrupt(n, "holds a lock word of an open still to come");
      if (h->links.creator) node_at(n, h->links.creator, -1, "creator");
      if (h->links.prev) node_at(n, h->links.prev, -1, "prev");
      if (h->sibling) node_at(n, h->sibling, h->level, "sibling");
      if (!h->level) continue;
      node_at(n, h->leftmost, h->level - 1, "leftmost child");
      const auto* e = ents(n);
      for (std::size_t i = 0; i < slots_ && e[i].val != kEnd; ++i)
        if (e[i].val != kHole) node_at(n, e[i].val, h->level - 1, "child");
    }
    if (root_->tree_root) node_at(pool_.offset_of(&root_->tree_root), root_->tree_root, -1, "root");
    if (root_->chain.last) node_at(pool_.offset_of(&root_->chain), root_->chain.last, -1, "last");
    // Sibling lists end: colour each node once (0 new, 1 on the current walk, 2 done).
    std::unordered_map<std::uint64_t, int> colour;
    for (auto n : order) {
      std::vector<std::uint64_t> walk;
      auto x = n;
      for (; x && !colour[x]; x = hdr(x)->sibling) {
        colour[x] = 1;
        walk.push_back(x);
      }
      if (x && colour[x] == 1) corrupt(x, "is on a cycle of sibling links");
      for (auto w : walk) colour[w] = 2;
    }
  }

  // Frees the newest node if a crash kept it from being published; makes the first leaf.
  void recover() {
    // A fresh epoch makes every lock word a crash (or a close) left in PM stale.
    epoch_ = (root_->epoch + 1) & 0xffffffff;
    if (epoch_ == 0) epoch_ = 1;
    validate(epoch_);
    pm::store(&root_->epoch, epoch_);
    pm::persist(&root_->epoch, 8);
    if (auto t = chain_recover_tail(pool_, &root_->chain)) {
      auto c = links(pool_, t)->creator;
      bool published = c ? hdr(c)->sibling == t : root_->tree_root == t;
      if (!published) chain_drop_tail(pool_, &root_->chain);
    }
    if (!root_->tree_root) {
      auto leaf = new_node(0, 0, 0);
      pm::flush(pool_.at<std::byte>(leaf), node_bytes_);
      chain_activate(pool_, &root_->chain, leaf);
      store8(&root_->tree_root, leaf);
      pm::persist(&root_->tree_root, 8);
    }
  }

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  Root* root_ = nullptr;
  std::size_t node_bytes_ = 0, slots_ = 0, cap_ = 0;
  std::byte* base_ = nullptr;  // the pool's mapping: offset 0
  std::uint64_t epoch_ = 0;
  bool shared_ = true;  // several threads may use the index: writers lock
  std::mutex grow_mu_;  // node creation through publication; the root's growth
};

CheckReport FastFair::check() const {
  CheckReport r;
  auto hex = [](std::uint64_t x) { return std::to_string(x); };
  std::set<std::uint64_t> nodes;
  std::size_t records = 0, transient = 0, unlinked = 0, levels = 0;
  std::vector<Entry> es;
  bool have_prev = false;
  Key prev_key = 0;
  std::uint64_t first = root_->tree_root;
  if (!first) r.fail("no tree root");
  std::set<std::uint64_t> referenced;  // children named by the level above
  for (std::uint32_t want = first ? hdr(first)->level + 1 : 0; first;) {
    --want;
    ++levels;
    std::set<std::uint64_t> next_ref;
    for (auto x = first; x; x = hdr(x)->sibling) {
      if (!pool_.allocator().is_live(x) || !nodes.insert(x).second) {
        r.fail("node " + hex(x) + " is not a live block or is reached twice");
        return r;
      }
      const auto* h = hdr(x);
      if (h->level != want) r.fail("node " + hex(x) + " has level " + hex(h->level));
      if (x != first && !referenced.count(x)) ++unlinked;  // a parent entry a crash lost
      if (h->sibling && hdr(h->sibling)->low_key <= h->low_key)
        r.fail("node " + hex(x) + ": sibling's low key is not above its own");
      const auto* e = ents(x);
      std::size_t n = end_of(x);
      if (n > cap_) r.fail("node " + hex(x) + " has no end mark");
      for (std::size_t i = 0; i < n; ++i)
        if (e[i].val == kHole || (i && e[i - 1].val != kHole && e[i - 1].key == e[i].key))
          ++transient;
      logical(x, es);
      for (std::size_t i = 0; i < es.size(); ++i) {
        if (i && es[i].key <= es[i - 1].key) r.fail("node " + hex(x) + " is not sorted");
        if (es[i].key < h->low_key) r.fail("node " + hex(x) + " holds a key below its low key");
      }
      if (h->level == 0) {
        for (const auto& x2 : es) {
          if (have_prev && x2.key <= prev_key) r.fail("leaf keys out of order at " + hex(x2.key));
          have_prev = true;
          prev_key = x2.key;
        }
        records += es.size();
        continue;
      }
      auto check_child = [&](std::uint64_t c, Key low) {
        if (!c || !pool_.allocator().is_live(c)) {
          r.fail("node " + hex(x) + " names a dead child");
          return false;
        }
        if (hdr(c)->low_key != low || hdr(c)->level + 1 != h->level)
          r.fail("node " + hex(x) + ": child " + hex(c) + " has the wrong low key or level");
        next_ref.insert(c);
        return true;
      };
      if (!check_child(h->leftmost, h->low_key)) return r;
      for (const auto& c : es)
        if (!check_child(c.val, c.key)) return r;
    }
    if (hdr(first)->level == 0) break;
    referenced = std::move(next_ref);
    first = hdr(first)->leftmost;
  }
  // Every node the creation chain owns is in the tree, and the allocator holds nothing else.
  std::set<std::uint64_t> chain;
  for (auto c = root_->chain.first; c; c = links(pool_, c)->next)
    if (!chain.insert(c).second || chain.size() > nodes.size() + 1) {
      r.fail("the creation chain loops");
      break;
    }
  if (chain != nodes) r.fail("the creation chain and the tree hold different nodes");
  if (root_->chain.last && !chain.count(root_->chain.last)) r.fail("chain tail hint is stale");
  std::size_t live = 0;
  pool_.allocator().for_each_live_block([&](std::uint64_t off, std::size_t) {
    ++live;
    if (off != *pool_.root_word() && !nodes.count(off))
      r.fail("live block " + hex(off) + " is not reachable (leak)");
  });
  if (live != nodes.size() + 1) r.fail("live blocks differ from the reachable blocks");
  r.facts = {{"records", double(records)},
             {"nodes", double(nodes.size())},
             {"levels", double(levels)},
             {"transient_entries", double(transient)},
             {"unlinked_nodes", double(unlinked)}};
  return r;
}

}  // namespace

std::unique_ptr<Index> make_fastfair(const IndexConfig& cfg) {
  if (!cfg.pool)
    throw Error(Errc::invalid_argument, "fastfair is persistent: pass a pool (IndexConfig.pool)");
  auto nb = option_u64(cfg, "fastfair", "node_bytes", 512, 128, 4096);
  if (nb & (nb - 1))
    throw Error(Errc::invalid_argument,
                "fastfair: node_bytes=" + std::to_string(nb) + " is not a power of two");
  return std::make_unique<FastFair>(*cfg.pool, nb, cfg.options.count("node_bytes") > 0,
                                    cfg.threads != 1);
}

}  // namespace dptree::baselines
