// CAWBT's split redo (§3.4) and its open (§4.4): an interrupted split is finished from the
// one-line redo record, then the DRAM ID table is rebuilt from the leaves.
#include <string>
#include <utility>
#include <vector>

#include "baselines/cawbt/tree.h"

namespace dptree::baselines::cawbt {

// The parent gains the separator and the new node beside the split one, unless a redo before
// a crash already put them there. Always inlined into redo(), its one caller: a split comes
// every few inserts here, and as a call it cost about 15 more instructions per insert.
[[gnu::always_inline]] inline void Cawbt::redo_parent(const SplitLog& lg, std::uint64_t s_off,
                                                      std::uint64_t n_off) {
  const std::uint64_t p_off = dec(lg.parent);
  Node p = *node(p_off);
  int c = count_ids(p), j = 0;
  for (int i = 0; i <= c; ++i)
    if (p.ptr[i] == n_off) return;
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

// Applies the split in root_->log. Idempotent: recovery runs it again after a crash.
void Cawbt::redo() {
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
    redo_parent(lg, s_off, n_off);
  }
  pm::fence();
  pm::CategoryScope cat(pm::Category::log);
  pm::store(&root_->log.status, 0);
  pm::persist(&root_->log, 8);
}

// §4.4: finish an interrupted split from the redo record, then rebuild the ID table (and the
// arenas' used slots) from the tree. Writes only the redo and, for a fresh pool, the first
// leaf, both idempotent, so a crash during recovery is recovered the same way.
void Cawbt::recover() {
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
  rebuild_table();
  nodes_->finish();
  records_->finish();
}

// The ID table, the separator flags, the free IDs and the record count, from a walk of the
// tree that marks the arenas' used slots and refuses what cannot be a tree.
void Cawbt::rebuild_table() {
  table_.assign(1, Entry{});  // ID 0 means an empty slot
  is_sep_.assign(1, 0);
  std::vector<std::uint32_t> inner_ids;
  // (node, its parent): a parent pointer a split would follow must be the real parent.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> stack{{root_->root_node, 0}};
  live_ = 0;
  free_ids_.clear();
  // IDs are reused, so none exceeds the number of record slots: a larger one is garbage.
  std::size_t max_id = records_->slabs() * (root_->slab_size / sizeof(Record)) + 1;
  auto str = [](std::uint64_t x) { return std::to_string(x); };
  while (!stack.empty()) {
    auto [off, parent] = stack.back();
    stack.pop_back();
    if (!nodes_->mark_used(off))
      problem("node " + str(off) + " is not a node slot or is reached twice");
    const Node& n = *node(off);
    if (parent_of(n) != parent)
      problem("node " + str(off) + " names parent " + str(parent_of(n)) + ", not " + str(parent));
    int c = count_ids(n);
    if (!is_leaf(n)) {
      for (int i = 0; i < c; ++i) inner_ids.push_back(n.id[i]);
      for (int i = 0; i <= c && i < kPtrs; ++i) stack.emplace_back(n.ptr[i], off);
      continue;
    }
    for (int i = 0; i < c; ++i) {
      std::uint32_t id = n.id[i];
      if (id > max_id) problem("leaf " + str(off) + " holds impossible ID " + str(id));
      if (!records_->mark_used(n.ptr[i]))
        problem("leaf " + str(off) + " names record " + str(n.ptr[i]) +
                " twice or outside the record arena");
      if (id >= table_.size()) table_.resize(id + 1), is_sep_.resize(id + 1, 0);
      if (table_[id].used) problem("ID " + str(id) + " is in two leaf slots");
      const Record& rec = *pool_.at<Record>(n.ptr[i]);
      table_[id] = {rec.key, n.ptr[i], true};
      if (!(rec.value & kTombstone)) ++live_;
    }
  }
  for (std::uint32_t id : inner_ids) {
    if (id > max_id) problem("an inner node holds impossible ID " + str(id));
    if (id >= is_sep_.size()) table_.resize(id + 1), is_sep_.resize(id + 1, 0);
    is_sep_[id] = 1;
  }
  for (std::uint32_t id = static_cast<std::uint32_t>(table_.size()); id-- > 1;)
    if (!table_[id].used) free_ids_.push_back(id);
}

}  // namespace dptree::baselines::cawbt
