// The buffer of the concurrent DPTree's string form (string_cdptree.h): the CPBT of §3.1 over
// byte-string keys. The OLC B+-tree of the integer form takes 8-byte keys, so this buffer is
// hash-partitioned instead: N shards, each a DRAM B+-tree (the single-threaded string form's
// buffer tree: keys in its nodes) under a reader-writer lock with its own PM log (dptree's PLog
// over word records, format/string_leaf.h), its head word in the persistent header table of the
// buffer's version. A key's shard is fixed by its hash, so its log records are in one partition and
// in order: the writer holds the shard's lock across the log append and the tree change (§3.1,
// "Concurrent Modification"). Writers of different shards run in parallel; readers share a shard's
// lock; a bloom filter lets most reads of keys not in the buffer skip the shards (a part per
// shard, written under the shard's lock with plain stores: engine/bloom.h ShardedBloom).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "btree/btree.h"
#include "cdptree/shard_lock.h"
#include "engine/bloom.h"
#include "engine/buffer_keys.h"
#include "engine/plog.h"
#include "engine/string_base.h"
#include "format/string_leaf.h"

namespace dptree::cdp {

using detail::BufferedEntries;
using detail::StringEntries;
using detail::StringSlot;
using detail::u64;

using detail::BufferKey;
using detail::KeyArena;
// A shard's tree: the string forms' buffer tree, its keys' bytes in the shard's KeyArena.
using ShardTree = detail::StringBufferTree;

class StringBuffer {
 public:
  StringBuffer(pm::Pool& pool, const detail::RecordCodec& codec, detail::LogPageCache& cache,
               detail::LogPagePtr* table, int ver, std::size_t shards, std::size_t expected,
               double bloom_error);

  int version() const { return ver_; }
  std::size_t shards() const { return n_; }
  std::size_t shard_of(u64 h) const { return static_cast<std::size_t>(h >> 32) % n_; }
  detail::LogPagePtr* table() const { return table_; }

  // The value of k here (tombstones included), if any; h = hash_string(k).
  std::optional<u64> find(std::string_view k, u64 h) const {
    const std::size_t p = shard_of(h);
    if (!bloom_.may_contain_hashed(p, h)) return std::nullopt;
    const Shard& s = shards_[p];
    std::shared_lock lk(s.mu);
    const StringSlot* v = s.tree.find(BufferKey::of(k));  // no key copied
    if (!v) return std::nullopt;
    return v->value;
  }
  // Upsert under k's shard lock: decide(cur) returns the value to write (logged, stored, bloom
  // updated) or nothing; returns what it returned. `entries` gets the shard's entry count,
  // from which the caller estimates the buffer's size. A log append may throw pool_full:
  // nothing changed then.
  template <class F>
  std::optional<u64> upsert_with(std::string_view k, u64 h, F&& decide, std::size_t& entries) {
    const std::size_t p = shard_of(h);
    bloom_.prefetch_for_add(p, h);  // its miss overlaps the log append and the tree's descent
    Shard& s = shards_[p];
    std::unique_lock lk(s.mu);
    // One descent finds k's slot or adds k; no reader sees an added k before the lock is
    // released, and one that gets no value is taken out again. decide() reads only the Middle
    // and the base: the slot stays valid until it is written.
    auto [cur, added] = detail::find_or_add(s.tree, s.keys, k);
    std::optional<u64> out;
    u64 rec = 0;
    try {
      out = decide(added ? nullptr : static_cast<const u64*>(&cur->value));
      if (out) rec = append(s, p, k, *out);
    } catch (...) {
      if (added) s.tree.erase(BufferKey::of(k));
      throw;
    }
    if (out) {
      *cur = StringSlot{*out, rec};
      bloom_.add_hashed(p, h);
    } else if (added) {
      s.tree.erase(BufferKey::of(k));
    }
    entries = s.tree.size();
    return out;
  }

