// DPTree over byte-string keys (string_index.h): the single-threaded tree of §2 with each key's
// bytes written once, in its log record, which the leaves name (format/string_leaf.h). A tree of
// its own beside DPTreeCore, so the integer tree's hot paths are untouched; from the engine layer
// it shares the persistent pieces (TreeParts: owner directory, pendingLeaves, log page cache and
// PLog's pages), the merge's begin / commit / garbage collection / recovery of an interrupted
// merge, and the open-time validator. docs/dptree.md ("String keys") has the leaf and its in-place
// merge.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dptree/dptree_options.h"
#include "dptree/string_index.h"
#include "engine/bloom.h"
#include "engine/family.h"
#include "engine/plog.h"
#include "engine/string_base.h"
#include "format/string_leaf.h"

namespace dptree::detail {

class StringDPTree final : public StringIndex {
 public:
  // create: a new tree in an empty pool; otherwise the pool's tree, recovered.
  StringDPTree(pm::Pool& pool, const DPTreeOptions& opt, bool create);

  std::string name() const override { return "dptree"; }
  void upsert(std::string_view k, Value v) override;
  bool insert(std::string_view k, Value v) override;
  bool update(std::string_view k, Value v) override;
  bool remove(std::string_view k) override;
  std::optional<Value> lookup(std::string_view k) const override;
  std::size_t scan(std::string_view start, std::size_t count,
                   std::vector<StringKV>& out) const override;
  void drain() override { merge(); }
  std::size_t max_key_bytes() const override { return kStringTreeMaxKey; }
  Value max_value() const override { return kTombstone - 1; }
  IndexStats stats() const override;
  CheckReport check() const override;

  // Merges the buffer into the base tree now (§2.3), in key-ordered parts when it does not
  // fit at once (string_tree_merge.cc); pool_full undoes a part of one entry that does not fit (as
  // DPTreeCore undoes a merge).
  void merge();
  std::size_t size() const;

 private:
  void create();
  void open();
  void attach();
  void recover();
  void rebuild_inner();
  std::size_t merge_threshold() const;
  void reset_bloom();
  // k's entry in the buffer set to s (k's bytes copied into keys_ only when k is new there).
  void buffer_put(std::string_view k, const StringSlot& s) {
    *find_or_add(buffer_, keys_, k).first = s;
  }
  void clear_buffer() {
    buffer_.clear();
    keys_.clear();
  }
  void write_allowed();
  void merge_part(BufferedEntries& es, std::size_t from, std::size_t to);
  void keep_in_buffer(BufferedSpan rest);
  void release_key_pages(std::span<const u64> unnamed);
  // h: hash_string(k), computed once per operation.
  void upsert_raw(std::string_view k, u64 v, u64 h);
  std::optional<u64> find(std::string_view k, u64 h) const;
  StringLeaf leaf(u64 off) const { return StringLeaf{t_.pool.at(off), t_.pool.base(), &L_}; }
  StringMergeSizes merge_sizes() const;
  void check_log(const std::unordered_set<u64>& owned, std::set<u64>& reach, CheckReport& r) const;

  TreeParts t_;
  DPTreeOptions opt_;
  Root* root_ = nullptr;
  std::unique_ptr<PLog> log_;
  StringBufferTree buffer_;
  KeyArena keys_;  // the buffered keys' bytes
  // The arenas a merge in parts replaced while its entries still name their bytes.
  std::vector<KeyArena> spent_keys_;
  Bloom bloom_;
  StringLeafLayout L_;
  StringBase base_;  // the inner index (DRAM) over the leaves of the current version
  KeyPages key_pages_{t_.pool};
  std::size_t merges_ = 0, failed_merges_ = 0, created_ = 0, freed_ = 0, rewritten_ = 0;
  std::size_t parts_ = 0;  // merge cycles over a part of the buffer (a merge that did not fit)
  std::size_t key_pages_freed_ = 0, in_place_ = 0;
  MergeBlock merge_block_{t_.pool};
};

}  // namespace dptree::detail
