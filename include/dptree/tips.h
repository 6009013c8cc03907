// TIPS ("TIPS: Making Volatile Indexes Persistent With DRAM-NVMM Tiering"): turns a
// volatile ordered index into a durable, linearizable one without rewriting it.
//
//   frontend  a concurrent DRAM cache (open-chaining hash table) absorbs writes and serves
//             reads of recent keys; each write is made durable by one record in a per-thread
//             operation log (OLog) in PM, stamped with a global timestamp (2 persist barriers)
//   backend   the plugged-in volatile index lives in PM (nodes from our allocator); background
//             writers replay the OLog into it in timestamp order, undo-logging (ULog) each
//             address before it changes under the UNO protocol, and logging allocations and
//             frees (MLog); the number of writers follows the write ratio
//   recovery  roll back with the ULog, release what the MLog says, replay the OLog from the
//             last applied timestamp, start with an empty cache
//
// To plug in an index, implement Adapter (below) over memory that lives in PM: allocate its
// nodes with tips::alloc, give them back with tips::release, call tips::will_write before
// every store to PM, and use tips::Rel<T> for pointers stored in PM. docs/tips.md walks
// through it; src/tips/tips_btree.cc plugs in the project's B+-tree in about 60 lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dptree/index.h"

namespace dptree::pm {
class Pool;
}

namespace dptree::tips {

// ---- What the plugged-in index calls (the seed's tips_alloc / tips_free / tips_ulog_add).
// Valid only while TIPS runs an Adapter write call (replay or recovery); elsewhere they throw
// dptree::Error(invalid_argument).

// A PM block of at least `bytes` bytes, 64-byte aligned; logged in the MLog, freed again if a
// crash rolls back the replay that allocated it. Its content is undefined until written.
void* alloc(std::size_t bytes);
// Gives back a block from alloc; the free happens once the replay step commits.
void release(void* p);
// Must precede every store into PM memory of the index (its nodes or its header): the lines
// of [addr, addr + len) are undo-logged unless already logged in this epoch or inside a block
// allocated in it (UNO), and are written back when the epoch commits.
void will_write(const void* addr, std::size_t len);

// A pointer stored in PM: self-relative, so it survives the pool mapping at another address
// (a reopen, a crash image). Null is 0. Copying recomputes the offset for the new place.
template <class T>
class Rel {
 public:
  Rel() = default;
  Rel(T* p) { set(p); }  // NOLINT: implicit, like a raw pointer
  Rel(const Rel& o) { set(o.get()); }
  Rel& operator=(const Rel& o) {
    set(o.get());
    return *this;
  }
  Rel& operator=(T* p) {
    set(p);
    return *this;
  }
  T* get() const {
    // Unsigned: a damaged offset read from PM wraps instead of overflowing (open-time checks
    // refuse it before anything dereferences it).
    return d_ ? reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(this) +
                                     static_cast<std::uintptr_t>(d_))
              : nullptr;
  }
  operator T*() const { return get(); }  // NOLINT: implicit, like a raw pointer
  T* operator->() const { return get(); }

 private:
  void set(T* p) {
    d_ = p ? reinterpret_cast<std::intptr_t>(p) - reinterpret_cast<std::intptr_t>(this) : 0;
  }
  std::intptr_t d_ = 0;
};

// The node policy for templates written like src/btree/btree.h (BPlusTree's `Nodes`).
struct PmNodes {
  template <class T>
  using ptr = Rel<T>;
  template <class T>
  static T* make() {
    void* m = alloc(sizeof(T));
    will_write(m, sizeof(T));  // a new block: written back at commit, never undo-logged
    return new (m) T();
  }
  template <class T>
  static void release(T* p) {
    p->~T();
    tips::release(p);
  }
  static void will_write(const void* p, std::size_t n) { tips::will_write(p, n); }
};

// ---- The adapter: a volatile ordered index whose state starts at `header` (PM memory of
// header_bytes(), 64-byte aligned). TIPS serialises write calls per partition and runs read
// calls under a shared lock, so the index needs no synchronisation of its own.
class Adapter {
 public:
  virtual ~Adapter() = default;
  virtual std::string name() const = 0;
  virtual std::size_t header_bytes() const = 0;
  // Constructs an empty index in `header` (zeroed memory not yet reachable from the pool's
  // root: it must not call alloc, release or will_write; a zeroed header may already be it).
  virtual void create(void* header) const = 0;
  // Called once when a pool is opened, before any other call on `header`: PM is untrusted,
  // so the index proves that its structure is safe to follow, testing every node pointer with
  // `node_ok(p, bytes)` (inside a block tips::alloc handed out, `bytes` long). Returns the
  // first problem ("" when safe); TIPS refuses the pool with Error(corrupt) then. The default
  // trusts the header (for an index whose header holds no pointers).
  virtual std::string validate(const void* header,
                               const std::function<bool(const void*, std::size_t)>& node_ok) const {
    (void)header;
    (void)node_ok;
    return "";
  }
  virtual bool insert(void* header, Key k, Value v) const = 0;  // false if k is present
  virtual bool update(void* header, Key k, Value v) const = 0;  // false if k is absent
  virtual bool remove(void* header, Key k) const = 0;           // false if k is absent
  // Blind write; the default is update, else insert.
  virtual void upsert(void* header, Key k, Value v) const {
    if (!update(header, k, v)) insert(header, k, v);
  }
  virtual std::optional<Value> lookup(const void* header, Key k) const = 0;
  // Up to n pairs with key >= start, ascending, appended to out; returns how many.
  virtual std::size_t scan(const void* header, Key start, std::size_t n,
                           std::vector<KV>& out) const = 0;
  virtual std::size_t size(const void* header) const = 0;
  // Every block from alloc the index holds (TIPS checks for leaks with it).
  virtual void for_each_block(const void* header,
                              const std::function<void(const void*)>& fn) const = 0;
  // Structural problems (empty: sound).
  virtual std::vector<std::string> check(const void*) const { return {}; }
};

struct Options {
  unsigned partitions = 4;              // backend instances, keys hashed among them
  unsigned lanes = 8;                   // per-thread OLogs (threads beyond share them)
  std::size_t lane_records = 1 << 13;   // records per OLog ring (32 B each)
  std::size_t ulog_lines = 2048;        // undo entries per partition (one 64-byte line each)
  std::size_t mlog_entries = 512;       // allocation/free entries per partition
  std::size_t cache_entries = 1 << 18;  // DRAM cache capacity (entries)
  bool background = true;          // background writers; false: replay runs on the calling thread
  std::size_t replay_every = 256;  // inline mode: replay after this many writes
  unsigned max_writers = 2;        // background writers at a 100% write ratio

  // Parses index options (docs/tips.md lists them); throws Error naming a bad one.
  static Options from_map(const std::map<std::string, std::string>& m);
};

// Creates TIPS over `adapter` in `pool` (an empty pool), or opens and recovers the one the
// pool's root holds. The index is concurrent (several threads at once).
std::unique_ptr<Index> make_index(pm::Pool& pool, std::shared_ptr<const Adapter> adapter,
                                  const Options& options);

// Adaptive scaling (TIPS paper): background writers for a write share in [0, 1] of the recent
// operations, between 1 and max_writers.
unsigned writers_for_ratio(double write_ratio, unsigned max_writers);

}  // namespace dptree::tips
