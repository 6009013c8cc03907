// CAWBT (Lee, Lee, Won, IEICE Trans. 2019): a B+-tree of 64-byte PM nodes that
// relies on a whole cache line reaching PM atomically. The tree and its operation paths are
// here; the split redo and the rebuild on open in recovery.cc, check() in check.cc, the
// registration in cawbt.cc.
//
// Node (§3.2.2, Fig. 4/5): parent offset with the leaf flag in its low bit (§4.2 flag
// embedding), four 4-byte IDs, five 8-byte pointers. Inner nodes: IDs are separators, pointers
// are children. Leaves: IDs of the keys and pointers to 16-byte KV records. A DRAM ID table
// maps an ID to its key and record (§3.2.3), so every key comparison goes through it; it is
// rebuilt from the leaves on open (§4.4). No sibling pointers and no key count (§4.2): the
// count is the number of non-zero IDs.
//
// Writes: an in-node update rewrites the node's line and flushes it once (§3.2.2); a split
// writes one 64-byte redo record first (§3.4, Fig. 6), then the nodes, then clears the record.
// A global writer lock serialises writes (§3.5); readers share a reader lock (the paper lets
// them run unsynchronised, which C++ calls a data race).
//
// Departures, each for a reason given in docs/indexes.md: nodes and records come from a slab
// arena; a deleted key that is still a separator stays in its leaf as a tombstone (so every ID
// an inner node holds can be rebuilt from the leaves); splits happen before the insert, on the
// full node; freed IDs are reused at once.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "baselines/cawbt/layout.h"
#include "baselines/slab/slab_arena.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"

namespace dptree::baselines::cawbt {

class Cawbt final : public Index {
 public:
  explicit Cawbt(pm::Pool& pool) : claim_(pool, "cawbt"), pool_(pool) {
    if (pool.size() > (std::uint64_t{64} << 30))
      throw Error(Errc::invalid_argument, "cawbt: pool " + pool.name() +
                                              " is larger than 64 GiB; its 4-byte log offsets "
                                              "cannot address it: use a smaller pool");
    root_ = static_cast<Root*>(open_arena_root(pool, sizeof(Root), kMagic, "cawbt"));
    nodes_ = std::make_unique<SlabArena>(pool, &root_->node_dir, sizeof(Node), root_->slab_size);
    records_ =
        std::make_unique<SlabArena>(pool, &root_->record_dir, sizeof(Record), root_->slab_size);
    recover();
  }

  std::string name() const override { return "cawbt"; }
  Value max_value() const override { return kTombstone - 1; }

  void upsert(Key k, Value v) override {
    check_value(v);
    std::unique_lock l(mu_);
    put(k, v, true, true);
  }
  bool insert(Key k, Value v) override {
    check_value(v);
    std::unique_lock l(mu_);
    return put(k, v, true, false);
  }
  bool update(Key k, Value v) override {
    check_value(v);
    std::unique_lock l(mu_);
    return put(k, v, false, true);
  }
  bool remove(Key k) override {
    std::unique_lock l(mu_);
    pm::CategoryScope cat(pm::Category::node);
    Node* leaf = find_leaf(k);
    int n = count_ids(*leaf), i = 0;
    while (i < n && key_of(leaf->id[i]) != k) ++i;
    if (i == n) return false;
    std::uint32_t id = leaf->id[i];
    auto* rec = pool_.at<Record>(leaf->ptr[i]);
    if (rec->value & kTombstone) return false;
    if (is_sep_[id]) {
      // Inner nodes still name this ID: keep the record so the table can be rebuilt (§4.4).
      pm::store(&rec->value, rec->value | kTombstone);
      pm::persist(&rec->value, 8);
    } else {
      Node c = *leaf;
      for (int j = i; j + 1 < n; ++j) c.id[j] = c.id[j + 1], c.ptr[j] = c.ptr[j + 1];
      c.id[n - 1] = 0;
      c.ptr[n - 1] = 0;
      write_node(leaf, c);
      records_->release(table_[id].rec);
      free_id(id);
    }
    --live_;
    return true;
  }

