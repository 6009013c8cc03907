// ROART's check(): every word reached names a used slot of its kind, once; every node's
// header has the depth it is reached at and a prefix every key below holds; every key holds
// its path's bytes, has the fingerprint its entry carries and is in its array once; no array
// or node is empty; N48 byte indexes match their child words; the arenas' used slots are
// exactly those reached and the allocator's live blocks exactly the root and the arenas'.
#include <algorithm>
#include <string>
#include <vector>

#include "baselines/common.h"
#include "baselines/roart/tree.h"

namespace dptree::baselines::roart {

namespace {

struct Walk {
  CheckReport& r;
  ArenaSet<kArenas>::Counts reached{};
  std::size_t records = 0;
  int height = 0;
};

}  // namespace

CheckReport Tree::check() const {
  CheckReport r;
  Walk wk{r};
  struct Frame {
    u64 w;
    std::size_t depth;
    bool end;
    int level;
    std::vector<std::pair<std::size_t, unsigned char>> fixed;
  };
  std::vector<Frame> stack;
  if (child_of(root_->tree)) stack.push_back({child_of(root_->tree), 0, false, 1, {}});
  auto holds = [](const Frame& f, std::string_view k) {
    for (auto [pos, byte] : f.fixed)
      if (pos >= k.size() || static_cast<unsigned char>(k[pos]) != byte) return false;
    return true;
  };
  while (!stack.empty() && r.problems.size() < 20) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    wk.height = std::max(wk.height, f.level);
    u64 c = f.w;
    bool array = tag_of(c) == kArray;
    if (!array && (tag_of(c) < kN4 || tag_of(c) > kN256)) {
      r.fail("child word " + std::to_string(c) + " names no node kind");
      continue;
    }
    int arena = arena_of(c);
    std::string at = (array ? "leaf array " : "node ") + std::to_string(off_of(c));
    if (!arenas_[arena].is_slot(off_of(c)) || !arenas_[arena].is_used(off_of(c))) {
      r.fail(at + " is not a used slot of its kind");
      continue;
    }
    ++wk.reached[arena];
    if (array) {
      std::vector<std::string_view> keys;
      for (u64 e : node<LeafArray>(c)->entry) {
        if (!e) continue;
        int cls = entry_class(e);
        if (cls >= kLeafClasses || !arenas_[kArenaLeaf0 + cls].is_used(entry_leaf(e))) {
          r.fail(at + " names leaf " + std::to_string(entry_leaf(e)) + ", not a used leaf slot");
          continue;
        }
        ++wk.reached[kArenaLeaf0 + cls];
        const Leaf* l = leaf_at(e);
        std::string_view k(l->key(), l->len);
        bool on_path = f.end ? k.size() == f.depth : k.size() >= f.depth;
        if (!on_path || !holds(f, k)) r.fail(at + " holds a key that is not on its path");
        if (entry_fp(e) != fingerprint(k))
          r.fail(at + " has an entry whose fingerprint is not its key's");
        keys.push_back(k);
      }
      if (keys.empty()) r.fail(at + " is empty");
      std::sort(keys.begin(), keys.end());
      if (std::adjacent_find(keys.begin(), keys.end()) != keys.end())
        r.fail(at + " holds a key twice");
      wk.records += keys.size();
      continue;
    }
    const NodeHeader* h = node<NodeHeader>(c);
    if (tag_of(h->meta) != tag_of(c) || meta_depth(h->meta) != f.depth || f.end) {
      r.fail(at + " has a header of another kind or depth, or sits in an end word");
      continue;
    }
    std::string pfx;
    if (!prefix_bytes(c, f.depth, pfx)) {
      r.fail(at + " has no key below it");
      continue;
    }
    std::size_t b = f.depth + pfx.size();
    for (std::size_t i = 0; i < pfx.size(); ++i)
      f.fixed.emplace_back(f.depth + i, static_cast<unsigned char>(pfx[i]));
    if (u64 e = child_of(h->end)) stack.push_back({e, b, true, f.level + 1, f.fixed});
    auto kids = children(c);
    for (std::size_t i = 1; i < kids.size(); ++i)
      if (kids[i].first == kids[i - 1].first) r.fail(at + " names a byte twice");
    if (tag_of(c) == kN48)
      for (int byte = 0; byte < 256; ++byte) {
        unsigned s = node<N48>(c)->slot[byte];
        bool named =
            std::any_of(kids.begin(), kids.end(), [&](auto& k) { return k.first == byte; });
        if ((s == 0) == named || (s && (s > 48 || byte_of(node<N48>(c)->child[s - 1]) != byte)))
          r.fail(at + " has a byte index that does not match its children at byte " +
                 std::to_string(byte));
      }
    for (auto [byte, kid] : kids) {
      Frame g{kid, b + 1, false, f.level + 1, f.fixed};
      g.fixed.emplace_back(b, static_cast<unsigned char>(byte));
      stack.push_back(std::move(g));
    }
  }
  if (wk.records != records_.load())
    r.fail("record count " + std::to_string(records_.load()) + " but the tree holds " +
           std::to_string(wk.records));
  arenas_.check_slots(wk.reached, "the tree", r);
  if (!embedded_) check_arena_blocks(pool_, arenas(), r);  // else the owner's check() does
  r.facts = {{"records", double(wk.records)},
             {"nodes", double(nodes_in(wk.reached))},
             {"leaf_arrays", double(wk.reached[kArenaArray])},
             {"height", double(wk.height)}};
  return r;
}

}  // namespace dptree::baselines::roart
