// PACTree's recovery and check(). The data layer is the truth; recovery walks it from the head:
// it checks every word before following it (PM is untrusted), marks the slots it reaches
// (a slot a crash left allocated but unlinked is free again), and finishes a split a crash
// interrupted after its link: it drops the pairs left behind (keys at or above the next node's
// anchor: the next node holds them) by rewriting the node's bitmap, and sets the node's
// `limit` to the next node's anchor. Those stores are idempotent, so a crash inside recovery leaves
// what the next recovery redoes. The search layer recovers itself (the ROART engine); then every
// anchor it holds must name the data node of that anchor, and the anchors a crash kept from it
// (the asynchronous updater had not inserted them) are inserted. The paper keeps them in a
// persistent SMO log instead; here the walk finds them.
#include <algorithm>
#include <bit>
#include <set>
#include <string>
#include <vector>

#include "baselines/common.h"
#include "baselines/pactree/pactree.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"

namespace dptree::baselines::pactree {

namespace {
std::string at(const char* what, u64 off) {
  return std::string(what) + " " + std::to_string(off);
}
}  // namespace

void PacTree::problem(const std::string& what) const {
  refuse_damaged(pool_, "pactree", what);
}

void PacTree::recover(unsigned threads) {
  pm::CategoryScope cat(pm::Category::node);
  arenas_.open();
  records_ = 0;
  auto nodes = recover_list();
  recover_pairs(nodes);
  arenas_.finish();
  if (root_->head == 0) {  // new: the head node, below every key (a crash before the store
    u64 h = arenas_[kArenaNode].alloc();  // leaves its slot unreached, so free)
    DataNode head{};
    head.limit = kNoLimit;
    pm::store(node(h), head);
    pm::flush(node(h), sizeof(DataNode));
    pm::fence();
    pm::store(&root_->head, h);
    pm::persist(&root_->head, 8);
  }
  // The search layer recovers after the data layer: its words name data nodes (valid()).
  const roart::Records* records = this;
  search_ = std::make_unique<roart::Tree>(pool_, &root_->search, threads == 1 ? 1 : 0, records);
  recover_search_layer(nodes);
}

// The key of the string form's leaf named by entry e, checked; its slot marked when `mark`.
std::string_view PacTree::checked_leaf(u64 e, bool mark) {
  int cls = roart::entry_class(e);
  u64 lo = roart::entry_leaf(e);
  if (cls >= roart::kLeafClasses || !arenas_[kArenaLeaf0 + cls].is_slot(lo) ||
      (mark && !arenas_[kArenaLeaf0 + cls].mark_used(lo)))
    problem(at("leaf", lo) + " is not a leaf slot of its class or is reached twice");
  const Leaf* l = leaf(e);
  if (l->len == 0 || l->len > roart::kMaxKeyBytes || sizeof(Leaf) + l->len > (32u << cls))
    problem(at("leaf", lo) + " has an impossible key length " + std::to_string(l->len));
  return {l->key(), l->len};
}

// The data nodes in list order, each marked, with anchors (but the head's) strictly increasing
// and, in the string form, in a leaf whose first 8 bytes are the inline anchor word.
std::vector<u64> PacTree::recover_list() {
  std::vector<u64> nodes;
  std::string prev;
  for (u64 n = root_->head; n; n = node(n)->next) {
    if (!arenas_[kArenaNode].mark_used(n))
      problem(at("data node", n) + " is not a data-node slot or is reached twice");
    const DataNode* d = node(n);
    if (nodes.empty() ? d->anchor || d->anchor_leaf : !ints_ && !d->anchor_leaf)
      problem(at("data node", n) +
              (nodes.empty() ? " is the head but has an anchor" : " has no anchor leaf"));
    if (ints_ && (d->anchor_leaf || d->anchor_bytes != __builtin_bswap64(d->anchor)))
      problem(at("data node", n) + " has an anchor leaf, or anchor bytes not its anchor word's");
    if (!nodes.empty()) {
      if (!ints_ && probe(checked_leaf(d->anchor_leaf, true)).word != d->anchor)
        problem(at("data node", n) + " has an anchor word that is not its anchor's");
      std::string a = anchor_key(n);
      if (nodes.size() > 1 && a <= prev)
        problem(at("data node", n) + " has an anchor not above its left neighbour's");
      prev = std::move(a);
    }
    nodes.push_back(n);
  }
  return nodes;
}

// Each node's valid pairs hold keys in [its anchor, the next anchor), once each, with their
// fingerprints; those at or above the next anchor are a split's leftovers and are dropped, and
// `limit` is set to the next anchor (after the walk, by idempotent stores to the first line).
void PacTree::recover_pairs(const std::vector<u64>& nodes) {
  struct Fix {
    u64 n, bitmap, limit;
  };
  std::vector<Fix> fixes;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const u64 next = i + 1 < nodes.size() ? nodes[i + 1] : 0;
    const u64 keep = recover_node(nodes[i], next, i == 0);
    const u64 limit = next ? node(next)->anchor : kNoLimit;
    if (keep != node(nodes[i])->bitmap || limit != node(nodes[i])->limit)
      fixes.push_back({nodes[i], keep, limit});
  }
  leftovers_cleared_ = 0;
  for (const Fix& f : fixes) {
    DataNode* d = node(f.n);
    leftovers_cleared_ += std::popcount(d->bitmap ^ f.bitmap);
    pm::store(&d->bitmap, f.bitmap);
    pm::store(&d->limit, f.limit);
    pm::flush(d, 64);
  }
  if (!fixes.empty()) pm::fence();
}