  std::optional<Value> lookup(Key k) const override {
    std::shared_lock l(mu_);
    const Node* n = node(root_->root_node);
    while (!is_leaf(*n)) {
      int c = count_ids(*n), i = 0;
      for (; i < c; ++i) {
        Key s = key_of(n->id[i]);
        if (k < s) break;  // §4.3: no equality test while the key is lower
        if (k == s) return visible(table_[n->id[i]].rec);  // §3.3 fast search via the ID table
      }
      n = node(n->ptr[i]);
    }
    int c = count_ids(*n);
    for (int i = 0; i < c; ++i)
      if (key_of(n->id[i]) == k) return visible(n->ptr[i]);
    return std::nullopt;
  }

  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    std::shared_lock l(mu_);
    std::size_t got = 0;
    if (count) scan_node(root_->root_node, start, count, out, got);
    return got;
  }

  IndexStats stats() const override {
    std::shared_lock l(mu_);
    IndexStats s;
    s.records = live_;
    s.dram_bytes = table_.capacity() * sizeof(Entry) + is_sep_.capacity() +
                   free_ids_.capacity() * sizeof(std::uint32_t);
    s.pm_bytes = pool_.allocator().block_size(*pool_.root_word()) + nodes_->pm_bytes() +
                 records_->pm_bytes();
    s.extra = {{"nodes", double(nodes_->used_slots())},
               {"splits", double(splits_)},
               {"height", double(height())}};
    return s;
  }

  CheckReport check() const override;

 private:
  struct Entry {
    Key key = 0;
    std::uint64_t rec = 0;
    bool used = false;
  };

  static void check_value(Value v) {
    if (v & kTombstone)
      throw Error(Errc::invalid_argument,
                  "cawbt: value " + std::to_string(v) +
                      " uses the top bit, which cawbt keeps for tombstones: use values below "
                      "2^63");
  }

  const Node* node(std::uint64_t off) const { return pool_.at<Node>(off); }
  Node* node(std::uint64_t off) { return pool_.at<Node>(off); }
  Key key_of(std::uint32_t id) const { return table_[id].key; }
  std::optional<Value> visible(std::uint64_t rec) const {
    Value v = pool_.at<Record>(rec)->value;
    if (v & kTombstone) return std::nullopt;
    return v;
  }

  // One flush per in-node update (§3.2.2): the whole line is written, then written back.
  void write_node(Node* dst, const Node& src) {
    pm::store(dst, src);
    pm::persist(dst, sizeof(Node));
  }

  Node* find_leaf(Key k) {
    Node* n = node(root_->root_node);
    while (!is_leaf(*n)) {
      int c = count_ids(*n), i = 0;
      while (i < c && k >= key_of(n->id[i])) ++i;
      n = node(n->ptr[i]);
    }
    return n;
  }

  bool put(Key k, Value v, bool may_insert, bool may_update) {
    pm::CategoryScope cat(pm::Category::node);
    for (;;) {
      Node* leaf = find_leaf(k);
      int n = count_ids(*leaf), i = 0;
      while (i < n && key_of(leaf->id[i]) < k) ++i;
      if (i < n && key_of(leaf->id[i]) == k) {
        auto* rec = pool_.at<Record>(leaf->ptr[i]);
        bool present = !(rec->value & kTombstone);
        if (present ? !may_update : !may_insert) return false;
        pm::store(&rec->value, v);  // an 8-byte store: also revives a tombstone
        pm::persist(&rec->value, 8);
        if (!present) ++live_;
        return true;
      }
      if (!may_insert) return false;
      if (n == kIds) {
        split(leaf);
        continue;  // descend again: the key now fits in one of the halves
      }
      std::uint64_t roff = records_->alloc();
      auto* rec = pool_.at<Record>(roff);
      pm::store(&rec->key, k);
      pm::store(&rec->value, v);
      pm::persist(rec, sizeof(Record));  // durable before the leaf names it
      std::uint32_t id = new_id(k, roff);
      Node c = *leaf;
      for (int j = n; j > i; --j) c.id[j] = c.id[j - 1], c.ptr[j] = c.ptr[j - 1];
      c.id[i] = id;
      c.ptr[i] = roff;
      write_node(leaf, c);
      ++live_;
      return true;
    }
  }

