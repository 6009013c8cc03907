// The ROART engine over byte-string keys (layout.h); the integer and string indexes
// (roart_index.cc) are thin front ends over it. Concurrency is ROWEX's: readers take no lock
// (every change they can meet is one 8-byte store, or a whole new node swung in by one); a
// writer finds its target without locks, then locks the word's holder and the target and
// validates them (write_locks.h), retrying from the root when either was replaced meanwhile.
// Unlinked slots are reused only when no thread can still hold them (epoch.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baselines/roart/arena_set.h"
#include "baselines/roart/epoch.h"
#include "baselines/roart/layout.h"
#include "baselines/roart/thread_slots.h"
#include "baselines/roart/write_locks.h"
#include "baselines/slab/slab_arena.h"
#include "dptree/index.h"
#include "dptree/pm/pool.h"

namespace dptree::baselines::roart {

// The 16-bit fingerprint a leaf-array entry carries of its whole key.
// A key byte as the branch value it selects.
inline unsigned char uc(char c) {
  return static_cast<unsigned char>(c);
}
// A node header's stored prefix word: the first kStoredPrefix bytes of p.
inline u64 pack_prefix(std::string_view p) {
  u64 w = 0;
  std::memcpy(&w, p.data(), std::min(p.size(), kStoredPrefix));
  return w;
}
unsigned fingerprint(std::string_view k);
// Writes the leaf (k, v) into slot `off` (of k's size class) and writes it back, unfenced
// (the publish's fence orders it); returns the entry word that names it.
u64 write_leaf(pm::Pool& pool, u64 off, std::string_view k, Value v);

// Sorts the n pairs a lock-free reader took from one unsorted leaf array or node and keeps one
// pair per key: a remove and a re-insert of a key into another entry while the reader walked
// the entries can show it twice. Returns how many remain.
inline std::size_t sorted_unique(std::pair<std::string_view, Value>* kv, std::size_t n) {
  std::sort(kv, kv + n);
  return static_cast<std::size_t>(
      std::unique(kv, kv + n, [](const auto& a, const auto& b) { return a.first == b.first; }) -
      kv);
}

// The inner nodes among per-arena slot counts: the N4, N16, N48 and N256 arenas'.
inline std::size_t nodes_in(const ArenaSet<kArenas>::Counts& slots) {
  return slots[kArenaN4] + slots[kArenaN16] + slots[kArenaN48] + slots[kArenaN256];
}

// What the calling thread's ROART operation is writing, for crash tests to name captures.
const char* current_phase();

// The records of an index that embeds the tree over them (PACTree's data nodes): each record,
// named by its pool offset (a multiple of 8 below 2^56), holds its key in PM.
class Records {
 public:
  virtual ~Records() = default;
  // Record r's key: bytes in PM that stay as they are while r is in the tree.
  virtual std::string_view key(u64 r) const = 0;
  // Whether r names a record of the owner (recovery and check: PM is untrusted).
  virtual bool valid(u64 r) const = 0;
};

class Tree {
 public:
  // Opens (and recovers) or creates the ROART of `pool` holding keys of `form`; threads == 1
  // leaves out the lock and the deferred reuse.
  Tree(pm::Pool& pool, u64 form, unsigned threads);
  // A ROART of string keys inside another index's root block (PACTree's search layer): `root`
  // is zeroed on creation. The owner claims the pool, and its check() verifies the allocator's
  // blocks with arenas() among its own. With `records`, the tree's bottom words name the
  // owner's records (layout.h, kRecord) instead of leaf arrays: a value put is a record whose
  // key is the key put, and a floor query ends at the record itself (the paper's search layer
  // names a data node by its child pointer). A pool keeps the choice it was created with; the
  // owner's format names it.
  Tree(pm::Pool& pool, Root* root, unsigned threads, const Records* records = nullptr);

  // The greatest key <= k and its value, if any; floor_value gives the value alone.
  std::optional<std::pair<std::string, Value>> floor(std::string_view k) const;
  std::optional<Value> floor_value(std::string_view k) const;
  std::vector<const SlabArena*> arenas() const;
  std::size_t node_count() const;  // inner nodes of every kind (stats' "nodes")

  std::optional<Value> lookup(std::string_view k) const;
  // An upsert (may_insert and may_update), insert or update; false when it changed nothing.
  bool put(std::string_view k, Value v, bool may_insert, bool may_update);
  bool remove(std::string_view k);
  // Calls emit for up to count pairs with key >= start, in key order; returns how many.
  std::size_t scan(std::string_view start, std::size_t count,
                   const std::function<void(std::string_view, Value)>& emit) const;

  void drain() {}  // nothing is deferred
  IndexStats stats() const;
  CheckReport check() const;

 private:
  // A word that names a child, and where it sits.
  struct Slot {
    u64* word = nullptr;  // nullptr: no such child
    u64 hi = 0;           // the key byte the word keeps (entry compression)
    u64 parent = 0;       // the node holding the word (0: the root word)
    int byte = -1;        // its byte there (-1: the root or an end word)
    u64 seen = 0;         // the word as it was read
  };
  struct Path;  // what every key below a word must hold (recovery, check)

