// The concurrent persistent buffer tree, CPBT (DPTree paper §3.1): an OLC B+-tree in DRAM, a
// partitioned PM log (plog.h) and a bloom filter over its keys. An upsert holds the B+-tree
// leaf's write lock across the log append, the leaf change and the bloom update, so the log
// order of a key matches its order in the tree (§3.1, "Concurrent Modification").
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

namespace dptree::cdp {

// Bloom filter with atomic words: adds from any writer, lookups from any reader.
class ConcurrentBloom {
 public:
  ConcurrentBloom(std::size_t expected, double error_rate) {
    if (expected < 64) expected = 64;
    double m = -static_cast<double>(expected) * std::log(error_rate) / 0.4804530139182014;
    words_ = static_cast<std::size_t>(m / 64) + 1;
    bits_ = std::make_unique<std::atomic<u64>[]>(words_);
    k_ =
        std::max(1, static_cast<int>(m / static_cast<double>(expected) * 0.6931471805599453 + 0.5));
  }
  void add(u64 key) {
    u64 h1 = detail::hash_key(key), h2 = detail::hash_key(h1) | 1;
    for (int i = 0; i < k_; ++i) {
      u64 b = (h1 + static_cast<u64>(i) * h2) % (words_ * 64);
      bits_[b / 64].fetch_or(u64{1} << (b % 64), std::memory_order_release);
    }
  }
  bool may_contain(u64 key) const {
    u64 h1 = detail::hash_key(key), h2 = detail::hash_key(h1) | 1;
    for (int i = 0; i < k_; ++i) {
      u64 b = (h1 + static_cast<u64>(i) * h2) % (words_ * 64);
      if (!(bits_[b / 64].load(std::memory_order_acquire) >> (b % 64) & 1)) return false;
    }
    return true;
  }
  std::size_t dram_bytes() const { return words_ * 8; }

 private:
  std::size_t words_;
  std::unique_ptr<std::atomic<u64>[]> bits_;
  int k_ = 1;
};

struct Cpbt {
  Cpbt(const LogShared& sh, u64* table, int ver, std::size_t expected, double bloom_error)
      : log(sh, table, ver), bloom(expected, bloom_error) {}

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
    tree.upsert_with(k, [&](const u64* cur) -> std::optional<u64> {
      out = decide(cur);
      if (out) {
        log.append(k, *out);
        bloom.add(k);
      }
      return out;
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
