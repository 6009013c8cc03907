// FAST_FAIR (Hwang et al., FAST 2018) on our PM layer: the tree, with its lock-free reads,
// locks and in-node shifts here (the operation paths, inline), its splits in split.cc, opening
// and recovery in recovery.cc, check() in check.cc and its options and registration in
// fastfair_index.cc.
//
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
// read each entry's value and key once and check what they take from a pair a shift may have
// torn (quick_pass.h); past a hole they read each entry as value, key, value again (a torn pair
// is read again) and skip holes and duplicates; and they move right past a split. A writer locks
// the leaf (moving right with lock coupling), then shifts, or updates the value in place with one
// failure-atomic 8-byte store. What a lock-free reader cannot tolerate is an entry moving left
// under it (a delete's shift, a split's truncation): those bump the node's version before and
// after, and readers of a leaf retry when the version changed. The lock and version share one word
// per node (Header::sync, with the tidy mark and the level) that carries the epoch of the open that
// set it, so a lock a crash left set in PM is simply stale after reopening. Creating a node and
// publishing it is serialised by one mutex, which keeps the creation chain's one-unpublished-tail
// invariant.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "baselines/common.h"
#include "baselines/fastfair/layout.h"
#include "baselines/fastfair/quick_pass.h"
#include "baselines/node_chain.h"
#include "baselines/phase.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"

namespace dptree::baselines::fastfair {

// What the calling thread's FAST_FAIR is writing, for crash tests to name their captures:
// "split_link" and "root_link" from a new node's activation to its publication,
// "drop_tail" while the open frees an unpublished one, else "idle".
const char* current_phase();
struct FastFairPhases;
using Phase = PhaseScope<FastFairPhases>;

class FastFair final : public Index {
 public:
  // A write's descent path, node offset by level, in a fixed array on the writer's stack: a
  // heap vector per write cost a malloc and a free, a thread-local one is not safe (the crash
  // simulator runs other trees' operations inside a write's flush), and a pmr vector over a
  // stack buffer cost an out-of-line release per write (2.4% of an insert run).
  class Path {
   public:
    std::size_t size() const { return n_; }
    std::uint64_t& operator[](std::size_t i) { return at_[i]; }
    // Grows to n levels (never shrinks: see descend()). The new levels are left unset:
    // descend() sets every level from the root down to the one it stops at, and zeroing them
    // on every write was 3% of an insert's instructions (callgrind).
    void grow_to(std::size_t n) {
      check(n);
      n_ = std::max(n_, n);
    }
    void push_back(std::uint64_t node) {
      check(n_ + 1);
      at_[n_++] = node;
    }

   private:
    // Levels 0-64, the ones the open accepts (recovery.cc). Inner nodes have two children or
    // more, so a real tree stays far below: 48 levels would be 2^47 nodes.
    static constexpr std::size_t kMaxLevels = 65;
    static void check(std::size_t n) {
      if (n > kMaxLevels) throw Error(Errc::corrupt, "fastfair: the tree is deeper than 65 levels");
    }
    std::array<std::uint64_t, kMaxLevels> at_;
    std::size_t n_ = 0;
  };

  FastFair(pm::Pool& pool, std::size_t node_bytes_opt, bool explicit_size, bool shared);

  std::string name() const override { return "fastfair"; }
  Value max_value() const override { return kHole - 1; }

  void upsert(Key k, Value v) override { write(k, v, Mode::upsert); }
  bool insert(Key k, Value v) override { return write(k, v, Mode::insert); }
  bool update(Key k, Value v) override { return write(k, v, Mode::update); }

  bool remove(Key k) override {
    pm::CategoryScope cat(pm::Category::node);
    Path path;
    Spot at;
    NodeLock leaf(*this, locked_leaf(k, path, at));
    if (!at.found) return false;
    shift_left(leaf.node, at.p);
    return true;
  }

