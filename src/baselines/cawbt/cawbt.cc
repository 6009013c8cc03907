// CAWBT (Lee, Lee, Won, IEICE Trans. 2019): a B+-tree of 64-byte PM nodes that
// relies on a whole cache line reaching PM atomically.
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
#include "baselines/cawbt/cawbt.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "baselines/slab/slab_arena.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/registry.h"
#include "registry/index_table.h"
#include "registry/option_values.h"

namespace dptree::baselines {
namespace {

constexpr std::uint64_t kMagic = 0x31544257'41434350ull;  // "PCCAWBT1"
constexpr std::uint64_t kLeafBit = 1;
constexpr int kIds = 4;   // IDs per node (§3.2.2: degree 4)
constexpr int kPtrs = 5;  // pointers per node
constexpr Value kTombstone = Value{1} << 63;
constexpr std::uint32_t kLogValid = 0xCA5B7001u;

struct alignas(64) Node {
  std::uint64_t meta;  // parent offset | kLeafBit
  std::uint32_t id[kIds];
  std::uint64_t ptr[kPtrs];
};
static_assert(sizeof(Node) == 64);

struct Record {
  Key key;
  Value value;  // kTombstone set: deleted, kept because the ID is a separator
};
static_assert(sizeof(Record) == 16);

// The minimal redo record of a split (§3.4, Fig. 6): one cache line. Offsets are stored
// divided by 16 (every node and record is 16-byte aligned), so 4 bytes each cover 64 GiB.
struct alignas(64) SplitLog {
  std::uint32_t status;  // kLogValid while a split is in flight
  std::uint32_t src, fresh, parent, new_root;
  std::uint32_t sep;    // the ID that goes up
  std::uint32_t leaf;   // splitting a leaf
  std::uint32_t moved;  // IDs that move to the new node (leaf 2, inner 1)
  std::uint32_t id[2];
  std::uint32_t ptr[3];  // pointers that move (leaf 2, inner 2)
  std::uint32_t unused[3];
};
static_assert(sizeof(SplitLog) == 64);

struct alignas(64) Root {
  std::uint64_t magic;
  std::uint64_t slab_size;
  std::uint64_t node_dir;  // slab directories (SlabArena)
  std::uint64_t record_dir;
  std::uint64_t root_node;
  std::uint64_t pad[3];
  SplitLog log;
};
static_assert(sizeof(Root) == 128);

std::uint32_t enc(std::uint64_t off) {
  return static_cast<std::uint32_t>(off >> 4);
}
std::uint64_t dec(std::uint32_t v) {
  return std::uint64_t{v} << 4;
}

int count_ids(const Node& n) {
  int c = 0;
  while (c < kIds && n.id[c]) ++c;
  return c;
}
bool is_leaf(const Node& n) {
  return n.meta & kLeafBit;
}
std::uint64_t parent_of(const Node& n) {
  return n.meta & ~kLeafBit;
}

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

