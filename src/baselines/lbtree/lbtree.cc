// LB+-Tree (Liu, Chen, Wang, PVLDB 13(7), 2020): a B+-tree with DRAM inner nodes over
// 256-byte PM leaves (256 B is 3DXPoint's internal access size).
//
// Leaf: four cache lines. Line 0 starts with the header: a 14-bit bitmap of valid slots, the
// alternate-sibling bit and 14 one-byte fingerprints; then 14 unsorted 16-byte entries
// (3 in line 0, 4 + 4 + 3 in lines 1-3) and two sibling pointers at the end of line 3.
//   - Insert, entry moving: if line 0 has a free slot the entry, its fingerprint and the new
//     bitmap go into line 0 and that one line is flushed; otherwise the new entry and as many
//     line-0 entries as fit are written into the emptiest other line (flushed first), then the
//     header frees their line-0 slots (second flush), so the next inserts hit line 0 again.
//   - Log-less split: the upper half goes to a new leaf's upper slots (its line 0 stays free),
//     with the new key if it belongs there; the new leaf and the *inactive* sibling pointer
//     naming it are flushed under one fence; one 8-byte header store then drops the moved slots
//     from the bitmap and flips the alternate bit, making the new leaf reachable. No log.
//   - Inner nodes are a volatile B+-tree of interleaved keys and children (inner_nodes.h) from a
//     leaf's lower bound to the leaf; recovery walks the leaf chain and rebuilds them.
// What it assumes: a write-back carries the whole line as it stood (stores to one line reach
// PM in program order), so the line-0 insert needs one flush; tested under the simulator's
// 64-byte unit.
//
// Concurrency, the paper's scheme without HTM (no RTM code here; see docs/indexes.md): the
// paper runs the inner-node search and the leaf's lock-bit check in one hardware
// transaction. Here a reader-writer lock stands in for the transaction: every operation holds
// it shared, a split (the only change to the inner nodes) holds it alone (writer first). Leaves are
// locked by writers (a DRAM version lock per leaf, striped by the leaf's address, instead of the
// lock bit in the PM header, so a lock never dirties a PM line and recovery has none to clear);
// readers do not lock: they read the leaf optimistically and retry if its version moved.
// Departures (docs/indexes.md): leaves from a slab arena, empty leaves are kept.
#include "baselines/lbtree/lbtree.h"

#include <immintrin.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>  // std::shared_lock
#include <string>

#include "baselines/common.h"
#include "baselines/lbtree/inner_nodes.h"
#include "baselines/slab/slab_arena.h"
#include "baselines/slab/version_lock.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/registry.h"
#include "registry/index_table.h"

namespace dptree::baselines {
namespace {

constexpr std::uint64_t kMagic = 0x31454552'5442424cull;  // "LBBTREE1"
constexpr int kSlots = 14;
constexpr std::uint16_t kAllSlots = (1u << kSlots) - 1;
constexpr std::uint16_t kAltBit = 1u << 15;
// Slots of each cache line: line 0 holds 0-2, line 1 3-6, line 2 7-10, line 3 11-13.
constexpr int kLineFirst[5] = {0, 3, 7, 11, 14};
constexpr std::uint16_t line_mask(int line) {
  return static_cast<std::uint16_t>(((1u << kLineFirst[line + 1]) - 1) &
                                    ~((1u << kLineFirst[line]) - 1));
}

struct Entry {
  Key key;
  Value value;
};

// A leaf's 16-byte header as two words: bytes 0-1 the bitmap (valid slots in bits 0-13,
// kAltBit: which next[] is live), byte 2 + s slot s's fingerprint. A writer builds the new
// header in registers and stores whole words, as the paper's code does (one store where a
// line-0 insert changes a fingerprint and the bitmap, not one per field).
struct Head {
  std::uint64_t w[2];

