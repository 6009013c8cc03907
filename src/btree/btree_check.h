// The structural checks of BPlusTree (btree.h), defined out of the class to keep btree.h to
// the tree's operations: check() for a tree in DRAM, validate_untrusted() for one in memory
// that may be damaged (a PM pool opened again). Included at the end of btree.h only.
#pragma once

#include <cstring>
#include <functional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dptree::btree {

template <class K, class V, std::size_t LeafSlots, std::size_t InnerSlots, class Less, class Nodes,
          NodeSearch Search>
std::string BPlusTree<K, V, LeafSlots, InnerSlots, Less, Nodes, Search>::validate_untrusted(
    const std::function<bool(const void*, std::size_t)>& node_ok) const {
  if (!root_) return first_ || size_ || height_ ? "an empty tree with leaves, keys or height" : "";
  if (height_ == 0 || height_ > 64) return "height " + std::to_string(height_);
  std::size_t leaves = 0, inners = 0, count = 0;
  std::unordered_set<const void*> seen;
  std::vector<std::pair<const Node*, std::size_t>> todo{{root_, 1}};  // node, depth
  while (!todo.empty()) {
    auto [n, depth] = todo.back();
    todo.pop_back();
    if (!node_ok(n, sizeof(Node)) || !seen.insert(n).second)
      return "a node pointer outside the index's blocks, or reached twice";
    unsigned char flag;
    std::memcpy(&flag, &n->leaf, 1);
    if (flag > 1 || !node_ok(n, flag ? sizeof(Leaf) : sizeof(Inner)) ||
        n->n > (flag ? LeafSlots : InnerSlots) || (depth == height_) != (flag == 1))
      return "a node with a bad flag, count or depth";
    if (flag) {
      ++leaves;
      count += n->n;
      continue;
    }
    ++inners;
    const Inner* in = static_cast<const Inner*>(n);
    for (std::uint32_t i = in->n + 1; i-- > 0;) todo.emplace_back(in->child[i], depth + 1);
  }
  if (count != size_ || leaves != leaves_ || inners != inners_)
    return "counters that disagree with the nodes";
  std::size_t chain = 0;
  const Leaf* prev = nullptr;
  for (const Leaf* l = first_; l; prev = l, l = l->next) {
    if (!seen.contains(l) || !l->leaf || l->prev != prev || ++chain > leaves)
      return "a leaf chain that leaves the tree or loops";
  }
  return chain == leaves ? "" : "a leaf chain that misses leaves";
}

template <class K, class V, std::size_t LeafSlots, std::size_t InnerSlots, class Less, class Nodes,
          NodeSearch Search>
std::vector<std::string> BPlusTree<K, V, LeafSlots, InnerSlots, Less, Nodes, Search>::check()
    const {
  std::vector<std::string> problems;
  if (!root_) {
    if (size_ != 0) problems.push_back("empty tree with size " + std::to_string(size_));
    return problems;
  }
  std::vector<const Leaf*> leaves;
  std::size_t count = 0;
  check_node(root_, nullptr, nullptr, 1, leaves, count, problems);
  if (count != size_)
    problems.push_back("counted " + std::to_string(count) + " keys, size says " +
                       std::to_string(size_));
  if (leaves.size() != leaves_)
    problems.push_back("reached " + std::to_string(leaves.size()) + " leaves, expected " +
                       std::to_string(leaves_));
  const Leaf* l = first_;
  const Leaf* prev = nullptr;
  for (const Leaf* want : leaves) {
    if (l != want) {
      problems.push_back("leaf chain differs from the tree's leaf order");
      break;
    }
    if (l->prev != prev) problems.push_back("leaf prev link broken");
    prev = l;
    l = l->next;
  }
  if (l != nullptr && problems.empty()) problems.push_back("leaf chain longer than the tree");
  return problems;
}

template <class K, class V, std::size_t LeafSlots, std::size_t InnerSlots, class Less, class Nodes,
          NodeSearch Search>
void BPlusTree<K, V, LeafSlots, InnerSlots, Less, Nodes, Search>::check_node(
    const Node* n, const K* lo, const K* hi, std::size_t depth, std::vector<const Leaf*>& leaves,
    std::size_t& count, std::vector<std::string>& problems) const {
  const std::size_t cap = n->leaf ? LeafSlots : InnerSlots;
  if (n->n > cap) {
    problems.push_back("node holds more keys than it has slots");
    return;
  }
  const K* keys = n->leaf ? static_cast<const Leaf*>(n)->keys : static_cast<const Inner*>(n)->keys;
  for (std::uint32_t i = 0; i < n->n; ++i) {
    if (i > 0 && !less_(keys[i - 1], keys[i])) problems.push_back("keys out of order in a node");
    if (lo && less_(keys[i], *lo)) problems.push_back("key below its separator range");
    if (hi && !less_(keys[i], *hi)) problems.push_back("key above its separator range");
  }
  if (n->leaf) {
    if (depth != height_) problems.push_back("leaf at the wrong depth");
    if (n->n == 0) problems.push_back("empty leaf kept");
    leaves.push_back(static_cast<const Leaf*>(n));
    count += n->n;
    return;
  }
  const Inner* in = static_cast<const Inner*>(n);
  for (std::uint32_t i = 0; i <= in->n; ++i) {
    const K* clo = i == 0 ? lo : &in->keys[i - 1];
    const K* chi = i == in->n ? hi : &in->keys[i];
    check_node(in->child[i], clo, chi, depth + 1, leaves, count, problems);
  }
}

}  // namespace dptree::btree
