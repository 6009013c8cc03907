// ROART's recovery and check(). Recovery walks the whole tree from the root word: it checks
// every word before following it (PM is untrusted), marks each slot it reaches so that a slot
// a crash left allocated but unpublished is free again, drops leaf arrays and nodes a crash
// left empty (between a remove's two unlinks), and rebuilds the N48 byte index from the
// child words (a crash between a child's publish and its index byte). Every repair is an
// idempotent store made after the whole tree is found sound, so a crash inside recovery is
// recovered the same way.
#include <algorithm>
#include <set>
#include <string>

#include "baselines/common.h"
#include "baselines/roart/phase.h"
#include "baselines/roart/tree.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"

namespace dptree::baselines::roart {

const char* current_phase() {
  return phase_now();
}

// The bytes every key below a word must have: each ancestor's branch byte and stored prefix.
struct Tree::Path {
  std::vector<std::pair<std::size_t, unsigned char>> fixed;
  bool holds(std::string_view k) const {
    for (auto [pos, byte] : fixed)
      if (pos >= k.size() || static_cast<unsigned char>(k[pos]) != byte) return false;
    return true;
  }
};

namespace {

struct Repairs {
  std::vector<std::pair<u64*, std::pair<u64, int>>> clear;  // word, (its N48 parent, byte)
  std::vector<std::pair<int, u64>> drop;                    // arena, slot
  std::vector<u64> n48;                                     // N48 nodes reached
};
thread_local Repairs* g_repairs = nullptr;

std::string at_off(const char* what, u64 off) {
  return std::string(what) + " " + std::to_string(off);
}

}  // namespace

void Tree::problem(const std::string& what) const {
  refuse_damaged(pool_, "roart", what);
}

void Tree::recover() {
  pm::CategoryScope cat(pm::Category::node);
  Phase ph("recover");
  arenas_.open();
  records_.reset();
  Repairs rep;
  g_repairs = &rep;
  Path p;
  u64 top = root_->tree;
  if (top && !recover_word(top, 0, p, false)) {
    rep.clear.push_back({&root_->tree, {0, -1}});
    rep.drop.emplace_back(tag_of(top) == kArray ? kArenaArray : arena_of(top), off_of(top));
  }
  g_repairs = nullptr;
  for (auto [word, parent] : rep.clear) unlink(Slot{word, 0, parent.first, parent.second});
  for (u64 w : rep.n48) rebuild_n48_slots(w);
  arenas_.finish();
  for (auto [a, off] : rep.drop) arenas_[a].release(off);
}

// Recovers child word w found at `depth` (an end word's when `end`); false when no key is
// below it (the caller drops it).
bool Tree::recover_word(u64 w, std::size_t depth, const Path& p, bool end) {
  u64 c = child_of(w);
  if (tag_of(c) == kArray) return recover_array(c, depth, p, end);
  if (tag_of(c) == kRecord && owner_) {
    recover_record(c, depth, p, end);
    return true;
  }
  if (end || tag_of(c) < kN4 || tag_of(c) > kN256)
    problem(at_off("child word", c) + " names no node kind" + (end ? " an end word holds" : ""));
  int arena = arena_of(c);
  if (!arenas_[arena].mark_used(off_of(c)))
    problem(at_off("node", off_of(c)) + " is not a slot of its kind or is reached twice");
  NodeHeader* h = node<NodeHeader>(c);
  std::size_t plen = meta_plen(h->meta), b = depth + plen;
  if (tag_of(h->meta) != tag_of(c) || meta_depth(h->meta) != depth || plen >= kMaxKeyBytes ||
      b >= kMaxKeyBytes)
    problem(at_off("node", off_of(c)) +
            " has a header of another kind, depth or an impossible "
            "prefix (reached at depth " +
            std::to_string(depth) + ")");
  Path q = p;
  for (std::size_t i = 0; i < std::min(plen, kStoredPrefix); ++i)
    q.fixed.emplace_back(depth + i, static_cast<unsigned char>(h->prefix >> (8 * i)));
  bool any = false;
  if (u64 e = h->end) {
    if (recover_word(e, b, q, true))
      any = true;
    else
      g_repairs->clear.push_back({&h->end, {0, -1}}),
          g_repairs->drop.emplace_back(kArenaArray, off_of(e));
  }
  std::set<int> bytes;
  auto visit = [&](u64* word, int byte) {
    if (!bytes.insert(byte).second)
      problem(at_off("node", off_of(c)) + " names byte " + std::to_string(byte) + " twice");
    q.fixed.emplace_back(b, static_cast<unsigned char>(byte));
    u64 kid = child_of(*word);
    if (recover_word(kid, b + 1, q, false)) {
      any = true;
    } else {
      g_repairs->clear.push_back({word, {tag_of(c) == kN48 ? c : 0, byte}});
      g_repairs->drop.emplace_back(tag_of(kid) == kArray ? kArenaArray : arena_of(kid),
                                   off_of(kid));
    }
    q.fixed.pop_back();
  };
  u64* words = reinterpret_cast<u64*>(h + 1);
  int n = tag_of(c) == kN4 ? 4 : tag_of(c) == kN16 ? 16 : tag_of(c) == kN48 ? 48 : 256;
  for (int i = 0; i < n; ++i)
    if (child_of(words[i])) visit(&words[i], tag_of(c) == kN256 ? i : byte_of(words[i]));
  if (tag_of(c) == kN48) g_repairs->n48.push_back(c);
  return any;
}

bool Tree::recover_array(u64 c, std::size_t depth, const Path& p, bool end) {
  if (!arenas_[kArenaArray].mark_used(off_of(c)))
    problem(at_off("leaf array", off_of(c)) + " is not a leaf-array slot or is reached twice");
  std::size_t n = 0, mark = 0;
  for (const u64* it = array_begin(c); it != array_all(c); ++it) {
    const u64 e = *it;
    if (!e) continue;
    mark = static_cast<std::size_t>(it - array_begin(c)) + 1;
    int cls = entry_class(e);
    u64 lo = entry_leaf(e);
    if (cls >= kLeafClasses || !arenas_[kArenaLeaf0 + cls].mark_used(lo))
      problem(at_off("leaf", lo) + " (in leaf array " + std::to_string(off_of(c)) +
              ") is not a leaf slot of its class or is reached twice");
    const Leaf* l = leaf_at(e);
    if (l->len == 0 || l->len > kMaxKeyBytes || sizeof(Leaf) + l->len > (std::size_t{32} << cls))
      problem(at_off("leaf", lo) + " has an impossible key length " + std::to_string(l->len));
    std::string_view k(l->key(), l->len);
    if ((end ? k.size() != depth : k.size() < depth) || !p.holds(k))
      problem(at_off("leaf", lo) + " holds a key that is not on its path");
    if (entry_fp(e) != fingerprint(k))
      problem(at_off("leaf", lo) + " does not have the fingerprint its entry carries");
    ++n;
  }
  set_end_mark(c, mark);
  records_.add(static_cast<std::int64_t>(n));
  return n > 0;
}

// Record word c: the owner says it names one of its records (checked before its key is
// read), and the record's key is on the path.
void Tree::recover_record(u64 c, std::size_t depth, const Path& p, bool end) {
  if (!owner_->valid(off_of(c)))
    problem(at_off("child word", c) + " names no record of the index that holds the tree");
  const std::string_view k = record_key(c);
  if (k.empty() || k.size() > kMaxKeyBytes || (end ? k.size() != depth : k.size() < depth) ||
      !p.holds(k))
    problem(at_off("record", off_of(c)) + " holds a key that is not on its path");
  records_.add(1);
}

// Rebuilds the byte index of N48 `w` from its child words, writing only if it differs.
void Tree::rebuild_n48_slots(u64 w) {
  N48* n = node<N48>(w);
  std::uint8_t want[256] = {};
  for (int i = 0; i < 48; ++i)
    if (child_of(n->child[i])) want[byte_of(n->child[i])] = std::uint8_t(i + 1);
  if (std::memcmp(want, n->slot, sizeof(want)) == 0) return;
  Phase ph("index");
  pm::store_bytes(n->slot, want, sizeof(want));
  pm::persist(n->slot, sizeof(want));
}

}  // namespace dptree::baselines::roart