  std::uint16_t bits() const { return static_cast<std::uint16_t>(w[0]); }
  std::uint16_t valid() const { return bits() & kAllSlots; }
  void set_bits(unsigned b) { w[0] = (w[0] & ~std::uint64_t{0xffff}) | (b & 0xffff); }
  // The word is chosen by a compare, not an index, so that both stay in registers.
  std::uint8_t fp(int s) const { return static_cast<std::uint8_t>(word(s) >> shift(s)); }
  void set_fp(int s, std::uint8_t f) {
    const std::uint64_t mask = std::uint64_t{0xff} << shift(s);
    const std::uint64_t v = (word(s) & ~mask) | std::uint64_t{f} << shift(s);
    if (s < 6)
      w[0] = v;
    else
      w[1] = v;
  }

 private:
  std::uint64_t word(int s) const { return s < 6 ? w[0] : w[1]; }
  static int shift(int s) { return 8 * ((s + 2) % 8); }
};

struct alignas(256) Leaf {
  std::uint64_t head[2];  // Head's words
  Entry ent[kSlots];
  std::uint64_t next[2];  // alternate sibling pointers (§ log-less split)

  // Concurrent readers: the header and entries are read with ld() (writers store with st()).
  Head header() const { return {{ld(head[0]), ld(head[1])}}; }
  std::uint16_t bits() const { return static_cast<std::uint16_t>(ld(head[0])); }
  std::uint16_t valid() const { return bits() & kAllSlots; }
  std::uint64_t sibling() const { return next[(bits() & kAltBit) ? 1 : 0]; }
};
static_assert(sizeof(Leaf) == 256);
static_assert(offsetof(Leaf, ent) == 16 && offsetof(Leaf, next) == 240);

struct alignas(64) Root {
  std::uint64_t magic;
  std::uint64_t slab_size;
  std::uint64_t leaf_dir;  // SlabArena directory of the leaves
  std::uint64_t head;      // the leftmost leaf (never changes once created)
  std::uint64_t pad[4];
};
static_assert(sizeof(Root) == 64);

std::uint8_t fingerprint(Key k) {
  return static_cast<std::uint8_t>((k * 0x9E3779B97F4A7C15ull) >> 56);
}

class LBTree final : public PutIndex<LBTree> {
  friend class PutIndex<LBTree>;  // its name, upsert, insert and update
  static constexpr const char* kName = "lbtree";

 public:
  LBTree(pm::Pool& pool, bool shared) : claim_(pool, kName), pool_(pool), shared_(shared) {
    inner_mu_.set_on(shared_);
    root_ = static_cast<Root*>(open_arena_root(pool, sizeof(Root), kMagic, kName));
    leaves_ = std::make_unique<SlabArena>(pool, &root_->leaf_dir, sizeof(Leaf), root_->slab_size);
    recover();
  }

  bool remove(Key k) override {
    std::shared_lock inner(inner_mu_);
    Leaf* l = leaf_for(k);
    auto g = write_lock(l);
    int s = find(*l, k);
    if (s < 0) return false;
    pm::CategoryScope cat(pm::Category::node);
    st(l->head[0], l->head[0] & ~(std::uint64_t{1} << s));  // one 8-byte header word
    pm::persist(l, 8);
    add(records_, -1);
    return true;
  }

  std::optional<Value> lookup(Key k) const override {
    if (!shared_) {  // one thread: no lock, and no writer can move the entry
      const Leaf* l = leaf_for(k);
      const int s = find(*l, k);
      return s >= 0 ? std::optional<Value>(l->ent[s].value) : std::nullopt;
    }
    return lookup_shared(k);
  }

 private:
  // Apart, so that the one-thread lookup above saves no registers for the lock and the retry.
  [[gnu::noinline]] std::optional<Value> lookup_shared(Key k) const {
    std::shared_lock inner(inner_mu_);
    const Leaf* l = leaf_for(k);
    const VersionLock& lk = lock_of(l);
    for (;;) {
      std::uint64_t v = lk.read_begin();
      int s = find(*l, k);
      std::optional<Value> r;
      if (s >= 0) r = ld(l->ent[s].value);
      if (lk.read_valid(v)) return r;
    }
  }

