// PACTree's recovery and check(). The data layer is the truth; recovery walks it from the head:
// it checks every word before following it (PM is untrusted), marks the slots it reaches
// (a slot a crash left allocated but unpublished is free again), and clears the entries a
// crash left behind in a split (keys at or above the next node's anchor: their leaves belong
// to the next node's entries). The search layer recovers itself (the ROART engine); then every
// anchor it holds must name the data node of that anchor, and the anchors a crash kept from it
// (the asynchronous updater had not inserted them) are inserted. The paper keeps them in a
// persistent SMO log instead; here the walk finds them.
#include <algorithm>
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

void PacTree::recover() {
  pm::CategoryScope cat(pm::Category::node);
  arenas_.open();
  records_ = 0;
  auto nodes = recover_list();
  recover_entries(nodes);
  recover_search_layer(nodes);
  arenas_.finish();
  if (root_->head == 0) {  // new: the head node, below every key (a crash before the store
    u64 h = arenas_[kArenaNode].alloc();  // leaves its slot unreached, so free)
    pm::store(node(h), DataNode{});
    pm::flush(node(h), sizeof(DataNode));
    pm::fence();
    pm::store(&root_->head, h);
    pm::persist(&root_->head, 8);
  }
}

// A leaf named by entry e: its slot marked (once) and its key checked.
static std::string_view checked_leaf(pm::Pool& pool, roart::ArenaSet<kArenas>& arenas, u64 e,
                                     bool mark, const std::function<void(std::string)>& bad) {
  int cls = roart::entry_class(e);
  u64 lo = roart::entry_leaf(e);
  if (cls >= roart::kLeafClasses || !arenas[kArenaLeaf0 + cls].is_slot(lo) ||
      (mark && !arenas[kArenaLeaf0 + cls].mark_used(lo)))
    bad(at("leaf", lo) + " is not a leaf slot of its class or is reached twice");
  const Leaf* l = pool.at<Leaf>(lo);
  if (l->len == 0 || l->len > roart::kMaxKeyBytes || sizeof(Leaf) + l->len > (32u << cls))
    bad(at("leaf", lo) + " has an impossible key length " + std::to_string(l->len));
  std::string_view k(l->key(), l->len);
  if (roart::entry_fp(e) != roart::fingerprint(k))
    bad(at("leaf", lo) + " does not have the fingerprint its entry carries");
  return k;
}

// The data nodes in list order, each marked, with anchors present (but the head's) and
// strictly increasing.
std::vector<u64> PacTree::recover_list() {
  std::vector<u64> nodes;
  auto bad = [this](std::string s) { problem(s); };
  std::string_view prev;
  for (u64 n = root_->head; n; n = node(n)->next) {
    if (!arenas_[kArenaNode].mark_used(n))
      problem(at("data node", n) + " is not a data-node slot or is reached twice");
    u64 a = node(n)->anchor;
    if ((a == 0) != nodes.empty())
      problem(at("data node", n) + (a ? " is the head but has an anchor" : " has no anchor"));
    if (a) {
      std::string_view k = checked_leaf(pool_, arenas_, a, true, bad);
      if (nodes.size() > 1 && k <= prev)
        problem(at("data node", n) + " has an anchor not above its left neighbour's");
      prev = k;
    }
    nodes.push_back(n);
  }
  return nodes;
}

// Each node's entries hold keys in [its anchor, the next anchor); those at or above the next
// anchor are a split's leftovers and are cleared (after the walk, as idempotent stores).
void PacTree::recover_entries(const std::vector<u64>& nodes) {
  auto bad = [this](std::string s) { problem(s); };
  std::vector<u64*> leftovers;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    DataNode* d = node(nodes[i]);
    std::string_view lo = anchor_of(nodes[i]);
    bool last = i + 1 == nodes.size();
    std::string_view hi = last ? std::string_view() : anchor_of(nodes[i + 1]);
    std::vector<std::string_view> keys;
    for (u64& e : d->entry) {
      if (!e) continue;
      bool moved = !last && checked_leaf(pool_, arenas_, e, false, bad) >= hi;
      if (moved) {
        leftovers.push_back(&e);
        continue;
      }
      std::string_view k = checked_leaf(pool_, arenas_, e, true, bad);
      if (i > 0 && k < lo) problem(at("data node", nodes[i]) + " holds a key below its anchor");
      keys.push_back(k);
    }
    std::sort(keys.begin(), keys.end());
    if (std::adjacent_find(keys.begin(), keys.end()) != keys.end())
      problem(at("data node", nodes[i]) + " holds a key twice");
    records_ += keys.size();
  }
  leftovers_cleared_ = leftovers.size();
  for (u64* e : leftovers) {
    pm::store(e, u64{0});
    pm::flush(e, 8);
  }
  if (!leftovers.empty()) pm::fence();
}

// Every anchor the search layer holds names the node of that anchor; the missing ones go in.
void PacTree::recover_search_layer(const std::vector<u64>& nodes) {
  std::set<u64> listed(nodes.begin(), nodes.end());
  std::set<u64> held;
  search_->scan(std::string_view("\0", 1), ~std::size_t{0}, [&](std::string_view k, Value n) {
    if (!listed.contains(n) || n == root_->head || anchor_of(n) != k)
      problem("the search layer maps an anchor to " + at("offset", n) +
              ", not to the data node of that anchor");
    held.insert(n);
  });
  for (std::size_t i = 1; i < nodes.size(); ++i)
    if (!held.contains(nodes[i])) {
      search_->put(anchor_of(nodes[i]), nodes[i], true, true);
      ++anchors_recovered_;
    }
}

CheckReport PacTree::check() const {
  drain();  // the updater's search-layer writes are not half done while this reads
  CheckReport r = search_->check();
  Arenas::Counts reached{};
  std::size_t records = 0, data_nodes = 0, missing = 0;
  std::set<u64> held;
  search_->scan(std::string_view("\0", 1), ~std::size_t{0}, [&](std::string_view k, Value n) {
    if (!arenas_[kArenaNode].is_used(n) || anchor_of(n) != k)
      r.fail("the search layer maps an anchor to " + at("offset", n) + ", not to its node");
    held.insert(n);
  });
  std::string prev_hi;
  for (u64 n = root_->head; n && r.problems.size() < 20; n = node(n)->next) {
    ++data_nodes;
    ++reached[kArenaNode];
    u64 next = node(n)->next;
    std::string_view lo = anchor_of(n), hi = next ? anchor_of(next) : std::string_view();
    if (n != root_->head) {
      ++reached[kArenaLeaf0 + roart::entry_class(node(n)->anchor)];
      missing += !held.contains(n);
    }
    std::vector<std::string_view> keys;
    for (u64 e : node(n)->entry) {
      if (!e) continue;
      ++reached[kArenaLeaf0 + roart::entry_class(e)];
      std::string_view k = key_of(e);
      if ((n != root_->head && k < lo) || (next && k >= hi))
        r.fail(at("data node", n) + " holds a key outside [its anchor, the next anchor)");
      if (roart::entry_fp(e) != roart::fingerprint(k))
        r.fail(at("data node", n) + " has an entry whose fingerprint is not its key's");
      keys.push_back(k);
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
