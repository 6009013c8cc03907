// Ownership of PM nodes that are linked into a list whose words change (sibling / next
// pointers). The §2.4 allocator ties a block to the one persistent word it was activated into,
// but a FAIR split or an FPTree leaf split repoints the sibling word that held the old node's
// right neighbour, so that word cannot own it. Every node is instead activated into a
// write-once word: the `next` link of the node created just before it (the "creation chain").
// Only the chain's tail can be unpublished after a crash (one structural change is in flight
// at a time); recovery frees it if the index does not reach it. FPTree keeps the links at the
// start of a node (ChainLinks); FAST_FAIR keeps only `next`, in its end-mark slot, and finds
// the rest by the open's walk of the chain (fastfair/layout.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "baselines/common.h"
#include "dptree/error.h"
#include "dptree/index.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"

namespace dptree::baselines {

struct ChainLinks {
  std::uint64_t next = 0;     // the next node created (owner word of that node)
  std::uint64_t prev = 0;     // the node created before this one (0: owned by ChainRoot::first)
  std::uint64_t creator = 0;  // index-specific: the node whose split made this one
};

struct ChainRoot {
  std::uint64_t first = 0;  // owner word of the first node created
  std::uint64_t last = 0;   // hint: the newest node; recovery follows `next` past it
};

// Every chained node starts with ChainLinks.
inline ChainLinks* links(pm::Pool& p, std::uint64_t node) {
  return p.at<ChainLinks>(node);
}

// Makes the reserved, initialised `blk` allocated (its ChainLinks::prev must be
// root->last and its content flushed; activate's first fence drains those flushes).
inline void chain_activate(pm::Pool& p, ChainRoot* root, std::uint64_t blk) {
  std::uint64_t* dest = root->last ? &links(p, root->last)->next : &root->first;
  p.allocator().activate(dest, blk);
  pm::store(&root->last, blk);
  pm::flush(&root->last, 8);  // a stale hint is repaired by chain_recover_tail
}

// Brings root->last to the real tail; returns it (0 for an empty chain).
inline std::uint64_t chain_recover_tail(pm::Pool& p, ChainRoot* root) {
  std::uint64_t t = root->last ? root->last : root->first;
  if (t)
    while (links(p, t)->next) t = links(p, t)->next;
  if (t != root->last) {
    pm::store(&root->last, t);
    pm::persist(&root->last, 8);
  }
  return t;
}

// Frees the tail (it is not reachable). The hint moves back first, so a crash in between
// leaves a tail that the next recovery frees again.
inline void chain_drop_tail(pm::Pool& p, ChainRoot* root) {
  std::uint64_t t = root->last;
  std::uint64_t prev = links(p, t)->prev;
  pm::store(&root->last, prev);
  pm::persist(&root->last, 8);
  p.allocator().free(prev ? &links(p, prev)->next : &root->first);
}

// Creates the index's root block (Root starts with `magic` and `param`, the size option) on a
// pool without a root, or opens the one there, refusing another index's pool and an explicit
// `param` other than the one the pool was created with.
template <class Root>
Root* open_root(pm::Pool& p, std::uint64_t magic, const std::string& index,
                const std::string& param_name, std::uint64_t param, bool explicit_param) {
  if (!*p.root_word()) {
    auto blk = p.allocator().reserve(sizeof(Root));
    auto* r = p.at<Root>(blk);
    Root init{};
    init.magic = magic;
    init.param = param;
    pm::store(r, init);
    pm::flush(r, sizeof(Root));
    p.allocator().activate(p.root_word(), blk);
  }
  const auto rw = owned_root(p, index);
  auto* r = p.allocator().block_size(rw) >= sizeof(Root) ? p.root<Root>() : nullptr;
  if (!r || r->magic != magic)
    throw Error(Errc::wrong_index, "pool '" + p.name() + "' holds another index, not " + index +
                                       ": open it with its own index or use a "
                                       "fresh pool");
  if (explicit_param && r->param != param)
    throw Error(Errc::invalid_argument, index + ": pool '" + p.name() + "' was created with " +
                                            param_name + "=" + std::to_string(r->param) +
                                            ": drop the option or pass that value");
  return r;
}

// Where a chained node keeps its `next` word: `next_at` bytes into it.
inline std::uint64_t chain_next(const pm::Pool& p, std::uint64_t node, std::size_t next_at) {
  return *p.at<std::uint64_t>(node + next_at);
}

// Open-time check of the creation chain from the owner word `first` (PM is untrusted): every
// node is a live block of at least `node_bytes` (> next_at) owned by the link before it, so
// the chain ends. Returns the nodes in creation order; throws Error(corrupt) naming the offset
// otherwise.
inline std::vector<std::uint64_t> chain_nodes(const pm::Pool& p, const std::uint64_t* first,
                                              std::size_t node_bytes, const std::string& index,
                                              std::size_t next_at) {
  std::vector<std::uint64_t> out;
  std::uint64_t link = p.offset_of(first);
  for (std::uint64_t n = *first; n; link = n + next_at, n = chain_next(p, n, next_at)) {
    if (p.allocator().owner_of(n) != link || p.allocator().block_size(n) < node_bytes)
      throw Error(Errc::corrupt, "pool '" + p.name() + "': " + index + " node chain: the word at " +
                                     "offset " + std::to_string(link) + " points to " +
                                     std::to_string(n) + ", not a live node block it owns: the " +
                                     "pool is damaged; restore it from a copy");
    out.push_back(n);
  }
  return out;
}
inline std::vector<std::uint64_t> chain_nodes(const pm::Pool& p, const ChainRoot* root,
                                              std::size_t node_bytes, const std::string& index) {
  return chain_nodes(p, &root->first, node_bytes, index, offsetof(ChainLinks, next));
}

// check()'s view of a creation chain without a tail hint: it holds exactly `nodes` (the nodes
// the index reaches), and the allocator holds nothing else but the root block. Adds each
// problem to `r`.
inline void chain_check(const pm::Pool& p, const std::uint64_t* first, std::size_t next_at,
                        const std::set<std::uint64_t>& nodes, CheckReport& r) {
  std::set<std::uint64_t> chain;
  for (auto c = *first; c; c = chain_next(p, c, next_at))
    if (!chain.insert(c).second || chain.size() > nodes.size() + 1) {
      r.fail("the creation chain loops");
      break;
    }
  if (chain != nodes) r.fail("the creation chain and the index hold different nodes");
  std::size_t live = 0;
  p.allocator().for_each_live_block([&](std::uint64_t off, std::size_t) {
    ++live;
    if (off != *p.root_word() && !nodes.count(off))
      r.fail("live block " + std::to_string(off) + " is not reachable (leak)");
  });
  if (live != nodes.size() + 1) r.fail("live blocks differ from the reachable blocks");
}

}  // namespace dptree::baselines