// Node n's bitmap without the split's leftovers; counts the records it keeps.
u64 PacTree::recover_node(u64 n, u64 next, bool head) {
  const DataNode* d = node(n);
  if (d->bitmap >> kNodeEntries)
    problem(at("data node", n) + " has a bitmap naming slots past its " +
            std::to_string(kNodeEntries));
  const std::string lo = anchor_key(n), hi = next ? anchor_key(next) : std::string();
  std::vector<std::string> keys;
  u64 keep = d->bitmap;
  for (u64 live = d->bitmap; live; live &= live - 1) {
    const int i = std::countr_zero(live);
    const Pair& pr = d->pair[i];
    std::string k = ints_ ? key_at(pr) : std::string(checked_leaf(pr.val, false));
    if (next && k >= hi) {
      keep &= ~(u64{1} << i);
      continue;
    }
    if (!ints_) checked_leaf(pr.val, true);
    const Probe p = probe(k);
    if (p.word != pr.key || p.fp != (d->fp[i / 8] >> (8 * (i % 8)) & 0xFF))
      problem(at("data node", n) + " has a pair whose key word or fingerprint is not its key's");
    if (!head && k < lo) problem(at("data node", n) + " holds a key below its anchor");
    keys.push_back(std::move(k));
  }
  std::sort(keys.begin(), keys.end());
  if (std::adjacent_find(keys.begin(), keys.end()) != keys.end())
    problem(at("data node", n) + " holds a key twice");
  records_ += keys.size();
  return keep;
}

// The search layer's recovery checked that its words name listed data nodes, each on the path
// of its anchor; the anchors it lacks go in.
void PacTree::recover_search_layer(const std::vector<u64>& nodes) {
  std::set<u64> held;
  search_->scan(std::string_view("\0", 1), ~std::size_t{0},
                [&](std::string_view, Value n) { held.insert(n); });
  for (std::size_t i = 1; i < nodes.size(); ++i)
    if (!held.contains(nodes[i])) {
      search_->put(anchor_key(nodes[i]), nodes[i], true, true);
      ++anchors_recovered_;
    }
}

CheckReport PacTree::check() const {
  drain();  // the updater's search-layer writes are not half done while this reads
  CheckReport r = search_->check();
  Arenas::Counts reached{};
  std::size_t records = 0, data_nodes = 0, missing = 0;
  std::set<u64> held;
  search_->scan(std::string_view("\0", 1), ~std::size_t{0},
                [&](std::string_view, Value n) { held.insert(n); });
  for (u64 n = root_->head; n && r.problems.size() < 20; n = node(n)->next) {
    ++data_nodes;
    ++reached[kArenaNode];
    const DataNode* d = node(n);
    const std::string lo = anchor_key(n), hi = d->next ? anchor_key(d->next) : std::string();
    if (n != root_->head) {
      if (!ints_) ++reached[kArenaLeaf0 + roart::entry_class(d->anchor_leaf)];
      missing += !held.contains(n);
    }
    if (d->bitmap >> kNodeEntries) r.fail(at("data node", n) + " has bits past its slots");
    if (d->limit != (d->next ? node(d->next)->anchor : kNoLimit))
      r.fail(at("data node", n) + " has a limit that is not the next node's anchor");
    if (ints_ && d->anchor_bytes != __builtin_bswap64(d->anchor))
      r.fail(at("data node", n) + " has anchor bytes that are not its anchor word's");
    std::vector<std::string> keys;
    for (u64 live = d->bitmap & ((u64{1} << kNodeEntries) - 1); live; live &= live - 1) {
      const int i = std::countr_zero(live);
      const Pair& pr = d->pair[i];
      if (!ints_) ++reached[kArenaLeaf0 + roart::entry_class(pr.val)];
      std::string k = key_at(pr);
      if ((n != root_->head && k < lo) || (d->next && k >= hi))
        r.fail(at("data node", n) + " holds a key outside [its anchor, the next anchor)");
      const Probe p = probe(k);
      if (p.word != pr.key || p.fp != (d->fp[i / 8] >> (8 * (i % 8)) & 0xFF))
        r.fail(at("data node", n) + " has a pair whose key word or fingerprint is not its key's");
      keys.push_back(std::move(k));
    }
    std::sort(keys.begin(), keys.end());
    if (std::adjacent_find(keys.begin(), keys.end()) != keys.end())
      r.fail(at("data node", n) + " holds a key twice");
    records += keys.size();
  }
  if (records != records_.load())
    r.fail("record count " + std::to_string(records_.load()) + " but the data layer holds " +
           std::to_string(records));
  arenas_.check_slots(reached, "the data layer", r);
  auto all = search_->arenas();
  arenas_.list(all);
  check_arena_blocks(pool_, all, r);
  r.facts = {{"records", double(records)},
             {"data_nodes", double(data_nodes)},
             {"anchors_not_in_search_layer", double(missing)}};
  return r;
}

}  // namespace dptree::baselines::pactree