  CheckReport check() const override {
    std::shared_lock l(mu_);
    CheckReport r;
    if (root_->log.status != 0) r.fail("split log still holds a record");
    std::set<std::uint64_t> seen_nodes, seen_recs;
    std::set<std::uint32_t> leaf_ids, inner_ids;
    std::size_t live = 0, leaves = 0;
    int leaf_depth = -1;
    struct Frame {
      std::uint64_t off, parent;
      bool has_lo, has_hi;
      Key lo, hi;
      int depth;
    };
    std::vector<Frame> stack{{root_->root_node, 0, false, false, 0, 0, 0}};
    while (!stack.empty() && r.problems.size() < 20) {
      Frame f = stack.back();
      stack.pop_back();
      std::string at = "node " + std::to_string(f.off);
      if (!nodes_->is_slot(f.off) || !seen_nodes.insert(f.off).second) {
        r.fail(at + " is not a node slot or is reached twice");
        continue;
      }
      if (!nodes_->is_used(f.off)) r.fail(at + " is reachable but free in the arena");
      const Node& n = *node(f.off);
      if (parent_of(n) != f.parent) r.fail(at + " has a wrong parent pointer");
      int c = count_ids(n);
      for (int i = c; i < kIds; ++i)
        if (n.id[i]) r.fail(at + " has an ID after an empty slot");
      auto in_range = [&](Key k) { return (!f.has_lo || k >= f.lo) && (!f.has_hi || k < f.hi); };
      std::vector<Key> keys;
      for (int i = 0; i < c; ++i) {
        std::uint32_t id = n.id[i];
        if (id >= table_.size() || !table_[id].used) {
          r.fail(at + " holds ID " + std::to_string(id) + " that the ID table does not know");
          keys.push_back(0);
          continue;
        }
        keys.push_back(table_[id].key);
        if (!in_range(table_[id].key)) r.fail(at + " holds a key outside its parent's range");
      }
      for (int i = 1; i < c; ++i)
        if (keys[i - 1] >= keys[i]) r.fail(at + " keys are not strictly ascending");
      if (is_leaf(n)) {
        ++leaves;
        if (leaf_depth < 0) leaf_depth = f.depth;
        if (leaf_depth != f.depth) r.fail(at + " is a leaf at another depth");
        for (int i = 0; i < c; ++i) {
          if (!leaf_ids.insert(n.id[i]).second) r.fail(at + " repeats an ID of another leaf");
          if (!records_->is_slot(n.ptr[i]) || !seen_recs.insert(n.ptr[i]).second) {
            r.fail(at + " points to a record twice or outside the record arena");
            continue;
          }
          if (!records_->is_used(n.ptr[i])) r.fail(at + " points to a free record slot");
          const Record& rec = *pool_.at<Record>(n.ptr[i]);
          if (table_[n.id[i]].rec != n.ptr[i] || rec.key != keys[i])
            r.fail(at + " disagrees with the ID table");
          if (!(rec.value & kTombstone))
            ++live;
          else if (!is_sep_[n.id[i]])
            r.fail(at + " keeps a tombstone that is not a separator");
        }
        for (int i = c; i < kPtrs; ++i)
          if (n.ptr[i]) r.fail(at + " has a pointer in an empty slot");
      } else {
        if (c == 0) r.fail(at + " is an inner node without separators");
        for (int i = 0; i < c; ++i) {
          inner_ids.insert(n.id[i]);
          if (n.id[i] < is_sep_.size() && !is_sep_[n.id[i]])
            r.fail(at + " separator not flagged in DRAM");
        }
        for (int i = c + 1; i < kPtrs; ++i)
          if (n.ptr[i]) r.fail(at + " has a child after its last");
        for (int i = 0; i <= c; ++i) {
          Frame ch{n.ptr[i], f.off, f.has_lo, f.has_hi, f.lo, f.hi, f.depth + 1};
          if (i > 0) ch.has_lo = true, ch.lo = keys[i - 1];
          if (i < c) ch.has_hi = true, ch.hi = keys[i];
          stack.push_back(ch);
        }
      }
    }
    for (std::uint32_t id : inner_ids)
      if (!leaf_ids.contains(id)) r.fail("separator ID " + std::to_string(id) + " is in no leaf");
    if (live != live_)
      r.fail("record count " + std::to_string(live_) + " but leaves hold " + std::to_string(live));
    if (seen_nodes.size() != nodes_->used_slots())
      r.fail("node arena uses " + std::to_string(nodes_->used_slots()) + " slots, tree reaches " +
             std::to_string(seen_nodes.size()));
    if (seen_recs.size() != records_->used_slots())
      r.fail("record arena uses " + std::to_string(records_->used_slots()) +
             " slots, leaves reach " + std::to_string(seen_recs.size()));
    // Allocator: live blocks are exactly the root block, the directories and the slabs.
    check_arena_blocks(pool_, {nodes_.get(), records_.get()}, r);
    r.facts = {{"records", double(live)},
               {"nodes", double(seen_nodes.size())},
               {"leaves", double(leaves)},
               {"height", double(leaf_depth + 1)}};
    return r;
  }

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

