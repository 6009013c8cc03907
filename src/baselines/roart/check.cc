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

// One check() walk: a stack of words still to visit, each with the depth it is reached at,
// whether it sits in an end word, and the key bytes its path fixes.
struct Tree::Checker {
  struct Frame {
    u64 w;
    std::size_t depth;
    bool end;
    int level;
    std::vector<std::pair<std::size_t, unsigned char>> fixed;
  };
  const Tree& t;
  CheckReport& r;
  ArenaSet<kArenas>::Counts reached{};
  std::size_t records = 0;
  int height = 0;
  std::vector<Frame> stack;

  static bool holds(const Frame& f, std::string_view k) {
    for (auto [pos, byte] : f.fixed)
      if (pos >= k.size() || static_cast<unsigned char>(k[pos]) != byte) return false;
    return true;
  }

  void run() {
    if (child_of(t.root_->tree)) stack.push_back({child_of(t.root_->tree), 0, false, 1, {}});
    while (!stack.empty() && r.problems.size() < 20) {
      Frame f = std::move(stack.back());
      stack.pop_back();
      visit(f);
    }
  }

  // The word's kind and slot; then the array or node it names.
  void visit(Frame& f) {
    height = std::max(height, f.level);
    const u64 c = f.w;
    if (tag_of(c) == kRecord && t.owner_) {
      visit_record(f);
      return;
    }
    const bool array = tag_of(c) == kArray;
    if (!array && (tag_of(c) < kN4 || tag_of(c) > kN256)) {
      r.fail("child word " + std::to_string(c) + " names no node kind");
      return;
    }
    const int arena = t.arena_of(c);
    const std::string at = (array ? "leaf array " : "node ") + std::to_string(off_of(c));
    if (!t.arenas_[arena].is_slot(off_of(c)) || !t.arenas_[arena].is_used(off_of(c))) {
      r.fail(at + " is not a used slot of its kind");
      return;
    }
    ++reached[arena];
    if (array)
      visit_array(f, at);
    else
      visit_node(f, at);
  }

  // Every entry names a used leaf on the array's path, with its key's fingerprint, once.
  void visit_array(const Frame& f, const std::string& at) {
    std::vector<std::string_view> keys;
    for (const u64* it = t.array_begin(f.w); it != t.array_all(f.w); ++it) {
      const u64 e = *it;
      if (!e) continue;
      if (it >= t.array_end(f.w)) r.fail(at + " has an entry past its end mark");
      const int cls = entry_class(e);
      if (cls >= kLeafClasses || !t.arenas_[kArenaLeaf0 + cls].is_used(entry_leaf(e))) {
        r.fail(at + " names leaf " + std::to_string(entry_leaf(e)) + ", not a used leaf slot");
        continue;
      }
      ++reached[kArenaLeaf0 + cls];
      const Leaf* l = t.leaf_at(e);
      std::string_view k(l->key(), l->len);
      const bool on_path = f.end ? k.size() == f.depth : k.size() >= f.depth;
      if (!on_path || !holds(f, k)) r.fail(at + " holds a key that is not on its path");
      if (entry_fp(e) != fingerprint(k))
        r.fail(at + " has an entry whose fingerprint is not its key's");
      keys.push_back(k);
    }
    if (keys.empty()) r.fail(at + " is empty");
    std::sort(keys.begin(), keys.end());
    if (std::adjacent_find(keys.begin(), keys.end()) != keys.end())
      r.fail(at + " holds a key twice");
    records += keys.size();
  }

  // An owner's record (its owner checks the record itself), with a key on the path.
  void visit_record(const Frame& f) {
    const std::string at = "record " + std::to_string(off_of(f.w));
    if (!t.owner_->valid(off_of(f.w))) {
      r.fail(at + " is not a record of the index that holds the tree");
      return;
    }
    const std::string_view k = t.record_key(f.w);
    const bool on_path = f.end ? k.size() == f.depth : k.size() >= f.depth;
    if (!on_path || !holds(f, k)) r.fail(at + " holds a key that is not on its path");
    ++records;
  }

  // The header's kind and depth, a prefix some key below holds; the children pushed.
  void visit_node(Frame& f, const std::string& at) {
    const u64 c = f.w;
    const NodeHeader* h = t.node<NodeHeader>(c);
    if (tag_of(h->meta) != tag_of(c) || meta_depth(h->meta) != f.depth || f.end) {
      r.fail(at + " has a header of another kind or depth, or sits in an end word");
      return;
    }
    std::string pfx;
    if (!t.prefix_bytes(c, f.depth, pfx)) {
      r.fail(at + " has no key below it");
      return;
    }
    const std::size_t b = f.depth + pfx.size();
    for (std::size_t i = 0; i < pfx.size(); ++i)
      f.fixed.emplace_back(f.depth + i, static_cast<unsigned char>(pfx[i]));
    if (u64 e = child_of(h->end)) stack.push_back({e, b, true, f.level + 1, f.fixed});
    auto kids = t.children(c);
    for (std::size_t i = 1; i < kids.size(); ++i)
      if (kids[i].first == kids[i - 1].first) r.fail(at + " names a byte twice");
    if (tag_of(c) == kN48) check_n48_index(c, kids, at);
    for (auto [byte, kid] : kids) {
      Frame g{kid, b + 1, false, f.level + 1, f.fixed};
      g.fixed.emplace_back(b, static_cast<unsigned char>(byte));
      stack.push_back(std::move(g));
    }
  }

  void check_n48_index(u64 c, const std::vector<std::pair<int, u64>>& kids, const std::string& at) {
    for (int byte = 0; byte < 256; ++byte) {
      const unsigned s = t.node<N48>(c)->slot[byte];
      const bool named =
          std::any_of(kids.begin(), kids.end(), [&](auto& k) { return k.first == byte; });
      if ((s == 0) == named || (s && (s > 48 || byte_of(t.node<N48>(c)->child[s - 1]) != byte)))
        r.fail(at + " has a byte index that does not match its children at byte " +
               std::to_string(byte));
    }
  }
};

CheckReport Tree::check() const {
  CheckReport r;
  Checker wk{*this, r, {}, 0, 0, {}};
  wk.run();
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
