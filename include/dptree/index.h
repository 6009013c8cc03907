// The common interface every index of the project implements, so the benchmark, the shared
// model-based and crash-simulation test fixtures and the PiBench wrapper drive them all alike.
//
// Semantics (exact, so a model std::map can check them):
//   upsert(k, v)  write v under k, whether k exists or not (blind; the cheapest write)
//   overwrite(k, v)  upsert of a key the caller believes present: the same result, but an
//                 index that can update a present key in place (the concurrent DPTree,
//                 §3.4) may look for it first, which an upsert of a new key should not pay
//   insert(k, v)  only if k is absent: returns false and changes nothing if it is present
//   update(k, v)  only if k is present: returns false and changes nothing if it is absent
//   remove(k)     returns whether k was present; afterwards k is absent
//   lookup(k)     the value of k, if present
//   scan(s, n)    up to n pairs with key >= s, in ascending key order, appended to `out`
// Keys and values are 8-byte unsigned integers; an index may reserve part of the value range
// (DPTree keeps one bit for its tombstone): max_value() says what is usable, and a value above
// it is refused with dptree::Error(invalid_argument).
//
// The benchmark issues upsert for its inserts and overwrite for its updates (blind writes of keys
// known to be absent or present), as the DPTree paper's runs do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dptree {

using Key = std::uint64_t;
using Value = std::uint64_t;
using KV = std::pair<Key, Value>;

struct IndexStats {
  std::size_t records = 0;     // live keys (exact or, where documented, approximate)
  std::size_t dram_bytes = 0;  // DRAM the index holds
  std::size_t pm_bytes = 0;    // PM blocks the index holds (allocator block sizes)
  // Index-specific figures (merges, leaves, ...) for the benchmark's detailed output.
  std::vector<std::pair<std::string, double>> extra;
};

// Result of an index's self-check: every structural invariant it could verify.
struct CheckReport {
  bool ok = true;
  std::vector<std::string> problems;                  // empty when ok
  std::vector<std::pair<std::string, double>> facts;  // what was counted (records, leaves, ...)
  void fail(std::string what) {
    ok = false;
    problems.push_back(std::move(what));
  }
};

class Index {
 public:
  virtual ~Index() = default;

  virtual std::string name() const = 0;

  virtual void upsert(Key k, Value v) = 0;
  virtual void overwrite(Key k, Value v) { upsert(k, v); }
  virtual bool insert(Key k, Value v) = 0;
  virtual bool update(Key k, Value v) = 0;
  virtual bool remove(Key k) = 0;
  virtual std::optional<Value> lookup(Key k) const = 0;
  virtual std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const = 0;

  // Brings every write acknowledged so far to its final place: an index that buffers writes
  // (DPTree's buffer tree, the concurrent DPTree's background merges) merges them and waits.
  // The benchmark drains after a preload, untimed, and at the end of a run that writes,
  // timed, so such an index pays inside the run for the merges its writes cause.
  virtual void drain() {}

  virtual Value max_value() const { return ~Value{0}; }
  virtual IndexStats stats() const = 0;
  // Verifies the structure's invariants (persistent indexes: also that every PM block it
  // reaches is live and that no live block is unreachable).
  virtual CheckReport check() const { return {}; }
};

}  // namespace dptree