  // Applies the split in root_->log. Idempotent: recovery runs it again after a crash.
  void redo() {
    const SplitLog lg = root_->log;
    std::uint64_t s_off = dec(lg.src), n_off = dec(lg.fresh), p_off = dec(lg.parent),
                  r_off = dec(lg.new_root);
    // A torn or garbage record (possible only without 64-byte atomicity) must not send the
    // redo through wild pointers: refuse it.
    bool ok = lg.moved >= 1 && lg.moved <= 2 && nodes_->is_slot(s_off) && nodes_->is_slot(n_off) &&
              (p_off ? nodes_->is_slot(p_off) : nodes_->is_slot(r_off));
    for (int i = 0; ok && i < 2; ++i)
      ok = lg.leaf ? records_->is_slot(dec(lg.ptr[i])) : nodes_->is_slot(dec(lg.ptr[i]));
    if (!ok)
      throw Error(Errc::corrupt, "cawbt in " + pool_.name() +
                                     ": the split log names blocks that are not nodes; the pool "
                                     "is damaged (a torn cache line?)");
    Node* s = node(s_off);
    Node fresh{};
    fresh.meta = (p_off ? p_off : r_off) | (lg.leaf ? kLeafBit : 0);
    for (std::uint32_t i = 0; i < lg.moved; ++i) fresh.id[i] = lg.id[i];
    for (int i = 0; i < 2; ++i) fresh.ptr[i] = dec(lg.ptr[i]);  // leaf 2 records, inner 2 children
    pm::store(node(n_off), fresh);
    pm::flush(node(n_off), sizeof(Node));
    if (!lg.leaf)
      for (int i = 0; i < 2; ++i) {
        Node* ch = node(fresh.ptr[i]);
        pm::store(&ch->meta, n_off | (ch->meta & kLeafBit));
        pm::flush(ch, sizeof(Node));
      }
    Node left = *s;  // truncate: keep IDs 0-1 (and children 0-2 of an inner node)
    left.id[2] = left.id[3] = 0;
    left.ptr[lg.leaf ? 2 : 3] = 0;
    left.ptr[lg.leaf ? 3 : 4] = 0;
    if (lg.leaf) left.ptr[4] = 0;
    if (!p_off) left.meta = r_off | (s->meta & kLeafBit);
    pm::store(s, left);
    pm::flush(s, sizeof(Node));
    if (!p_off) {
      Node r{};
      r.id[0] = lg.sep;
      r.ptr[0] = s_off;
      r.ptr[1] = n_off;
      pm::store(node(r_off), r);
      pm::flush(node(r_off), sizeof(Node));
      pm::fence();  // the new root's line before the root word names it
      pm::store(&root_->root_node, r_off);
      pm::flush(&root_->root_node, 8);
    } else {
      Node p = *node(p_off);
      int c = count_ids(p), j = 0;
      bool done = false;
      for (int i = 0; i <= c; ++i) done |= p.ptr[i] == n_off;
      if (!done) {
        while (j <= c && p.ptr[j] != s_off) ++j;
        if (j > c || c == kIds)
          throw Error(Errc::corrupt, "cawbt in " + pool_.name() +
                                         ": the split log names a parent that does not hold "
                                         "the split node; the pool is damaged");
        for (int i = c; i > j; --i) p.id[i] = p.id[i - 1];
        for (int i = c + 1; i > j + 1; --i) p.ptr[i] = p.ptr[i - 1];
        p.id[j] = lg.sep;
        p.ptr[j + 1] = n_off;
        pm::store(node(p_off), p);
        pm::flush(node(p_off), sizeof(Node));
      }
    }
    pm::fence();
    pm::CategoryScope cat(pm::Category::log);
    pm::store(&root_->log.status, 0);
    pm::persist(&root_->log, 8);
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

  // §4.4: finish an interrupted split from the redo record, then rebuild the ID table (and the
  // arenas' used slots) from the tree. Writes only the redo and, for a fresh pool, the first
  // leaf, both idempotent, so a crash during recovery is recovered the same way.
  void recover() {
    pm::CategoryScope cat(pm::Category::node);
    nodes_->open();
    records_->open();
    if (root_->log.status == kLogValid) redo();
    if (root_->root_node == 0) {
      std::uint64_t leaf = nodes_->alloc();  // slot is free: nothing reaches it
      Node n{};
      n.meta = kLeafBit;
      write_node(node(leaf), n);
      pm::store(&root_->root_node, leaf);
      pm::persist(&root_->root_node, 8);
      nodes_->open();  // forget the volatile mark; the walk below marks it
    }
    table_.assign(1, Entry{});  // ID 0 means an empty slot
    is_sep_.assign(1, 0);
    std::vector<std::uint32_t> inner_ids;
    // (node, its parent): a parent pointer a split would follow must be the real parent.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> stack{{root_->root_node, 0}};
    live_ = 0;
    free_ids_.clear();
    // IDs are reused, so none exceeds the number of record slots: a larger one is garbage.
    std::size_t max_id = records_->slabs() * (root_->slab_size / sizeof(Record)) + 1;
    while (!stack.empty()) {
      auto [off, parent] = stack.back();
      stack.pop_back();
      if (!nodes_->mark_used(off))
        problem("node " + std::to_string(off) + " is not a node slot or is reached twice");
      const Node& n = *node(off);
      if (parent_of(n) != parent)
        problem("node " + std::to_string(off) + " names parent " + std::to_string(parent_of(n)) +
                ", not " + std::to_string(parent));
      int c = count_ids(n);
      if (is_leaf(n)) {
        for (int i = 0; i < c; ++i) {
          std::uint32_t id = n.id[i];
          if (id > max_id)
            problem("leaf " + std::to_string(off) + " holds impossible ID " + std::to_string(id));
          if (!records_->mark_used(n.ptr[i]))
            problem("leaf " + std::to_string(off) + " names record " + std::to_string(n.ptr[i]) +
                    " twice or outside the record arena");
          if (id >= table_.size()) table_.resize(id + 1), is_sep_.resize(id + 1, 0);
          if (table_[id].used) problem("ID " + std::to_string(id) + " is in two leaf slots");
          const Record& rec = *pool_.at<Record>(n.ptr[i]);
          table_[id] = {rec.key, n.ptr[i], true};
          if (!(rec.value & kTombstone)) ++live_;
        }
      } else {
        for (int i = 0; i < c; ++i) inner_ids.push_back(n.id[i]);
        for (int i = 0; i <= c && i < kPtrs; ++i) stack.emplace_back(n.ptr[i], off);
      }
    }
    for (std::uint32_t id : inner_ids) {
      if (id > max_id) problem("an inner node holds impossible ID " + std::to_string(id));
      if (id >= is_sep_.size()) table_.resize(id + 1), is_sep_.resize(id + 1, 0);
      is_sep_[id] = 1;
    }
    for (std::uint32_t id = static_cast<std::uint32_t>(table_.size()); id-- > 1;)
      if (!table_[id].used) free_ids_.push_back(id);
    nodes_->finish();
    records_->finish();
  }
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

}  // namespace
}  // namespace dptree::baselines

namespace dptree {

void register_cawbt_index() {
  using baselines::Cawbt;
  add_builtin_index(
      {"cawbt",
       "CAWBT (Lee et al., IEICE 2019): 64-byte PM nodes with 4-byte IDs through a DRAM ID "
       "table, one-line redo log for splits, global write lock; assumes 64-byte atomic writes "
       "(x86 promises 8), so it is not crash-consistent on real hardware",
       true, true, [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
         if (!cfg.pool) throw Error(Errc::invalid_argument, "cawbt is persistent: give it a pool");
         option_values::refuse_options("cawbt", cfg.options, "its nodes are one cache line");
         return std::make_unique<Cawbt>(*cfg.pool);
       }});
}

}  // namespace dptree
