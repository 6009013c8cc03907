// The concurrent persistent buffer tree, CPBT (DPTree paper §3.1): an OLC B+-tree in DRAM, a
// partitioned PM log (plog.h) and a bloom filter over its keys. An upsert holds the B+-tree
// leaf's write lock across the bloom update, the log append, the leaf change and the
// append's fence, so the log order of a key matches its order in the tree (§3.1, "Concurrent
// Modification"), and the value is durable before anyone can read it.
#pragma once

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "btree/olc_btree.h"
#include "cdptree/plog.h"
#include "engine/bloom.h"

namespace dptree::cdp {

using detail::ConcurrentBloom;

struct Cpbt {
  Cpbt(const LogShared& sh, detail::LogPagePtr* table, int ver, std::size_t expected,
       double bloom_error, btree::NodeChunks& chunks)
      : tree(chunks), log(sh, table, ver), bloom(expected, bloom_error) {}

  // The value of k here (tombstones included), if any.
  std::optional<u64> find(u64 k) const {
    if (!bloom.may_contain(k)) return std::nullopt;
    return tree.lookup(k);
  }
  // Upsert under k's leaf lock: decide(cur) returns the value to write (logged, stored, bloom
  // updated) or nothing. Returns what decide returned.
  template <class F>
  std::optional<u64> upsert_with(u64 k, F&& decide) {
    std::optional<u64> out;
    const u64 h = detail::hash_key(k);
    bloom.prefetch_for_add(h);  // its miss overlaps the tree's descent
    tree.upsert_with(
        k,
        [&](const u64* cur) -> std::optional<u64> {
          out = decide(cur);
          if (out) {
            // The filter first: its locked OR would wait for the append's write-back to
            // complete. A bit set for a write that then fails is a false positive, which
            // readers tolerate.
            bloom.add_hashed(h);
            log.append(k, *out);
          }
          return out;
        },
        [&] {
          // The record's fence comes after the leaf's change, so the change's stores overlap
          // the write-back; it comes before the unlock, so no reader (all validate against
          // the lock) and no later writer of k sees the value before it is durable.
          if (out) PartitionedLog::fence_append();
        });
    return out;
  }
  // Recovery's replay (the log already holds the record).
  void replayed(u64 k, u64 v) {
    tree.upsert(k, v);
    bloom.add(k);
  }

  btree::OlcBTree tree;
  PartitionedLog log;
  ConcurrentBloom bloom;
};

}  // namespace dptree::cdp