 public:
  // Holds the inner lock shared throughout, so no split moves entries under it; each leaf is
  // read optimistically (a consistent copy of its valid entries).
  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    std::shared_lock inner(inner_mu_);
    std::size_t n = 0;
    std::vector<KV> buf;
    for (const Leaf* l = leaf_for(start); l && n < count; l = leaf(l->sibling())) {
      const VersionLock& lk = lock_of(l);
      for (;;) {
        std::uint64_t v = lk.read_begin();
        buf.clear();
        for (std::uint16_t b = l->valid(); b; b &= b - 1) {
          const Entry& e = l->ent[std::countr_zero(b)];
          Key key = ld(e.key);
          if (key >= start) buf.emplace_back(key, ld(e.value));
        }
        if (lk.read_valid(v)) break;
      }
      std::sort(buf.begin(), buf.end());  // leaves are unsorted
      for (std::size_t i = 0; i < buf.size() && n < count; ++i, ++n) out.push_back(buf[i]);
    }
    return n;
  }

  IndexStats stats() const override {
    IndexStats s;
    std::shared_lock inner(inner_mu_);
    s.records = records_.load(std::memory_order_relaxed);
    s.dram_bytes = inner_.memory_bytes() + sizeof(locks_);
    s.pm_bytes = pool_.allocator().block_size(*pool_.root_word()) + leaves_->pm_bytes();
    s.extra = {{"leaves", double(leaves_->used_slots())},
               {"splits", double(splits_)},
               {"entry_moves", double(moves_.load(std::memory_order_relaxed))}};
    return s;
  }

  CheckReport check() const override {
    CheckReport r;
    std::unique_lock inner(inner_mu_);
    for (const auto& p : inner_.check()) r.fail("inner nodes: " + p);
    std::set<std::uint64_t> chain;
    std::size_t records = 0, leaves = 0;
    bool any = false;
    Key prev_max = 0;
    for (std::uint64_t off = root_->head; off && r.problems.size() < 20;
         off = leaf(off)->sibling()) {
      std::string at = "leaf " + std::to_string(off);
      if (!leaves_->is_slot(off) || !chain.insert(off).second) {
        r.fail(at + " is not a leaf slot or is reached twice");
        break;
      }
      if (!leaves_->is_used(off)) r.fail(at + " is free in the arena");
      ++leaves;
      const Leaf& l = *leaf(off);
      const Head h = l.header();
      if (h.bits() & ~(kAllSlots | kAltBit)) r.fail(at + " has stray header bits");
      std::vector<Key> keys;
      for (std::uint16_t b = h.valid(); b; b &= b - 1) {
        int s = std::countr_zero(b);
        Key k = l.ent[s].key;
        keys.push_back(k);
        if (h.fp(s) != fingerprint(k)) r.fail(at + " slot " + std::to_string(s) + " fingerprint");
        if (route(k) != off)
          r.fail(at + ": key " + std::to_string(k) + " is not routed to its leaf");
      }
      std::sort(keys.begin(), keys.end());
      if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) r.fail(at + " repeats a key");
      if (!keys.empty()) {
        if (any && keys.front() <= prev_max) r.fail(at + " overlaps the leaf before it");
        any = true;
        prev_max = keys.back();
      }
      records += keys.size();
    }
    inner_.for_each([&](Key, std::uint64_t off) {
      if (!chain.contains(off))
        r.fail("inner nodes name leaf " + std::to_string(off) + " outside the chain");
    });
    if (records != records_.load())
      r.fail("record count " + std::to_string(records_.load()) + ", leaves hold " +
             std::to_string(records));
    if (chain.size() != leaves_->used_slots())
      r.fail("arena uses " + std::to_string(leaves_->used_slots()) + " leaves, chain has " +
             std::to_string(chain.size()));
    check_arena_blocks(pool_, {leaves_.get()}, r);
    r.facts = {{"records", double(records)},
               {"leaves", double(leaves)},
               {"inner_height", double(inner_.height())}};
    return r;
  }