  // Reads
  Slot find_child(u64 node, int byte) const;
  std::size_t prefix_bytes(u64 node, std::size_t depth, std::string& out) const;
  std::string_view any_key(u64 w) const;
  const Leaf* leaf_at(u64 entry) const;
  bool walk(u64 w, std::size_t depth, std::string_view start, bool bounded, std::size_t count,
            const std::function<void(std::string_view, Value)>& emit, std::size_t& got) const;
  bool walk_array(u64 w, std::string_view start, bool bounded, std::size_t count,
                  const std::function<void(std::string_view, Value)>& emit, std::size_t& got) const;
  bool walk_node(u64 w, std::size_t depth, std::string_view start, bool bounded, std::size_t count,
                 const std::function<void(std::string_view, Value)>& emit, std::size_t& got) const;
  std::vector<std::pair<int, u64>> children(u64 node) const;
  bool for_each_child(u64 node, int lo, int hi, const std::function<bool(int, u64)>& fn) const;

  // Writes: each *_once returns nullopt when a lock's validation failed (retry from the root).
  struct Locked;
  struct Held;
  struct Checker;  // check.cc
  std::optional<bool> put_once(std::string_view k, Value v, bool may_insert, bool may_update);
  std::optional<bool> remove_once(std::string_view k);
  bool drop_empty_node(std::string_view k);
  bool node_empty(u64 w) const;
  void collect();
  std::optional<bool> put_in_array(const Slot& s, u64 w, std::size_t depth, std::string_view k,
                                   Value v, bool may_insert, bool may_update, bool may_split);
  u64 new_leaf(std::string_view k, Value v);
  u64 new_array(const std::vector<u64>& entries);
  u64 new_array_of(std::string_view k, Value v);
  u64 bottom_of(const std::vector<u64>& entries);
  std::string_view entry_key(u64 e) const;
  std::optional<bool> put_at_record(const Slot& s, u64 w, std::size_t depth, std::string_view k,
                                    Value v, bool may_insert, bool may_update);
  u64 new_node(std::size_t depth, std::string_view prefix, u64 end,
               const std::vector<std::pair<int, u64>>& kids);
  void split_array(const Slot& s, std::size_t depth, u64 entry);
  void split_prefix(const Slot& s, std::size_t depth, std::size_t m, std::string_view k, Value v);
  u64* free_word(u64 node, int byte) const;
  void add_child(const Slot& s, int byte, u64 child);
  void publish(const Slot& s, u64 child);
  void link(const Slot& s, u64 child);
  void settle(u64 child);
  void unlink(const Slot& s);
  void retire(int arena, u64 off);
  u64 take(int arena);

  // Recovery and check (recovery.cc)
  void recover();
  bool recover_word(u64 w, std::size_t depth, const Path& p, bool end);
  bool recover_array(u64 w, std::size_t depth, const Path& p, bool end);
  void recover_record(u64 w, std::size_t depth, const Path& p, bool end);
  void rebuild_n48_slots(u64 w);
  [[noreturn]] void problem(const std::string& what) const;

  int arena_of(u64 child) const;
  void* at(u64 off) const { return pool_.at<char>(off); }
  template <class T>
  T* node(u64 w) const {
    return pool_.at<T>(off_of(w));
  }

  void open(unsigned threads);
  // A leaf array's end mark: 1 + the last entry it ever used (entries are taken lowest
  // first), so its scans stop there, as the original's bitmap lets it read only the entries
  // in use (at 10M random keys most arrays hold one to three keys of 64). Volatile, one byte
  // per array slot beside the pool: set before an entry past it is published, rebuilt by
  // recovery, checked by check().
  std::atomic<std::uint8_t>& end_mark(u64 w) const { return ends_[off_of(w) / sizeof(LeafArray)]; }
  void set_end_mark(u64 w, std::size_t n) const {
    end_mark(w).store(static_cast<std::uint8_t>(n), std::memory_order_release);
  }
  u64* array_begin(u64 w) const { return node<LeafArray>(w)->entry; }
  u64* array_end(u64 w) const {
    return array_begin(w) + end_mark(w).load(std::memory_order_acquire);
  }
  u64* array_all(u64 w) const { return array_begin(w) + kArrayEntries; }  // past the mark too
  // Whether child word w ends a path: a leaf array, or an owner's record.
  static bool bottom(u64 w) { return tag_of(w) == kArray || tag_of(w) == kRecord; }
  std::string_view record_key(u64 w) const { return owner_->key(off_of(w)); }
  // What a floor query found: a leaf, or the word of an owner's record.
  struct Hit {
    const Leaf* leaf = nullptr;
    u64 record = 0;
    explicit operator bool() const { return leaf || record; }
  };
  Hit floor_walk(u64 w, std::size_t depth, std::string_view k, bool bounded) const;
  Hit floor_array(u64 w, std::string_view k, bool bounded) const;
  Hit floor_record(u64 w, std::string_view k, bool bounded) const;
  std::string_view key_of(const Hit& h) const;
  Value value_of(const Hit& h) const;
  u64 child_below(u64 w, int& byte) const;
  std::string_view prefix_view(u64 w, std::size_t depth, std::string& whole) const;

  std::optional<pm::PoolClaim> claim_;  // before anything touches the pool (standalone)
  pm::Pool& pool_;
  Root* root_ = nullptr;
  ArenaSet<kArenas> arenas_;
  bool embedded_ = false;
  const Records* owner_ = nullptr;  // the owner's records, when the bottom words name them
  bool concurrent_ = false;
  std::unique_ptr<WriteLocks> locks_;                  // when concurrent
  std::unique_ptr<std::atomic<std::uint8_t>[]> ends_;  // leaf arrays' end marks (none over records)
  SpreadCount records_;  // every insert and remove of every thread adds to it
  SpreadCount array_splits_, grows_, prefix_splits_;
  SpreadCount restarts_;  // writes started again from the root after a failed lock check
};

}  // namespace dptree::baselines::roart
