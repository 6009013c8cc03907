// Opening FAST_FAIR: the root block (an earlier format refused), the checks of an untrusted
// pool before anything follows its words, and the instant recovery (a fresh lock epoch, the
// unpublished tail node freed).
#include <algorithm>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "baselines/fastfair/tree.h"

namespace dptree::baselines::fastfair {

namespace {

// The earlier format a pool holds, if any: a sentence for the error that refuses it.
const char* earlier_format(const pm::Pool& pool) {
  if (*pool.root_word() == 0) return nullptr;
  owned_root(pool, "fastfair");
  if (*pool.root<std::uint64_t>() == kMagicWideHeader)
    return "the first format (64-byte node headers holding three creation-chain words: 27 "
           "entries a 512-byte node)";
  return nullptr;
}

}  // namespace

FastFair::FastFair(pm::Pool& pool, std::size_t node_bytes_opt, bool explicit_size, bool shared)
    : claim_(pool, "fastfair"), pool_(pool), shared_(shared) {
  pm::CategoryScope cat(pm::Category::node);
  if (const char* earlier = earlier_format(pool_))
    throw Error(Errc::version_mismatch,
                "pool '" + pool_.name() + "' holds a fastfair of " + earlier +
                    ", which this build does not read; it reads the second (32-byte headers, "
                    "the chain word in the end-mark slot: 29 entries a 512-byte node): load "
                    "its keys into a new pool");
  root_ = open_root<Root>(pool_, kMagic, "fastfair", "node_bytes", node_bytes_opt, explicit_size);
  node_bytes_ = root_->param;
  slots_ = (node_bytes_ - sizeof(Header)) / sizeof(Entry);
  cap_ = slots_ - 1;  // the last slot always holds kEnd
  next_at_ = sizeof(Header) + cap_ * sizeof(Entry) + offsetof(Entry, key);
  const auto rw = *pool_.root_word();
  base_ = pool_.at<std::byte>(rw) - rw;
  recover();
}

void FastFair::corrupt(std::uint64_t off, const std::string& problem) const {
  throw Error(Errc::corrupt, "pool '" + pool_.name() + "': fastfair node at offset " +
                                 std::to_string(off) + " " + problem +
                                 ": the pool is damaged; restore it from a copy");
}

// PM is untrusted: before anything follows a word of the tree, every node must be a chain
// node (node_chain.h), every child and sibling a node, children one level down, siblings on
// the same level with no cycle, no sync word stamped with this open's epoch (readers would
// wait on its lock forever, writers skip the repair of a node it marks tidied), and kEnd in
// every node's last slot. Lookups and writes then trust the tree. Returns the nodes in
// creation order.
std::vector<std::uint64_t> FastFair::validate(std::uint64_t epoch) const {
  if (node_bytes_ < 128 || node_bytes_ > 4096 || (node_bytes_ & (node_bytes_ - 1)))
    corrupt(pool_.offset_of(root_), "(the root) holds node_bytes " + std::to_string(node_bytes_));
  auto order = chain_nodes(pool_, &root_->first, node_bytes_, "fastfair", next_at_);
  std::unordered_map<std::uint64_t, std::uint32_t> level;
  for (auto n : order) level[n] = level_of(hdr(n)->sync);
  auto node_at = [&](std::uint64_t from, std::uint64_t to, std::int64_t want, const char* what) {
    auto it = level.find(to);
    if (it == level.end() || (want >= 0 && it->second != want))
      corrupt(from, std::string("names ") + what + " " + std::to_string(to) +
                        ", not a node of the right level");
  };
  for (auto n : order) {
    const auto* h = hdr(n);
    const std::uint32_t lv = level[n];
    if (lv > kMaxLevel) corrupt(n, "has level " + std::to_string(lv));
    if ((h->sync >> 32) == epoch) corrupt(n, "holds a sync word of an open still to come");
    // The searches rely on it to stop (tree.h, the quick passes): a node is created with every
    // slot kEnd and persisted before it is linked, and no store puts anything else there.
    if (ents(n)[slots_ - 1].val != kEnd) corrupt(n, "has no end mark in its last slot");
    if (h->sibling) node_at(n, h->sibling, lv, "sibling");
    if (!lv) continue;
    node_at(n, h->leftmost, lv - 1, "leftmost child");
    const auto* e = ents(n);
    for (std::size_t i = 0; i < slots_ && e[i].val != kEnd; ++i)
      if (e[i].val != kHole) node_at(n, e[i].val, lv - 1, "child");
  }
  if (root_->tree_root) node_at(pool_.offset_of(&root_->tree_root), root_->tree_root, -1, "root");
  // Sibling lists end: colour each node once (0 new, 1 on the current walk, 2 done).
  std::unordered_map<std::uint64_t, int> colour;
  for (auto n : order) {
    std::vector<std::uint64_t> walk;
    auto x = n;
    for (; x && !colour[x]; x = hdr(x)->sibling) {
      colour[x] = 1;
      walk.push_back(x);
    }
    if (x && colour[x] == 1) corrupt(x, "is on a cycle of sibling links");
    for (auto w : walk) colour[w] = 2;
  }
  return order;
}

const char* current_phase() {
  return PhaseName<FastFairPhases>::current;
}

// Frees the newest node if a crash kept it from being published; makes the first leaf.
void FastFair::recover() {
  // A fresh epoch makes every lock word a crash (or a close) left in PM stale.
  epoch_ = (root_->epoch + 1) & 0xffffffff;
  if (epoch_ == 0) epoch_ = 1;
  auto order = validate(epoch_);
  pm::store(&root_->epoch, epoch_);
  pm::persist(&root_->epoch, 8);
  tail_ = order.empty() ? 0 : order.back();
  if (tail_ && !published(order, tail_)) drop_tail(order);
  if (!root_->tree_root) {
    auto leaf = new_node(0, 0);
    pm::flush(pool_.at<std::byte>(leaf), node_bytes_);
    chain_link(leaf);
    store8(&root_->tree_root, leaf);
    pm::persist(&root_->tree_root, 8);
  }
}

// A split publishes its new node with the sibling word of the node it split (FAIR), a root
// growth with the tree root word; nothing else names a node first. The open walks every node
// already, so this needs no creator word in the node.
bool FastFair::published(const std::vector<std::uint64_t>& order, std::uint64_t t) const {
  return root_->tree_root == t ||
         std::any_of(order.begin(), order.end(), [&](auto n) { return hdr(n)->sibling == t; });
}

// Frees the chain's tail through the word that owns it, the next word of the node before it
// (found by the open's walk: no prev word in the node). One failure-atomic free: a crash
// before it leaves the tail for the next open to free.
void FastFair::drop_tail(const std::vector<std::uint64_t>& order) {
  Phase p("drop_tail");
  const std::uint64_t prev = order.size() > 1 ? order[order.size() - 2] : 0;
  pool_.allocator().free(prev ? next_word(prev) : &root_->first);
  tail_ = prev;
}

// Makes the initialised, flushed node `blk` allocated, owned by the tail's next word (its
// first fence drains blk's flushes), and the new tail. Under grow_mu_ or in the open.
void FastFair::chain_link(std::uint64_t blk) {
  pool_.allocator().activate(tail_ ? next_word(tail_) : &root_->first, blk);
  tail_ = blk;
}

}  // namespace dptree::baselines::fastfair
