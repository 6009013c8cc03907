// The base tree: leaf list, inner index, lookups and ordered cursors (§2.2); see base_tree.h.
#include "st/base_tree.h"

#include <algorithm>

#include "dptree/pm/pool.h"

namespace dptree::detail {

BaseTree::BaseTree(pm::Pool& pool, Root* root, const LeafLayout& L)
    : pool_(pool), root_(root), L_(L) {}

Leaf BaseTree::leaf(u64 off) const {
  return Leaf{pool_.at(off), &L_};
}

// After a merge: one walk of the chain reads each leaf's link, max key and restart counter.
void BaseTree::rebuild_inner() {
  const int v = cv();
  leaf_.clear();
  max_.clear();
  fresh_.clear();
  for (u64 l = root_->head[v].off; l; l = leaf(l).next(v).off) {
    leaf_.push_back(l);
    max_.push_back(leaf(l).max_key(v));
    fresh_.push_back(leaf(l).rc(v) == root_->restart_count);
  }
  search_.build(max_);
}

void BaseTree::rebuild_inner(std::vector<u64> leaves, std::vector<u64> max) {
  leaf_ = std::move(leaves);
  max_ = std::move(max);
  fresh_.assign(leaf_.size(), 0);
  search_.build(max_);
}

std::size_t BaseTree::leaf_index(u64 k) const {
  return search_.find(k, leaf_.data());
}

void BaseTree::ensure_meta(std::size_t i) const {
  if (fresh_[i]) return;
  if (ensure_leaf_meta(leaf(leaf_[i]), cv(), root_->restart_count)) ++lazy_rebuilds_;
  fresh_[i] = 1;
}

void BaseTree::prefetch(std::size_t i, u64 h, ProbeMode mode) const {
  if (i < leaf_.size()) leaf_prefetch(leaf(leaf_[i]), cv(), h, mode);
}

std::optional<u64> BaseTree::lookup_at(std::size_t i, u64 k, u64 h, ProbeMode mode) const {
  if (i == leaf_.size()) return std::nullopt;
  ensure_meta(i);
  Leaf lf = leaf(leaf_[i]);
  long s = leaf_find(lf, cv(), k, h, mode);
  if (s < 0) return std::nullopt;
  return lf.value(static_cast<std::size_t>(s));
}

bool BaseTree::collect(u64 start, std::size_t n, std::vector<KVPair>& out) const {
  auto leaf_at = [&](std::size_t i) {
    ensure_meta(i);
    return leaf(leaf_[i]);
  };
  return leaves_collect(leaf_index(start), leaf_.size(), cv(), start, n, out, leaf_at,
                        [](Leaf lf, std::size_t s) { return lf.value(s); });
}

}  // namespace dptree::detail