  // A blind write of v under k's shard lock: the record is appended first and made durable
  // last, so that its write-back overlaps the tree's descent (as the single-threaded form's
  // upsert does); a reader of the shard sees the value only once it is durable. May throw
  // pool_full: nothing changed then; a failure to take the key into the tree (bad_alloc)
  // leaves its record in the log, so that write may come back after a restart.
  void upsert_blind(std::string_view k, u64 h, u64 v, std::size_t& entries) {
    const std::size_t p = shard_of(h);
    bloom_.prefetch_for_add(p, h);
    Shard& s = shards_[p];
    std::unique_lock lk(s.mu);
    const u64 rec = append_unfenced(s, p, k, v);
    try {
      *detail::find_or_add(s.tree, s.keys, k).first = StringSlot{v, rec};
    } catch (...) {
      // bad_alloc: the record is in the log, fenced all the same so that the log stays whole.
      detail::PLog::fence_append();
      throw;
    }
    bloom_.add_hashed(p, h);
    detail::PLog::fence_append();
    entries = s.tree.size();
  }

  // Recovery: shard p's log replayed into its tree (records of one key in order; the first
  // record that is not whole ends it). Error(corrupt) naming `tree` for a whole record after
  // the end.
  void replay(std::size_t p, const char* tree);
  // Up to n entries with key >= start of every shard, in key order, appended to `out`; true
  // when the buffer has no more (else every entry up to out's last key is there).
  bool collect(std::string_view start, std::size_t n, StringEntries& out) const;
  // Every entry in key order (each shard's read under its lock: per key consistent).
  BufferedEntries entries() const;
  std::size_t size() const;
  // The pages of shard p's log (writers quiesced), and of every shard's.
  const std::vector<u64>& log_pages(std::size_t p) const { return shards_[p].log->pages(); }
  std::vector<u64> all_log_pages() const;
  // Every shard's log pages and the key pages given to inherit() that it has not gone on in
  // yet, each shard's read under its lock: a writer that takes a given page moves it from one
  // to the other, and a merge that frees key pages no entry names must see it in either.
  std::vector<u64> live_log_pages() const;
  // The key pages given to inherit() that no shard has gone on in yet (writers quiesced).
  std::vector<u64> offered_pages() const;
  // How many pages given the shards went on in (writers quiesced).
  std::size_t offers_taken() const;
  // The pages given to inherit() that no shard took, given up (for a new Front).
  std::vector<std::vector<detail::PLog::Inherited>> take_offers();
  // After this buffer's merge committed and no thread uses it: every shard's log chain
  // released (pages flagged, head cleared) and its pages handed to the next flavor's freelist,
  // but for the key pages `keep` names. Returns each shard's pages the next buffer's shard may
  // go on in (PLog::hand_over).
  std::vector<std::vector<detail::PLog::Inherited>> release_logs(
      const detail::PLog::KeepPage& keep);
  // Each shard's log goes on in a page given for it, when it needs a page that fits
  // (PLog::inherit): a shard's records stay in one partition, of one shard.
  void inherit(const std::vector<std::vector<detail::PLog::Inherited>>& pages);
  // check(): each shard's tree, and whether every key is in its own shard and the bloom filter.
  const ShardTree& tree(std::size_t p) const { return shards_[p].tree; }
  bool bloom_has(u64 h) const { return bloom_.may_contain_hashed(shard_of(h), h); }
  std::size_t dram_bytes() const;

 private:
  struct alignas(64) Shard {
    mutable ShardLock mu;
    ShardTree tree;
    KeyArena keys;
    std::unique_ptr<detail::PLog> log;
  };
  u64 append(Shard& s, std::size_t p, std::string_view k, u64 v);
  u64 append_unfenced(Shard& s, std::size_t p, std::string_view k, u64 v);

  pm::Pool& pool_;
  const detail::RecordCodec& codec_;
  detail::LogPagePtr* table_;
  int ver_;
  std::size_t n_;
  std::unique_ptr<Shard[]> shards_;
  detail::ShardedBloom bloom_;  // a part per shard, written under its lock
};

}  // namespace dptree::cdp