  std::uint32_t new_id(Key k, std::uint64_t rec) {
    std::uint32_t id;
    if (!free_ids_.empty()) {
      id = free_ids_.back();
      free_ids_.pop_back();
    } else {
      if (table_.size() == std::size_t{UINT32_MAX})
        throw Error(Errc::pool_full, "cawbt: all 2^32 - 1 IDs are in use");
      id = static_cast<std::uint32_t>(table_.size());
      table_.emplace_back();
      is_sep_.push_back(0);
    }
    table_[id] = {k, rec, true};
    return id;
  }
  void free_id(std::uint32_t id) {
    table_[id] = {};
    is_sep_[id] = 0;
    free_ids_.push_back(id);
  }

  // Splits the full node s: its parent first if that is full too (bottom-up, one logged split
  // at a time, so a crash leaves a valid tree with the splits done so far).
  void split(Node* s) {
    std::uint64_t s_off = pool_.offset_of(s);
    std::uint64_t p_off = parent_of(*s);
    if (p_off && count_ids(*node(p_off)) == kIds) {
      split(node(p_off));
      p_off = parent_of(*s);  // s may have moved to the parent's new sibling
    }
    SplitLog lg{};
    lg.src = enc(s_off);
    lg.fresh = enc(nodes_->alloc());
    lg.parent = enc(p_off);
    lg.new_root = p_off ? 0 : enc(nodes_->alloc());
    lg.leaf = is_leaf(*s);
    lg.sep = s->id[2];
    if (lg.leaf) {
      lg.moved = 2;
      lg.id[0] = s->id[2], lg.id[1] = s->id[3];
      lg.ptr[0] = enc(s->ptr[2]), lg.ptr[1] = enc(s->ptr[3]);
    } else {
      lg.moved = 1;
      lg.id[0] = s->id[3];
      lg.ptr[0] = enc(s->ptr[3]), lg.ptr[1] = enc(s->ptr[4]);
    }
    lg.status = kLogValid;
    {
      pm::CategoryScope cat(pm::Category::log);
      pm::store(&root_->log, lg);
      pm::persist(&root_->log, sizeof lg);
    }
    redo();
    is_sep_[lg.sep] = 1;
    ++splits_;
  }

  bool scan_node(std::uint64_t off, Key start, std::size_t count, std::vector<KV>& out,
                 std::size_t& got) const {
    const Node& n = *node(off);
    int c = count_ids(n);
    if (is_leaf(n)) {
      for (int i = 0; i < c; ++i) {
        const Entry& e = table_[n.id[i]];
        if (e.key < start) continue;
        auto v = visible(e.rec);
        if (!v) continue;
        out.emplace_back(e.key, *v);
        if (++got == count) return true;
      }
      return false;
    }
    int i = 0;
    while (i < c && start >= key_of(n.id[i])) ++i;
    for (; i <= c; ++i)
      if (scan_node(n.ptr[i], start, count, out, got)) return true;
    return false;
  }

  int height() const {
    int h = 1;
    for (const Node* n = node(root_->root_node); !is_leaf(*n); n = node(n->ptr[0])) ++h;
    return h;
  }

  // --- recovery.cc and check.cc ---------------------------------------------------------

  void redo();
  void redo_parent(const SplitLog& lg, std::uint64_t s_off, std::uint64_t n_off);
  void recover();
  void rebuild_table();
  struct Checker;

  // PM is untrusted: what recovery cannot make sense of refuses the pool, before any
  // operation follows it.
  [[noreturn]] void problem(const std::string& s) const { refuse_damaged(pool_, "cawbt", s); }

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  Root* root_ = nullptr;
  std::unique_ptr<SlabArena> nodes_, records_;
  std::vector<Entry> table_;  // the ID table (§3.2.3): index = ID
  std::vector<std::uint8_t> is_sep_;
  std::vector<std::uint32_t> free_ids_;
  std::size_t live_ = 0, splits_ = 0;
  mutable std::shared_mutex mu_;
};

}  // namespace dptree::baselines::cawbt