  std::optional<Value> lookup(Key k) const override {
    auto leaf = descend(k, nullptr);
    for (;;) {
      const bool own = settled(leaf);
      if (!own) leaf = move_right(leaf, k);
      const std::uint64_t v0 = read_begin(leaf);
      std::optional<Value> found;
      bool reached = false;  // an entry at or above k: k is this leaf's, if it is settled
      if (!quick_find(leaf, k, found, reached)) find(leaf, k, found, reached);
      if (!read_valid(leaf, v0)) continue;  // an entry moved left under us: read again
      if (own) {  // past the last entry the sibling may hold k: read it if so
        const std::uint64_t r = reached ? leaf : move_right(leaf, k);
        if (r == leaf) return found;
        leaf = r;
        continue;
      }
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
        if (node_level(x) == 0) {
          ++leaves;
          logical(x, es);
          s.records += es.size();
        }
      }
      if (node_level(first) == 0) break;
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
  std::uint32_t node_level(std::uint64_t n) const { return level_of(load8(sync(n))); }
  std::uint64_t level_first_child(std::uint64_t n) const {
    return node_level(n) ? hdr(n)->leftmost : 0;
  }
  // The creation chain's word of node n (layout.h: the end-mark slot's key).
  std::uint64_t* next_word(std::uint64_t n) const {
    return reinterpret_cast<std::uint64_t*>(base_ + n + next_at_);
  }

  // --- lock-free reading ---------------------------------------------------------------

  static std::uint64_t load_word(const std::uint64_t* p) { return load8(p); }
  static Slot read_entry(const Entry& e, Entry& out) {
    return fastfair::read_entry(e, out, load_word);
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
  // The sync word of this open for a node of `level`: unlocked, not tidied.
  std::uint64_t fresh_sync(std::uint32_t level) const {
    return epoch_ << 32 | std::uint64_t{level} << kLevelShift;
  }
  // w, or a fresh word keeping w's level when w is of an earlier open.
  std::uint64_t of_this_open(std::uint64_t w) const {
    return current(w) ? w : fresh_sync(level_of(w));
  }
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

  // The child whose range holds k; *reached: an entry above k was seen.
  std::uint64_t child_for(std::uint64_t n, Key k, bool* reached = nullptr) const {
    const auto* e = ents(n);
    std::uint64_t c = hdr(n)->leftmost;
    Entry x;
    for (std::size_t i = 0; i < slots_; ++i) {
      const Slot s = read_entry(e[i], x);
      if (s == Slot::end) break;
      if (s == Slot::skip) continue;
      if (x.key > k) {
        if (reached) *reached = true;
        break;
      }
      c = x.val;
    }
    return c;
  }

  // A leaf's entry for k, each entry read whole (read_entry); *reached as for child_for().
  void find(std::uint64_t leaf, Key k, std::optional<Value>& found, bool& reached) const {
    const auto* e = ents(leaf);
    Entry x;
    for (std::size_t i = 0; i < slots_; ++i) {
      const Slot s = read_entry(e[i], x);
      if (s == Slot::end) break;
      if (s == Slot::skip) continue;
      if (x.key >= k) {  // a duplicate holds the same pair: the first will do
        if (x.key == k) found = x.val;
        reached = true;
        return;
      }
    }
  }

  // The quick passes (quick_pass.h) over this tree's nodes.
  bool quick_find(std::uint64_t leaf, Key k, std::optional<Value>& found, bool& reached) const {
    Value v = 0;
    bool has = false;
    if (!fastfair::quick_find(ents(leaf), k, v, has, reached, load_word)) return false;
    if (has) found = v;
    return true;
  }
  std::uint64_t quick_child(std::uint64_t n, Key k, bool& reached) const {
    return fastfair::quick_child(ents(n), hdr(n)->leftmost, k, reached, load_word,
                                 [this](std::uint64_t c) { return hdr(c)->low_key; });
  }

  // Root to the node of `level` that covers k, moving right where a split's parent entry is
  // missing; path[l] = the node passed on level l.
  std::uint64_t descend(Key k, Path* path, std::uint32_t level = 0) const {
    auto n = load8(&root_->tree_root);
    // Levels below `level` keep what the caller holds there: a split that finds the tree grown
    // above it descends again to its parent's level, and the splits below it still use theirs.
    if (path) path->grow_to(node_level(n) + 1);
    for (;;) {
      const bool own = settled(n);
      if (!own) n = move_right(n, k);
      const std::uint32_t lv = node_level(n);
      if (path) (*path)[lv] = n;
      if (lv == level) return n;  // a settled node: its caller looks at the sibling if need be
      bool reached = false;
      std::uint64_t c = quick_child(n, k, reached);
      if (!c) {
        reached = false;
        c = child_for(n, k, &reached);
      }
      if (!reached && own) {  // past the last entry: the sibling may cover k
        const std::uint64_t r = move_right(n, k);
        if (r != n) {
          n = r;
          continue;
        }
      }
      n = c;
    }
  }

  // A node this open tidied or created holds no crash leftovers, so an entry at or above k
  // shows that k is below the sibling's low key, and the sibling's header (one cache miss per
  // level) is not read; only past the last entry is it. With several threads, the one time a
  // settled node holds entries at or past its sibling's low key is a split between publishing
  // the sibling and truncating the node: those entries are then copies of the sibling's, which
  // stays locked until the truncation, so either node gives the same answer (a leaf reader
  // that overlaps the truncation sees the version move and reads again). docs/peers.md.
  bool settled(std::uint64_t n) const {
    const std::uint64_t w = load8(sync(n));
    return current(w) && (w & kTidied);
  }
  // Where k goes in a tidied node (sorted, no hole), in one pass, as the original's insert
  // finds it in its one backward pass: the entry count n, the first entry p at or above k,
  // and whether that entry is k.
  struct Spot {
    std::size_t n = 0, p = 0;
    bool found = false;
  };
  Spot spot(std::uint64_t node, Key k) const {
    const auto* e = ents(node);
    Spot at;
    std::size_t i = 0;  // the last slot ends both loops (quick_pass.h)
    while (e[i].val != kEnd && e[i].key < k) ++i;
    at.p = i;
    at.found = e[i].val != kEnd && e[i].key == k;
    while (e[i].val != kEnd) ++i;
    at.n = i;
    return at;
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
      const std::uint64_t want = of_this_open(w) | kLocked;
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
  // The leaf that holds k, locked and tidied, and k's spot in it. A locked, tidied node holds
  // only keys below its sibling's low key, so an entry at or above k shows that the sibling
  // does not cover k; only past the last entry is the sibling's low key read, and the lock
  // then moves right by lock coupling.
  std::uint64_t locked_leaf(Key k, Path& path, Spot& at) {
    std::uint64_t n = descend(k, &path);
    if (!shared_ && settled(n)) {  // one thread: no lock, and nothing to tidy
      at = spot(n, k);
      if (at.p < at.n || move_right(n, k) == n) return n;
    }
    lock(n);
    for (;;) {
      try {
        tidy(n);
      } catch (...) {
        unlock(n);
        throw;
      }
      at = spot(n, k);
      if (at.p < at.n) return n;
      const std::uint64_t s = load8(&hdr(n)->sibling);
      if (!s || k < hdr(s)->low_key) return n;
      lock(s);
      unlock(n);
      n = s;
    }
  }

  // Writes a node's words in program order and persists a cache line when the next write
  // leaves it: FAST's ordering across lines (a line's stores reach PM in program order, lines
  // do not). An entry is rewritten as hole, key, value (above). Inline, the persists are
  // clwb + sfence in the loop and the stores plain: in `pmem` mode no store is tracked.
  template <bool Inline>
  class LineWriter {
   public:
    LineWriter() = default;
    LineWriter(const LineWriter&) = delete;
    LineWriter& operator=(const LineWriter&) = delete;
    ~LineWriter() {
      if (Inline && lines_) pm::count_persists(lines_, lines_);
    }
    void store(std::uint64_t* p, std::uint64_t v) {
      touch(p);
      raw(p, v);
    }
    void put(Entry& dst, std::uint64_t key, std::uint64_t val) {
      touch(&dst);
      raw(&dst.val, kHole);
      raw(&dst.key, key);
      raw(&dst.val, val);
    }
    void done() {
      if (line_) persist(line_);
      line_ = nullptr;
    }

   private:
    void touch(const void* p) {
      auto* l = reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) &
                                              ~std::uintptr_t{pm::kCacheLine - 1});
      if (line_ && line_ != l) persist(line_);
      line_ = l;
    }
    void persist(const void* line) {
      pm::persist_line(line, Inline);
      if constexpr (Inline) ++lines_;
    }
    static void raw(std::uint64_t* p, std::uint64_t v) {
      if constexpr (Inline)
        std::atomic_ref<std::uint64_t>(*p).store(v, std::memory_order_release);
      else
        store8(p, v);
    }
    const void* line_ = nullptr;
    std::uint64_t lines_ = 0;
  };
  // Runs write(w) with the writer the process's PM mode allows, then persists its last line.
  template <class Write>
  static void write_lines(Write&& write) {
    if (pm::inline_persist()) {
      LineWriter<true> w;
      write(w);
      w.done();
    } else {
      LineWriter<false> w;
      write(w);
      w.done();
    }
  }

  // FAST insert at position p of a node with n < cap entries.
  void shift_right(std::uint64_t node, std::size_t n, std::size_t p, Key k, Value v) {
    auto* e = ents(node);
    write_lines([&](auto& w) {
      if (e[n + 1].val != kEnd) w.store(&e[n + 1].val, kEnd);  // left behind by a truncation
      for (std::size_t i = n; i > p; --i) w.put(e[i], e[i - 1].key, e[i - 1].val);
      w.put(e[p], k, v);
    });
  }

  // FAST delete of entry j (also removes a hole or a duplicate left by a crash).
  void shift_left(std::uint64_t node, std::size_t j) {
    auto* e = ents(node);
    const std::size_t n = end_of(node);
    begin_change(node);
    write_lines([&](auto& w) {
      for (std::size_t i = j; i + 1 < n; ++i) w.put(e[i], e[i + 1].key, e[i + 1].val);
      w.store(&e[n - 1].val, kEnd);
    });
    end_change(node);
  }

  // repair() once per node and open: a node this open already tidied, or created, holds no
  // crash leftovers (a write completes under its lock), and the scan is a quarter of an
  // insert's instructions.
  void tidy(std::uint64_t node) {
    if (settled(node)) return;
    repair(node);
    // Not written back (layout.h); released: lock-free readers trust a node marked tidy
    // (settled()). The node is locked, or the index has one thread: no other store to the word.
    pm::store_release(sync(node), of_this_open(load8(sync(node))) | kTidied);
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
    Path path;
    for (;;) {
      Spot at;
      NodeLock leaf(*this, locked_leaf(k, path, at));
      if (at.found) {
        if (mode == Mode::insert) return false;
        auto* e = ents(leaf.node);
        store8(&e[at.p].val, v);  // an 8-byte in-place update (the DPTree paper's §4.4)
        pm::persist(&e[at.p].val, 8);
        return true;
      }
      if (mode == Mode::update) return false;
      if (at.n < cap_) {
        shift_right(leaf.node, at.n, at.p, k, v);
        return true;
      }
      split(leaf, path);  // unlocks the leaf; then retry: the key goes to one of the halves
    }
  }

  // --- growth (split.cc) -----------------------------------------------------------------

  std::uint64_t new_node(std::uint32_t level, Key low);
  void split(NodeLock& held, Path& path);
  void insert_parent(Path& path, std::uint32_t level, Key k, std::uint64_t child);

  // --- open (recovery.cc) and check (check.cc) --------------------------------------------

  [[noreturn]] void corrupt(std::uint64_t off, const std::string& problem) const;
  std::vector<std::uint64_t> validate(std::uint64_t epoch) const;
  void recover();
  bool published(const std::vector<std::uint64_t>& order, std::uint64_t t) const;
  void drop_tail(const std::vector<std::uint64_t>& order);
  void chain_link(std::uint64_t blk);
  struct Checker;

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  Root* root_ = nullptr;
  std::size_t node_bytes_ = 0, slots_ = 0, cap_ = 0;
  std::size_t next_at_ = 0;    // the chain word's place in a node (next_word)
  std::byte* base_ = nullptr;  // the pool's mapping: offset 0
  std::uint64_t epoch_ = 0;
  bool shared_ = true;      // several threads may use the index: writers lock
  std::mutex grow_mu_;      // node creation through publication; the root's growth
  std::uint64_t tail_ = 0;  // the newest node (the chain's tail): under grow_mu_ or in the open
};

}  // namespace dptree::baselines::fastfair