 private:
  const Leaf* leaf(std::uint64_t off) const { return pool_.at<Leaf>(off); }
  Leaf* leaf(std::uint64_t off) { return pool_.at<Leaf>(off); }
  std::uint64_t route(Key k) const { return inner_.find(k); }
  // The leaf's four lines are loaded together: a lookup reads the header line (bitmap,
  // fingerprints) and then the entry's line, two misses in a row without the prefetch.
  Leaf* leaf_for(Key k) const { return fetch(route(k)); }
  // The same, noting the inner nodes passed: a split inserts its separator along them.
  Leaf* leaf_for(Key k, LBInnerNodes::Path& path) const { return fetch(inner_.find(k, path)); }
  Leaf* fetch(std::uint64_t off) const {
    auto* l = pool_.at<Leaf>(off);
    for (int line = 0; line < 4; ++line)
      __builtin_prefetch(reinterpret_cast<const char*>(l) + 64 * line);
    return l;
  }
  // A counter's change: an atomic add when threads share the index; with one thread a load and
  // a store, as a locked add right after a persist waits for the flush to complete.
  void add(std::atomic<std::size_t>& c, long d) const {
    if (shared_)
      c.fetch_add(static_cast<std::size_t>(d), std::memory_order_relaxed);
    else
      c.store(c.load(std::memory_order_relaxed) + static_cast<std::size_t>(d),
              std::memory_order_relaxed);
  }
  // A leaf's lock: one of a fixed table, chosen by address (a writer holds one at a time).
  // A writer's hold on a leaf's lock (none when one thread uses the index).
  std::unique_lock<VersionLock> write_lock(const Leaf* l) const {
    std::unique_lock g(lock_of(l), std::defer_lock);
    if (shared_) g.lock();
    return g;
  }
  VersionLock& lock_of(const Leaf* l) const {
    return locks_[(reinterpret_cast<std::uintptr_t>(l) >> 8) % locks_.size()];
  }

