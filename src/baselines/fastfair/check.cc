// FAST_FAIR's check(): every level walked along its siblings (live nodes, levels, low keys,
// sorted entries, children one level down with the right low key, leaf keys in order across
// leaves), then the creation chain against the nodes found.
#include <set>
#include <string>
#include <vector>

#include "baselines/fastfair/tree.h"

namespace dptree::baselines::fastfair {

struct FastFair::Checker {
  explicit Checker(const FastFair& tree) : t(tree) {}
  const FastFair& t;
  CheckReport r;
  std::set<std::uint64_t> nodes;
  std::set<std::uint64_t> referenced;  // children named by the level above
  std::set<std::uint64_t> next_ref;    // children named by this level
  std::size_t records = 0, transient = 0, unlinked = 0, levels = 0;
  std::vector<Entry> es;  // the node being checked, as readers see it
  bool have_prev = false;
  Key prev_key = 0;

  static std::string str(std::uint64_t x) { return std::to_string(x); }

  // A level from its first node along the siblings; false: the walk cannot go on.
  bool level(std::uint64_t first, std::uint32_t want) {
    ++levels;
    next_ref.clear();
    for (auto x = first; x; x = t.hdr(x)->sibling) {
      if (!t.pool_.allocator().is_live(x) || !nodes.insert(x).second) {
        r.fail("node " + str(x) + " is not a live block or is reached twice");
        return false;
      }
      if (x != first && !referenced.count(x)) ++unlinked;  // a parent entry a crash lost
      if (!node(x, want)) return false;
    }
    referenced = std::move(next_ref);
    return true;
  }

  bool node(std::uint64_t x, std::uint32_t want) {
    const auto* h = t.hdr(x);
    const std::uint32_t lv = t.node_level(x);
    if (lv != want) r.fail("node " + str(x) + " has level " + str(lv));
    if (h->sibling && t.hdr(h->sibling)->low_key <= h->low_key)
      r.fail("node " + str(x) + ": sibling's low key is not above its own");
    const auto* e = t.ents(x);
    const std::size_t n = t.end_of(x);
    if (n > t.cap_ || e[t.slots_ - 1].val != kEnd)
      r.fail("node " + str(x) + " has no end mark in its last slot");
    for (std::size_t i = 0; i < n; ++i)
      if (e[i].val == kHole || (i && e[i - 1].val != kHole && e[i - 1].key == e[i].key))
        ++transient;
    t.logical(x, es);
    for (std::size_t i = 0; i < es.size(); ++i) {
      if (i && es[i].key <= es[i - 1].key) r.fail("node " + str(x) + " is not sorted");
      if (es[i].key < h->low_key) r.fail("node " + str(x) + " holds a key below its low key");
    }
    if (lv == 0) {
      leaf_keys();
      return true;
    }
    if (!child(x, h->leftmost, h->low_key)) return false;
    for (const auto& c : es)
      if (!child(x, c.val, c.key)) return false;
    return true;
  }

  // Leaf keys rise across the whole leaf level.
  void leaf_keys() {
    for (const auto& x : es) {
      if (have_prev && x.key <= prev_key) r.fail("leaf keys out of order at " + str(x.key));
      have_prev = true;
      prev_key = x.key;
    }
    records += es.size();
  }

  bool child(std::uint64_t x, std::uint64_t c, Key low) {
    if (!c || !t.pool_.allocator().is_live(c)) {
      r.fail("node " + str(x) + " names a dead child");
      return false;
    }
    if (t.hdr(c)->low_key != low || t.node_level(c) + 1 != t.node_level(x))
      r.fail("node " + str(x) + ": child " + str(c) + " has the wrong low key or level");
    next_ref.insert(c);
    return true;
  }
};

CheckReport FastFair::check() const {
  Checker c(*this);
  std::uint64_t first = root_->tree_root;
  if (!first) c.r.fail("no tree root");
  for (std::uint32_t want = first ? node_level(first) : 0; first; --want) {
    if (!c.level(first, want)) return c.r;
    if (node_level(first) == 0) break;
    first = hdr(first)->leftmost;
  }
  chain_check(pool_, &root_->first, next_at_, c.nodes, c.r);
  c.r.facts = {{"records", double(c.records)},
               {"nodes", double(c.nodes.size())},
               {"levels", double(c.levels)},
               {"transient_entries", double(c.transient)},
               {"unlinked_nodes", double(c.unlinked)}};
  return c.r;
}

}  // namespace dptree::baselines::fastfair
