// Opening FAST_FAIR: the root block, the checks of an untrusted pool before anything follows
// its words, and the instant recovery (a fresh lock epoch, the unpublished tail node freed).
#include <string>
#include <unordered_map>
#include <vector>

#include "baselines/fastfair/tree.h"

namespace dptree::baselines::fastfair {

FastFair::FastFair(pm::Pool& pool, std::size_t node_bytes_opt, bool explicit_size, bool shared)
    : claim_(pool, "fastfair"), pool_(pool), shared_(shared) {
  pm::CategoryScope cat(pm::Category::node);
  root_ = open_root<Root>(pool_, kMagic, "fastfair", "node_bytes", node_bytes_opt, explicit_size);
  node_bytes_ = root_->param;
  slots_ = (node_bytes_ - sizeof(Header)) / sizeof(Entry);
  cap_ = slots_ - 1;  // the last slot always holds kEnd
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
// node (node_chain.h), every child, sibling and creator a node, children one level down,
// siblings on the same level with no cycle, no lock word stamped with this open's epoch
// (readers would wait on it forever), and kEnd in every node's last slot. Lookups and writes then
// trust the tree.
void FastFair::validate(std::uint64_t epoch) const {
  if (node_bytes_ < 128 || node_bytes_ > 4096 || (node_bytes_ & (node_bytes_ - 1)))
    corrupt(pool_.offset_of(root_), "(the root) holds node_bytes " + std::to_string(node_bytes_));
  auto order = chain_nodes(pool_, &root_->chain, node_bytes_, "fastfair");
  std::unordered_map<std::uint64_t, std::uint32_t> level;
  for (auto n : order) level[n] = hdr(n)->level;
  auto node_at = [&](std::uint64_t from, std::uint64_t to, std::int64_t want, const char* what) {
    auto it = level.find(to);
    if (it == level.end() || (want >= 0 && it->second != want))
      corrupt(from, std::string("names ") + what + " " + std::to_string(to) +
                        ", not a node of the right level");
  };
  for (auto n : order) {
    const auto* h = hdr(n);
    if (h->level > 64) corrupt(n, "has level " + std::to_string(h->level));
    if ((h->sync >> 32) == epoch) corrupt(n, "holds a lock word of an open still to come");
    if (h->repaired == epoch) corrupt(n, "is marked tidied by an open still to come");
    // The searches rely on it to stop (tree.h, the quick passes): a node is created with every
    // slot kEnd and persisted before it is linked, and no store puts anything else there.
    if (ents(n)[slots_ - 1].val != kEnd) corrupt(n, "has no end mark in its last slot");
    if (h->links.creator) node_at(n, h->links.creator, -1, "creator");
    if (h->links.prev) node_at(n, h->links.prev, -1, "prev");
    if (h->sibling) node_at(n, h->sibling, h->level, "sibling");
    if (!h->level) continue;
    node_at(n, h->leftmost, h->level - 1, "leftmost child");
    const auto* e = ents(n);
    for (std::size_t i = 0; i < slots_ && e[i].val != kEnd; ++i)
      if (e[i].val != kHole) node_at(n, e[i].val, h->level - 1, "child");
  }
  if (root_->tree_root) node_at(pool_.offset_of(&root_->tree_root), root_->tree_root, -1, "root");
  if (root_->chain.last) node_at(pool_.offset_of(&root_->chain), root_->chain.last, -1, "last");
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
}

// Frees the newest node if a crash kept it from being published; makes the first leaf.
void FastFair::recover() {
  // A fresh epoch makes every lock word a crash (or a close) left in PM stale.
  epoch_ = (root_->epoch + 1) & 0xffffffff;
  if (epoch_ == 0) epoch_ = 1;
  validate(epoch_);
  pm::store(&root_->epoch, epoch_);
  pm::persist(&root_->epoch, 8);
  if (auto t = chain_recover_tail(pool_, &root_->chain)) {
    auto c = links(pool_, t)->creator;
    bool published = c ? hdr(c)->sibling == t : root_->tree_root == t;
    if (!published) chain_drop_tail(pool_, &root_->chain);
  }
  if (!root_->tree_root) {
    auto leaf = new_node(0, 0, 0);
    pm::flush(pool_.at<std::byte>(leaf), node_bytes_);
    chain_activate(pool_, &root_->chain, leaf);
    store8(&root_->tree_root, leaf);
    pm::persist(&root_->tree_root, 8);
  }
}

}  // namespace dptree::baselines::fastfair