  // The paper's leaf search: the header's 14 fingerprints are compared with k's at once (one
  // SSE2 compare of line 0's first 16 bytes), and only the valid slots whose fingerprint
  // matches, one on average, have their key read.
  static int find(const Leaf& l, Key k) {
    const std::uint64_t lo = ld(l.head[0]), hi = ld(l.head[1]);  // bitmap, fingerprints
    const __m128i head = _mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo));
    const __m128i want = _mm_set1_epi8(static_cast<char>(fingerprint(k)));
    const auto eq = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(head, want)));
    for (unsigned m = (eq >> 2) & static_cast<unsigned>(lo) & kAllSlots; m; m &= m - 1) {
      const int s = std::countr_zero(m);
      if (ld(l.ent[s].key) == k) return s;
    }
    return -1;
  }

  bool put(Key k, Value v, bool may_insert, bool may_update) {
    return shared_ ? put_shared(k, v, may_insert, may_update)
                   : put_alone(k, v, may_insert, may_update);
  }

  // put() among threads. Out of line, so that the one-thread path inlined into put() keeps
  // nothing in registers or on the stack for the locks and the retry.
  [[gnu::noinline]] bool put_shared(Key k, Value v, bool may_insert, bool may_update) {
    pm::CategoryScope cat(pm::Category::node);
    LBInnerNodes::Path path;
    for (;;) {
      {
        std::shared_lock inner(inner_mu_);
        Leaf* l = leaf_for(k, path);
        auto g = write_lock(l);
        int s = find(*l, k);
        if (s >= 0) {
          if (!may_update) return false;
          set_value(l, s, v);
          return true;
        }
        if (!may_insert) return false;
        if (l->valid() != kAllSlots) {
          add(records_, 1);  // before the persists: nothing after them waits on the fence
          insert_into(l, k, v);
          return true;
        }
      }
      // A full leaf among threads: split it with the inner nodes to ourselves (the paper's
      // HTM fallback path), after looking again, since another writer may have come first.
      std::unique_lock inner(inner_mu_);
      Leaf* l = leaf_for(k, path);
      if (find(*l, k) >= 0 || l->valid() != kAllSlots) continue;
      split_insert(l, k, v, path);
      add(records_, 1);
      return true;
    }
  }

  // put() with one thread: no lock and no retry, and the descent just made is a split's. Its
  // own body, so that a one-thread insert runs as few instructions as the paper's code: they
  // stand between one insert's misses and the next one's, and fewer let the core overlap more
  // of them (docs/peers.md, LB+-Tree). No CategoryScope: each persist below names the node
  // category itself.
  bool put_alone(Key k, Value v, bool may_insert, bool may_update) {
    LBInnerNodes::Path path;
    Leaf* l = leaf_for(k, path);
    const int s = find(*l, k);
    if (s >= 0) {
      if (!may_update) return false;
      set_value(l, s, v);
      return true;
    }
    if (!may_insert) return false;
    add(records_, 1);
    if (l->valid() != kAllSlots)
      insert_into(l, k, v);
    else
      split_insert(l, k, v, path);
    return true;
  }

  // An update of slot s's value in place: one 8-byte store, persisted.
  static void set_value(Leaf* l, int s, Value v) {
    const bool inl = charge_inline(1);
    st(l->ent[s].value, v);
    persist_leaf_line(&l->ent[s].value, inl);
  }

  // Where persist() is exactly clwb + sfence (pm::inline_persist(), taken once per insert as
  // `inl`), an insert issues them inline and charges them to the counters before its first
  // flush: a call after a fence saves registers to the stack, and those stores wait behind the
  // fence with the write-back (docs/pm-layer.md). Elsewhere (`sim` included) persist() runs.
  static bool charge_inline(std::uint64_t lines, std::uint64_t fences) {
    const bool inl = pm::inline_persist();
    if (inl) pm::count_persists(lines, fences, pm::Category::node);
    return inl;
  }
  static bool charge_inline(std::uint64_t lines) { return charge_inline(lines, lines); }
  // The line holding p (a word of a leaf), persisted inline where `inl`, else by persist()
  // charged to the node category.
  static void persist_leaf_line(const void* p, bool inl) {
    pm::persist_line(p, inl, pm::Category::node);
  }
  // Free slots of a line (at most four), without a popcount call (no -mpopcnt in the build).
  static int free_in_line(std::uint16_t valid, int line) {
    static constexpr std::uint8_t kCount[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};
    return kCount[(~valid & line_mask(line)) >> kLineFirst[line]];
  }

  void insert_into(Leaf* l, Key k, Value v) {
    Head h = l->header();
    const auto free0 = static_cast<std::uint16_t>(~h.valid() & line_mask(0));
    if (!free0) return move_insert(l, h, k, v);
    // The common case: entry, fingerprint and bitmap all in line 0 (the fingerprints of
    // slots 0-2 share the bitmap's word), one line flushed.
    const bool inl = charge_inline(1);
    int s = std::countr_zero(free0);
    st(l->ent[s].key, k);
    st(l->ent[s].value, v);
    h.set_fp(s, fingerprint(k));
    h.set_bits(h.bits() | 1u << s);
    st(l->head[0], h.w[0]);
    persist_leaf_line(l, inl);
  }
  // Entry moving (line 0 full): the emptiest other line takes the new entry and line-0
  // entries. Out of line, so the line-0 insert inlined into put() saves no registers for it.
  [[gnu::noinline]] void move_insert(Leaf* l, Head h, Key k, Value v) {
    const std::uint16_t valid = h.valid();
    const bool inl = charge_inline(2);
    int best = 1, best_free = -1;
    for (int line = 1; line < 4; ++line) {
      const int f = free_in_line(valid, line);
      if (f > best_free) best = line, best_free = f;
    }
    auto free_l = static_cast<std::uint16_t>(~valid & line_mask(best));
    unsigned set = 0, cleared = 0;
    int s = std::countr_zero(free_l);
    free_l &= free_l - 1;
    st(l->ent[s].key, k);
    st(l->ent[s].value, v);
    h.set_fp(s, fingerprint(k));
    set |= 1u << s;
    for (int from = 0; from < 3 && free_l; ++from, free_l &= free_l - 1) {
      int to = std::countr_zero(free_l);
      st(l->ent[to].key, l->ent[from].key);
      st(l->ent[to].value, l->ent[from].value);
      h.set_fp(to, h.fp(from));
      set |= 1u << to;
      cleared |= 1u << from;
    }
    persist_leaf_line(&l->ent[kLineFirst[best]], inl);  // the moved copies, still invisible
    // Header: only fingerprints of slots the old bitmap leaves invalid changed, so the words
    // may land in either order; the bitmap's word commits.
    h.set_bits((h.bits() | set) & ~cleared);
    st(l->head[1], h.w[1]);
    st(l->head[0], h.w[0]);
    persist_leaf_line(l, inl);
    add(moves_, 1);
  }

  // Log-less split (the paper's Algorithm 2) of a full leaf, inserting k: the upper seven
  // entries go to a new leaf's slots 7-13, so its line 0 stays free for the next inserts; k
  // goes with them when it is above the split key. The new leaf and the inactive sibling
  // pointer naming it are flushed under one fence, then one 8-byte header store (bitmap minus
  // the moved slots, alternate bit flipped) commits the split. A k below the split key is
  // inserted into the old leaf afterwards. `path`: the descent that found l.
  [[gnu::noinline]] void split_insert(Leaf* l, Key k, Value v, const LBInnerNodes::Path& path) {
    pm::CategoryScope cat(pm::Category::node);
    // Only the split key and which entries lie above it matter (a leaf is unsorted): select
    // the median over the keys copied out, rather than sort the slots by their keys in PM.
    Key keys[kSlots];
    int order[kSlots];
    for (int i = 0; i < kSlots; ++i) keys[i] = l->ent[i].key, order[i] = i;
    constexpr int kKeep = kSlots / 2;
    std::nth_element(order, order + kKeep, order + kSlots,
                     [&](int a, int b) { return keys[a] < keys[b]; });
    const Key split_key = keys[order[kKeep]];
    const std::uint64_t n_off = leaves_->alloc();
    Leaf* n = leaf(n_off);
    const Head h = l->header();
    // The new leaf is written in place: only its valid slots, header and live sibling
    // pointer are read before a later write sets them, so the rest may hold anything.
    Head nh{};
    unsigned moved = 0;
    for (int i = kKeep; i < kSlots; ++i) {
      st(n->ent[i].key, l->ent[order[i]].key);
      st(n->ent[i].value, l->ent[order[i]].value);
      nh.set_fp(i, h.fp(order[i]));
      moved |= 1u << order[i];
    }
    unsigned nbits = kAllSlots & ~((1u << kKeep) - 1);
    if (k > split_key) {
      st(n->ent[kKeep - 1].key, k);
      st(n->ent[kKeep - 1].value, v);
      nh.set_fp(kKeep - 1, fingerprint(k));
      nbits |= 1u << (kKeep - 1);
    }
    nh.set_bits(nbits);
    st(n->head[0], nh.w[0]);
    st(n->head[1], nh.w[1]);
    st(n->next[0], l->sibling());
    const int alt = (h.bits() & kAltBit) ? 1 : 0;
    st(l->next[1 - alt], n_off);
    // The new leaf and the inactive sibling pointer under one fence (inline where persist()
    // is clwb + sfence, as an insert's line is), then the commit's line: 6 lines, 2 fences.
    const bool inl = charge_inline(6, 2);
    if (inl) {
      for (int line = 0; line < 4; ++line)
        pm::flush_line_inline(reinterpret_cast<const char*>(n) + 64 * line);
      pm::flush_line_inline(&l->next[1 - alt]);
      pm::fence_inline();
    } else {
      pm::flush(n, sizeof(Leaf));
      pm::flush(&l->next[1 - alt], 8);
      pm::fence();
    }
    Head committed = h;  // bitmap minus the moved slots, alternate bit flipped: the commit
    committed.set_bits((h.bits() & ~moved) ^ kAltBit);
    st(l->head[0], committed.w[0]);
    persist_leaf_line(l, inl);
    if (k < split_key) insert_into(l, k, v);
    inner_.insert_along(path, split_key, n_off);  // above l's smallest key: no range starts there
    ++splits_;
  }

  // Walks the leaf chain from the leftmost leaf, rebuilds the inner nodes (a leaf's lower
  // bound becomes its smallest key; empty leaves get no entry and are skipped by routing) and
  // the arena's used slots. Writes only the first leaf of a fresh pool (idempotent).
  void recover() {
    pm::CategoryScope cat(pm::Category::node);
    leaves_->open();
    if (root_->head == 0) {
      std::uint64_t off = leaves_->alloc();
      pm::fill_bytes(leaf(off), 0, sizeof(Leaf));
      pm::persist(leaf(off), sizeof(Leaf));
      pm::store(&root_->head, off);
      pm::persist(&root_->head, 8);
      leaves_->open();
    }
    inner_.reset(root_->head);  // the leftmost leaf covers every key below the next one
    records_ = 0;               // single-threaded: the constructor
    for (std::uint64_t off = root_->head; off; off = leaf(off)->sibling()) {
      if (!leaves_->mark_used(off))
        problem("leaf " + std::to_string(off) + " is not a leaf slot or is reached twice");
      const Leaf& l = *leaf(off);
      int n = std::popcount(static_cast<unsigned>(l.valid()));
      records_.fetch_add(static_cast<std::size_t>(n), std::memory_order_relaxed);
      if (off == root_->head || n == 0) continue;
      Key lo = ~Key{0};
      for (std::uint16_t b = l.valid(); b; b &= b - 1)
        lo = std::min(lo, l.ent[std::countr_zero(b)].key);
      if (!inner_.insert(lo, off)) problem("two leaves start at key " + std::to_string(lo));
    }
    leaves_->finish();
  }
  // PM is untrusted: what recovery cannot make sense of refuses the pool, before any
  // operation follows it.
  [[noreturn]] void problem(const std::string& s) const { refuse_damaged(pool_, kName, s); }

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  Root* root_ = nullptr;
  std::unique_ptr<SlabArena> leaves_;
  LBInnerNodes inner_;
  // Stands in for the paper's HTM over the inner nodes: shared by every operation, held alone
  // by a split.
  // Off, with the leaf locks, when one thread uses the index (IndexConfig::threads == 1).
  const bool shared_;
  mutable Switchable<SharedSpinLock> inner_mu_;
  mutable std::array<VersionLock, 1024> locks_;
  std::atomic<std::size_t> records_{0}, moves_{0};
  std::size_t splits_ = 0;  // changed under inner_mu_ alone
};

}  // namespace
}  // namespace dptree::baselines

namespace dptree {

void register_lbtree_index() {
  add_persistent_index(
      "lbtree", "LB+-Tree",
      "LB+-Tree (Liu et al., VLDB 2020): DRAM inner nodes over 256-byte PM leaves (header "
      "line with bitmap and fingerprints), entry moving, log-less split; assumes a flushed "
      "line reaches PM whole (64-byte unit); concurrent: leaf locks + optimistic leaf reads, "
      "inner nodes under a reader-writer lock (the paper's fallback: no HTM path)",
      true, "its leaves are 256 bytes",
      {.fuzz = TestPlan::Fuzz{},
       .kill = TestPlan::Kill{2, {}},
       .generic = TestPlan::Generic{{}, "leaves", 150, false, 3500}},
      [](pm::Pool& pool, const IndexConfig& cfg) {
        return std::make_unique<baselines::LBTree>(pool, cfg.threads != 1);
      });
}

}  // namespace dptree
