// CAWBT's check(): a walk of the tree from the root (node slots, parent pointers, IDs known to
// the ID table and inside the parent's key range, ascending keys, leaves at one depth, records
// and tombstones), then the totals against the ID table and the arenas, and the allocator.
#include <set>
#include <string>
#include <vector>

#include "baselines/cawbt/tree.h"

namespace dptree::baselines::cawbt {

struct Cawbt::Checker {
  // A node to visit, with the key range its parent gives it.
  struct Frame {
    std::uint64_t off, parent;
    bool has_lo, has_hi;
    Key lo, hi;
    int depth;
  };

  explicit Checker(const Cawbt& tree) : t(tree) {}
  const Cawbt& t;
  CheckReport r;
  std::set<std::uint64_t> seen_nodes, seen_recs;
  std::set<std::uint32_t> leaf_ids, inner_ids;
  std::size_t live = 0, leaves = 0;
  int leaf_depth = -1;
  std::vector<Frame> stack;

  void walk() {
    stack.push_back({t.root_->root_node, 0, false, false, 0, 0, 0});
    while (!stack.empty() && r.problems.size() < 20) {
      const Frame f = stack.back();
      stack.pop_back();
      const std::string at = "node " + std::to_string(f.off);
      if (!t.nodes_->is_slot(f.off) || !seen_nodes.insert(f.off).second) {
        r.fail(at + " is not a node slot or is reached twice");
        continue;
      }
      if (!t.nodes_->is_used(f.off)) r.fail(at + " is reachable but free in the arena");
      const Node& n = *t.node(f.off);
      if (parent_of(n) != f.parent) r.fail(at + " has a wrong parent pointer");
      const int c = count_ids(n);
      for (int i = c; i < kIds; ++i)
        if (n.id[i]) r.fail(at + " has an ID after an empty slot");
      const std::vector<Key> keys = keys_of(n, c, f, at);
      if (is_leaf(n))
        leaf(n, c, f, keys, at);
      else
        inner(n, c, f, keys, at);
    }
  }

  // The node's keys through the ID table (0 for an unknown ID), each inside the frame's range.
  std::vector<Key> keys_of(const Node& n, int c, const Frame& f, const std::string& at) {
    std::vector<Key> keys;
    for (int i = 0; i < c; ++i) {
      const std::uint32_t id = n.id[i];
      if (id >= t.table_.size() || !t.table_[id].used) {
        r.fail(at + " holds ID " + std::to_string(id) + " that the ID table does not know");
        keys.push_back(0);
        continue;
      }
      const Key k = t.table_[id].key;
      keys.push_back(k);
      if ((f.has_lo && k < f.lo) || (f.has_hi && k >= f.hi))
        r.fail(at + " holds a key outside its parent's range");
    }
    for (int i = 1; i < c; ++i)
      if (keys[i - 1] >= keys[i]) r.fail(at + " keys are not strictly ascending");
    return keys;
  }

  void leaf(const Node& n, int c, const Frame& f, const std::vector<Key>& keys,
            const std::string& at) {
    ++leaves;
    if (leaf_depth < 0) leaf_depth = f.depth;
    if (leaf_depth != f.depth) r.fail(at + " is a leaf at another depth");
    for (int i = 0; i < c; ++i) {
      if (!leaf_ids.insert(n.id[i]).second) r.fail(at + " repeats an ID of another leaf");
      if (!t.records_->is_slot(n.ptr[i]) || !seen_recs.insert(n.ptr[i]).second) {
        r.fail(at + " points to a record twice or outside the record arena");
        continue;
      }
      if (!t.records_->is_used(n.ptr[i])) r.fail(at + " points to a free record slot");
      const Record& rec = *t.pool_.at<Record>(n.ptr[i]);
      if (t.table_[n.id[i]].rec != n.ptr[i] || rec.key != keys[i])
        r.fail(at + " disagrees with the ID table");
      if (!(rec.value & kTombstone))
        ++live;
      else if (!t.is_sep_[n.id[i]])
        r.fail(at + " keeps a tombstone that is not a separator");
    }
    for (int i = c; i < kPtrs; ++i)
      if (n.ptr[i]) r.fail(at + " has a pointer in an empty slot");
  }

  void inner(const Node& n, int c, const Frame& f, const std::vector<Key>& keys,
             const std::string& at) {
    if (c == 0) r.fail(at + " is an inner node without separators");
    for (int i = 0; i < c; ++i) {
      inner_ids.insert(n.id[i]);
      if (n.id[i] < t.is_sep_.size() && !t.is_sep_[n.id[i]])
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

  // What the walk found against the ID table, the record count and the arenas.
  void totals() {
    for (std::uint32_t id : inner_ids)
      if (!leaf_ids.contains(id)) r.fail("separator ID " + std::to_string(id) + " is in no leaf");
    if (live != t.live_)
      r.fail("record count " + std::to_string(t.live_) + " but leaves hold " +
             std::to_string(live));
    check_arena_slots(*t.nodes_, seen_nodes.size(), "node arena", "the tree", r);
    check_arena_slots(*t.records_, seen_recs.size(), "record arena", "the leaf level", r);
  }
};

CheckReport Cawbt::check() const {
  std::shared_lock l(mu_);
  Checker c(*this);
  if (root_->log.status != 0) c.r.fail("split log still holds a record");
  c.walk();
  c.totals();
  // Allocator: live blocks are exactly the root block, the directories and the slabs.
  check_arena_blocks(pool_, {nodes_.get(), records_.get()}, c.r);
  c.r.facts = {{"records", double(c.live)},
               {"nodes", double(c.seen_nodes.size())},
               {"leaves", double(c.leaves)},
               {"height", double(c.leaf_depth + 1)}};
  return c.r;
}

}  // namespace dptree::baselines::cawbt
