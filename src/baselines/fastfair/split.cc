// FAST_FAIR's growth: new nodes, the FAIR split and the parent update that follows it.
#include <mutex>
#include <vector>

#include "baselines/fastfair/tree.h"

namespace dptree::baselines::fastfair {

// A fresh node block, every slot kEnd (its chain word 0), born tidy, flushed (the activate
// that follows fences it).
std::uint64_t FastFair::new_node(std::uint32_t level, Key low) {
  auto blk = pool_.allocator().reserve(node_bytes_);
  auto* h = hdr(blk);
  Header init{};
  init.low_key = low;
  init.sync = fresh_sync(level) | kTidied;
  pm::store(h, init);
  auto* e = ents(blk);
  for (std::size_t i = 0; i < slots_; ++i) pm::store(&e[i], Entry{0, kEnd});
  return blk;
}

// FAIR split of a full node x (locked by `held`, unlocked on return), then the parent
// update, which holds no lock of this level (the B-link sibling covers the gap).
void FastFair::split(NodeLock& held, Path& path) {
  const std::uint64_t x = held.node;
  auto* h = hdr(x);
  auto* e = ents(x);
  const std::uint32_t lv = node_level(x);
  std::size_t n = end_of(x), m = n / 2;
  Key sep = e[m].key;
  std::uint64_t s = 0;
  {
    std::lock_guard g(grow_mu_);  // creation to publication: one node in flight
    s = new_node(lv, sep);
    auto* sh = hdr(s);
    auto* se = ents(s);
    pm::store(&sh->sync, sh->sync | kLocked);  // no write to it before x is truncated
    pm::store(&sh->sibling, h->sibling);
    std::size_t from = m;
    if (lv) {  // the separator moves up; its child becomes the sibling's leftmost
      pm::store(&sh->leftmost, e[m].val);
      from = m + 1;
    }
    pm::store_bytes(se, e + from, (n - from) * sizeof(Entry));
    pm::flush(pool_.at<std::byte>(s), node_bytes_);
    Phase p("split_link");
    chain_link(s);
    store8(&h->sibling, s);  // FAIR commit: the sibling is reachable
    pm::persist(&h->sibling, 8);
  }
  begin_change(x);
  store8(&e[m].val, kEnd);  // truncate the old node
  pm::persist(&e[m].val, 8);
  end_change(x);
  unlock(s);
  held.node = 0;
  unlock(x);
  insert_parent(path, lv + 1, sep, s);
}

void FastFair::insert_parent(Path& path, std::uint32_t level, Key k, std::uint64_t child) {
  if (level >= path.size()) {  // the top level split: a new root over it
    std::unique_lock g(grow_mu_);
    const auto top = load8(&root_->tree_root);
    if (node_level(top) + 1 == level) {
      auto r = new_node(level, 0);
      pm::store(&hdr(r)->leftmost, top);  // the root is always its level's leftmost node
      pm::store(&ents(r)[0], Entry{k, child});
      pm::flush(pool_.at<std::byte>(r), node_bytes_);
      Phase p("root_link");
      chain_link(r);
      store8(&root_->tree_root, r);
      pm::persist(&root_->tree_root, 8);
      path.push_back(r);
      return;
    }
    g.unlock();
    descend(k, &path, level);  // another writer grew the tree first: find our parent
  }
  for (;;) {
    NodeLock p(*this, lock_right(path[level], k));
    tidy(p.node);
    const Spot at = spot(p.node, k);
    if (at.n < cap_) {
      shift_right(p.node, at.n, at.p + (at.found ? 1 : 0), k, child);  // after an equal key
      return;
    }
    path[level] = p.node;
    split(p, path);
  }
}

}  // namespace dptree::baselines::fastfair
