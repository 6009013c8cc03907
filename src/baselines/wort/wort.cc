// WORT, the write-optimal radix tree (Lee, Lim, Song, Nam, Noh, "WORT: Write Optimal Radix
// Tree for Persistent Memory Storage Systems", FAST 2017): a radix tree over the key's 4-bit
// digits (16 children per node) with path compression, kept consistent by 8-byte
// failure-atomic stores only, without logging or copy-on-write.
//
// Node: one 8-byte header (depth, prefix length, up to 12 prefix digits) and 16 child words.
// A child word is 0, a node's offset, or a leaf record's offset with bit 0 set. A node at
// depth d with prefix length p holds keys whose digits [d, d + p) are its prefix; it branches
// on digit d + p (its "branch"), and its children are at depth d + p + 1.
//
// Writes (each "publish" is one 8-byte store, flushed and fenced):
//  - a new key: its leaf record is written and persisted out of place, then published into an
//    empty child word;
//  - a new key whose path meets a leaf or a node prefix that differs from it (at digit m): a
//    new node (depth of the old one, prefix up to m, the old subtree and the new leaf as
//    children) is written and persisted out of place and published in the old one's place;
//    if the old one is a node, its header (now deeper, shorter prefix) is then rewritten with
//    one 8-byte store;
//  - an update: the value's 8-byte word in place;
//  - a remove: the child word is cleared; if that would leave the node one child, the parent's
//    word is pointed to that child instead (one store unlinks the node and the leaf), and a
//    node child's header is then rewritten (shallower, longer prefix).
// A crash between a publish and its header rewrite leaves a header whose depth differs from
// the node's real depth (the paper's consistency argument): the branch digit (depth + length)
// is still right, so recovery rebuilds the header from the real depth, the branch and the
// digits of a key below. Recovery walks the trie (it marks the arenas' used slots, so a slot
// a crash left allocated but unpublished is free again) and fixes such headers.
//
// Departures (docs/indexes.md says why): nodes and leaf records come from slab arenas; the
// header packs 12 prefix digits (a longer prefix is checked against a key below, as ART does);
// a remove unlinks nodes left with one child; an update writes the value in place.
#include "baselines/wort/wort.h"

#include <algorithm>
#include <bit>
#include <memory>
#include <string>
#include <vector>

#include "baselines/common.h"
#include "baselines/phase.h"
#include "baselines/slab/slab_arena.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/registry.h"
#include "registry/index_table.h"

namespace dptree {
namespace {
struct WortPhases;
using Phase = baselines::PhaseScope<WortPhases>;
}  // namespace

const char* wort_current_phase() {
  return baselines::PhaseName<WortPhases>::current;
}

namespace baselines {
namespace {

constexpr std::uint64_t kMagic = 0x0031'5452'4F57'4D50ull;  // "PMWORT1"
constexpr int kDigits = 16;                                 // 4-bit digits of a key
constexpr int kFanout = 16;
constexpr int kStored = 12;  // prefix digits the header holds
constexpr std::uint64_t kLeafBit = 1;
constexpr std::size_t kNodeSlot = 256;  // a Node (136 bytes) rounded up to the arena's power of 2

struct Node {
  std::uint64_t header;  // depth << 56 | length << 48 | 12 prefix digits (first at bits 44-47)
  std::uint64_t child[kFanout];
};
static_assert(sizeof(Node) == 136 && sizeof(Node) <= kNodeSlot);

struct Leaf {
  Key key;      // written before the leaf is published, never changed
  Value value;  // updated in place
};
static_assert(sizeof(Leaf) == 16);

struct alignas(64) Root {
  std::uint64_t magic;
  std::uint64_t slab_size;
  std::uint64_t node_dir;  // slab directories (SlabArena)
  std::uint64_t leaf_dir;
  std::uint64_t tree;  // child word of the top: 0, a node, or a leaf | kLeafBit
  std::uint64_t pad[3];
};
static_assert(sizeof(Root) == 64);

int digit(Key k, int i) {
  return static_cast<int>(k >> (60 - 4 * i)) & 0xF;
}
// The first digit at which a and b differ (kDigits if none).
int first_diff(Key a, Key b) {
  return a == b ? kDigits : std::countl_zero(a ^ b) / 4;
}
// Bits of digits [from, to) of a key.
Key digit_mask(int from, int to) {
  if (from >= to) return 0;
  Key hi = from == 0 ? ~Key{0} : (Key{1} << (64 - 4 * from)) - 1;
  Key lo = to == kDigits ? 0 : (Key{1} << (64 - 4 * to)) - 1;
  return hi & ~lo;
}

struct Header {
  int depth, length;
  std::uint64_t digits;  // packed, first at bits 44-47
  int branch() const { return depth + length; }
  int stored() const { return length < kStored ? length : kStored; }
};
Header decode(std::uint64_t h) {
  return {static_cast<int>(h >> 56), static_cast<int>(h >> 48) & 0xFF, h & ((Key{1} << 48) - 1)};
}
// The header of a node at `depth` that branches at `branch`, its prefix taken from key k.
std::uint64_t encode(int depth, int branch, Key k) {
  int n = branch - depth < kStored ? branch - depth : kStored;
  std::uint64_t digits = depth < kDigits ? ((k << (4 * depth)) >> 16) : 0;
  digits &= digit_mask(4, 4 + n);  // digits [depth, depth + n) sit at digit positions 4..15
  return std::uint64_t(depth) << 56 | std::uint64_t(branch - depth) << 48 | digits;
}
// k with its stored prefix digits replaced by the header's.
Key splice(const Header& h, Key k) {
  Key m = digit_mask(h.depth, h.depth + h.stored());
  Key d = h.depth <= 4 ? h.digits << (16 - 4 * h.depth) : h.digits >> (4 * h.depth - 16);
  return (k & ~m) | (d & m);
}

// What a walk of the whole trie (recovery, check()) knows: the digits every key below must have.
struct Expect {
  Key want = 0, mask = 0;
};

// Expect for child c of a node at `depth` with header h: the digits of the path, the node's
// prefix (its stored digits from h, the rest from rep, a key below) and c at the branch.
Expect below(Expect e, int depth, const Header& h, Key rep, int c) {
  int b = h.branch();
  Key stored = digit_mask(depth, depth + h.stored()), rest = digit_mask(depth + h.stored(), b);
  e.want |= (splice(h, 0) & stored) | (rep & rest) | Key(c) << (60 - 4 * b);
  e.mask |= stored | rest | digit_mask(b, b + 1);
  return e;
}

bool is_leaf(std::uint64_t w) {
  return w & kLeafBit;
}

class Wort final : public PutIndex<Wort> {
  friend class PutIndex<Wort>;  // its name, upsert, insert and update
  static constexpr const char* kName = "wort";

 public:
  explicit Wort(pm::Pool& pool) : claim_(pool, kName), pool_(pool) {
    root_ = static_cast<Root*>(open_arena_root(pool, sizeof(Root), kMagic, kName));
    nodes_ = std::make_unique<SlabArena>(pool, &root_->node_dir, kNodeSlot, root_->slab_size);
    leaves_ = std::make_unique<SlabArena>(pool, &root_->leaf_dir, sizeof(Leaf), root_->slab_size);
    recover();
  }

  bool remove(Key k) override {
    pm::CategoryScope cat(pm::Category::node);
    std::uint64_t* slot = &root_->tree;
    std::uint64_t* parent_slot = nullptr;  // the word that names the leaf's node
    int parent_depth = 0, depth = 0;
    while (*slot && !is_leaf(*slot)) {
      Node* n = node(*slot);
      int b = decode(n->header).branch();
      parent_slot = slot;
      parent_depth = depth;
      slot = &n->child[digit(k, b)];
      depth = b + 1;
    }
    if (!*slot || leaf(*slot)->key != k) return false;
    std::uint64_t gone = *slot & ~kLeafBit;
    Phase ph("unlink");
    Node* parent = parent_slot ? node(*parent_slot) : nullptr;
    std::uint64_t other = parent ? only_other_child(parent, slot) : 0;
    if (!other) {
      pm::store(slot, 0);
      pm::persist(slot, 8);
    } else {  // the node would keep one child: it takes the node's place
      std::uint64_t dead = *parent_slot;
      pm::store(parent_slot, other);
      pm::persist(parent_slot, 8);
      if (!is_leaf(other)) {
        Phase hp("header");
        Node* o = node(other);
        set_header(o, encode(parent_depth, decode(o->header).branch(), any_key(other)));
      }
      nodes_->release(dead);
      ++collapses_;
    }
    leaves_->release(gone);
    --records_;
    return true;
  }

  std::optional<Value> lookup(Key k) const override {
    std::uint64_t w = root_->tree;
    // Prefixes are not compared on the way down: the leaf's whole key is (as in ART).
    while (w && !is_leaf(w)) w = node(w)->child[digit(k, decode(node(w)->header).branch())];
    if (!w || leaf(w)->key != k) return std::nullopt;
    return leaf(w)->value;
  }

  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    std::size_t got = 0;
    if (count && root_->tree) walk(root_->tree, start, true, count, out, got);
    return got;
  }

  IndexStats stats() const override {
    IndexStats s;
    s.records = records_;
    s.dram_bytes = (nodes_->slabs() * (root_->slab_size / kNodeSlot) +
                    leaves_->slabs() * (root_->slab_size / sizeof(Leaf))) /
                   8;  // the arenas' used-slot bits
    s.pm_bytes =
        pool_.allocator().block_size(*pool_.root_word()) + nodes_->pm_bytes() + leaves_->pm_bytes();
    s.extra = {{"nodes", double(nodes_->used_slots())},
               {"splits", double(splits_)},
               {"collapses", double(collapses_)},
               {"headers_fixed", double(headers_fixed_)}};
    return s;
  }

  CheckReport check() const override;

 private:
  Node* node(std::uint64_t w) const { return pool_.at<Node>(w); }
  Leaf* leaf(std::uint64_t w) const { return pool_.at<Leaf>(w & ~kLeafBit); }

  // The key of some leaf below child word w (a node has at least two children).
  Key any_key(std::uint64_t w) const {
    while (!is_leaf(w)) {
      const Node* n = node(w);
      int c = 0;
      while (c < kFanout - 1 && !n->child[c]) ++c;
      w = n->child[c];
    }
    return leaf(w)->key;
  }

  // A key that has the digits [0, branch) of every key below node w, given that k has the
  // digits [0, depth) of the path to it.
  Key prefix_key(std::uint64_t w, Key k) const {
    Header h = decode(node(w)->header);
    return h.length <= kStored ? splice(h, k) : any_key(w);
  }

  // The one child of n besides the word at `slot` if n has exactly two children, else 0.
  static std::uint64_t only_other_child(const Node* n, const std::uint64_t* slot) {
    std::uint64_t other = 0;
    int kids = 0;
    for (const std::uint64_t& c : n->child)
      if (c) {
        ++kids;
        if (&c != slot) other = c;
      }
    return kids == 2 ? other : 0;
  }

  void set_header(Node* n, std::uint64_t h) {
    pm::store(&n->header, h);
    pm::persist(&n->header, 8);
  }

  // A free slot; a crash while the arena grows by a slab leaves the slab to the arena (it is
  // in the directory) or to nobody (the allocator takes it back).
  static std::uint64_t take(SlabArena& arena) {
    Phase ph("alloc");
    return arena.alloc();
  }

  // A leaf record written and flushed (the publish's fence orders it).
  std::uint64_t new_leaf(Key k, Value v) {
    Phase ph("leaf");
    std::uint64_t off = take(*leaves_);
    Leaf* l = pool_.at<Leaf>(off);
    pm::store(l, Leaf{k, v});
    pm::flush(l, sizeof(Leaf));
    return off | kLeafBit;
  }

  // The one 8-byte store that makes what w names reachable.
  void publish(std::uint64_t* slot, std::uint64_t w) {
    {
      Phase ph("fence");
      pm::fence();  // what w names is durable first
    }
    Phase ph("publish");
    pm::store(slot, w);
    pm::persist(slot, 8);
  }

  bool put(Key k, Value v, bool may_insert, bool may_update) {
    pm::CategoryScope cat(pm::Category::node);
    std::uint64_t* slot = &root_->tree;
    int depth = 0;
    for (;;) {
      std::uint64_t w = *slot;
      if (!w) {
        if (!may_insert) return false;
        publish(slot, new_leaf(k, v));
        ++records_;
        return true;
      }
      if (is_leaf(w)) {
        Leaf* l = leaf(w);
        if (l->key == k) {
          if (!may_update) return false;
          Phase ph("value");
          pm::store(&l->value, v);
          pm::persist(&l->value, 8);
          return true;
        }
        if (!may_insert) return false;
        split(slot, depth, first_diff(k, l->key), w, l->key, k, v);
        return true;
      }
      Key pk = prefix_key(w, k);
      int b = decode(node(w)->header).branch();
      int m = first_diff(k, pk);
      if (m < b) {  // k leaves the prefix at digit m
        if (!may_insert) return false;
        split(slot, depth, m, w, pk, k, v);
        return true;
      }
      slot = &node(w)->child[digit(k, b)];
      depth = b + 1;
    }
  }

  // Puts a new node that branches at digit m in the place of child word w (at `depth`): its
  // children are w (whose keys have the digits of `old` up to m) and k's new leaf.
  void split(std::uint64_t* slot, int depth, int m, std::uint64_t w, Key old, Key k, Value v) {
    std::uint64_t fresh = take(*nodes_), lw = 0;
    try {
      lw = new_leaf(k, v);
    } catch (const Error&) {  // a full pool: the slot goes back, nothing was published
      nodes_->release(fresh);
      throw;
    }
    {
      Phase ph("node");
      Node n{};
      n.header = encode(depth, m, k);
      n.child[digit(k, m)] = lw;
      n.child[digit(old, m)] = w;
      pm::store(node(fresh), n);
      pm::flush(node(fresh), sizeof(Node));
    }
    publish(slot, fresh);
    if (!is_leaf(w)) {  // the old node now starts below the new one
      Phase ph("header");
      Node* o = node(w);
      set_header(o, encode(m + 1, decode(o->header).branch(), old));
    }
    ++records_;
    ++splits_;
  }

  // In-order walk of child word w for scan. `bounded`: the path so far has start's digits, so
  // keys below may be smaller than start. Returns true when count pairs are out.
  bool walk(std::uint64_t w, Key start, bool bounded, std::size_t count, std::vector<KV>& out,
            std::size_t& got) const {
    if (is_leaf(w)) {
      const Leaf* l = leaf(w);
      if (bounded && l->key < start) return false;
      out.emplace_back(l->key, l->value);
      return ++got == count;
    }
    const Node* n = node(w);
    int b = decode(n->header).branch();
    int first = 0;
    if (bounded) {
      Key pk = prefix_key(w, start);
      int m = first_diff(start, pk);
      if (m < b) {
        if (digit(pk, m) < digit(start, m)) return false;  // every key below is smaller
        bounded = false;                                   // every key below is larger
      } else {
        first = digit(start, b);
      }
    }
    for (int c = first; c < kFanout; ++c)
      if (n->child[c] && walk(n->child[c], start, bounded && c == first, count, out, got))
        return true;
    return false;
  }

  // Walks the trie: marks every slot reached, counts the records, checks every key against
  // its path, then rewrites each header a crash left stale. Each rewrite is one idempotent
  // 8-byte store, so a crash inside recovery is recovered the same way; none is made before
  // the whole trie is found sound.
  void recover() {
    pm::CategoryScope cat(pm::Category::node);
    Phase ph("recover");
    nodes_->open();
    leaves_->open();
    records_ = 0;
    std::vector<std::pair<Node*, std::uint64_t>> stale;  // node, its rewritten header
    if (root_->tree) recover_walk(root_->tree, 0, {}, stale);
    for (auto [n, h] : stale) {
      Phase hp("header");
      set_header(n, h);
      ++headers_fixed_;
    }
    nodes_->finish();
    leaves_->finish();
  }

  void recover_walk(std::uint64_t w, int depth, const Expect& e,
                    std::vector<std::pair<Node*, std::uint64_t>>& stale) {
    if (is_leaf(w)) {
      if (!leaves_->mark_used(w & ~kLeafBit))
        problem("leaf " + std::to_string(w & ~kLeafBit) +
                " is not a leaf slot or is reached twice");
      if ((leaf(w)->key & e.mask) != e.want)
        problem("leaf " + std::to_string(w & ~kLeafBit) + " (key " + std::to_string(leaf(w)->key) +
                ") is not on its path");
      ++records_;
      return;
    }
    if (!nodes_->mark_used(w))
      problem("node " + std::to_string(w) + " is not a node slot or is reached twice");
    Node* n = node(w);
    Header h = decode(n->header);
    expect_branch(w, depth, h.branch());
    bool is_stale = h.depth != depth;  // a split or collapse published it, then crashed
    Key rep = is_stale || h.length > kStored ? leftmost_key(w, depth) : 0;
    if (is_stale) {
      stale.emplace_back(n, encode(depth, h.branch(), rep));
      h = decode(stale.back().second);
    }
    int kids = 0;
    for (int c = 0; c < kFanout; ++c)
      if (n->child[c]) {
        ++kids;
        recover_walk(n->child[c], h.branch() + 1, below(e, depth, h, rep, c), stale);
      }
    if (kids < 2) problem("node " + std::to_string(w) + " has fewer than two children");
  }

  // A node reached at `depth` branches at a digit of the key not above its depth.
  void expect_branch(std::uint64_t w, int depth, int b) const {
    if (b >= kDigits || b < depth)
      problem("node " + std::to_string(w) + " at depth " + std::to_string(depth) +
              " has a header that branches at digit " + std::to_string(b));
  }

  // The key of the leftmost leaf below w (at `depth`), each step checked (PM is untrusted):
  // every header must branch at a digit in [depth, 16).
  Key leftmost_key(std::uint64_t w, int depth) const {
    for (;;) {
      if (is_leaf(w)) {
        if (!leaves_->is_slot(w & ~kLeafBit))
          problem("leaf " + std::to_string(w & ~kLeafBit) + " is not a leaf slot");
        return leaf(w)->key;
      }
      if (!nodes_->is_slot(w)) problem("node " + std::to_string(w) + " is not a node slot");
      const Node* n = node(w);
      int b = decode(n->header).branch();
      expect_branch(w, depth, b);
      int c = 0;
      while (c < kFanout && !n->child[c]) ++c;
      if (c == kFanout) problem("node " + std::to_string(w) + " has no child");
      w = n->child[c];
      depth = b + 1;
    }
  }

  // PM is untrusted: what recovery cannot make sense of refuses the pool, before any
  // operation follows it.
  [[noreturn]] void problem(const std::string& s) const { refuse_damaged(pool_, kName, s); }
  bool check_leaf(std::uint64_t w, const Expect& e, CheckReport& r) const;

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  Root* root_ = nullptr;
  std::unique_ptr<SlabArena> nodes_, leaves_;
  std::size_t records_ = 0, splits_ = 0, collapses_ = 0, headers_fixed_ = 0;
};

// A leaf word of the trie: a used leaf slot whose key is on the path `e` describes. Returns
// whether it is a leaf slot to count.
bool Wort::check_leaf(std::uint64_t w, const Expect& e, CheckReport& r) const {
  const std::uint64_t off = w & ~kLeafBit;
  const std::string at = "leaf " + std::to_string(off);
  if (!leaves_->is_slot(off) || !leaves_->is_used(off)) {
    r.fail(at + " is not a used leaf slot");
    return false;
  }
  if ((leaf(w)->key & e.mask) != e.want)
    r.fail(at + " (key " + std::to_string(leaf(w)->key) + ") is not on its path");
  return true;
}

CheckReport Wort::check() const {
  CheckReport r;
  std::size_t nodes = 0, leaves = 0;
  int height = 0;
  struct Frame {
    std::uint64_t w;
    int depth, level;
    Expect e;
  };
  std::vector<Frame> stack;
  if (root_->tree) stack.push_back({root_->tree, 0, 1, {}});
  while (!stack.empty() && r.problems.size() < 20) {
    Frame f = stack.back();
    stack.pop_back();
    height = std::max(height, f.level);
    if (is_leaf(f.w)) {
      leaves += check_leaf(f.w, f.e, r);
      continue;
    }
    std::string at = "node " + std::to_string(f.w);
    if (!nodes_->is_slot(f.w) || !nodes_->is_used(f.w)) {
      r.fail(at + " is not a used node slot");
      continue;
    }
    ++nodes;
    const Node* n = node(f.w);
    Header h = decode(n->header);
    int b = h.branch();
    if (h.depth != f.depth)
      r.fail(at + " has a stale header: depth " + std::to_string(h.depth) + ", reached at " +
             std::to_string(f.depth));
    if (b >= kDigits || b < f.depth) {
      r.fail(at + " branches at impossible digit " + std::to_string(b));
      continue;
    }
    int kids = 0;
    for (std::uint64_t c : n->child) kids += c != 0;
    if (kids < 2) r.fail(at + " has " + std::to_string(kids) + " children");
    if (kids == 0) continue;
    Key rep = h.length > kStored ? any_key(f.w) : 0;
    for (int c = 0; c < kFanout; ++c)
      if (n->child[c])
        stack.push_back({n->child[c], b + 1, f.level + 1, below(f.e, f.depth, h, rep, c)});
  }
  if (leaves != records_)
    r.fail("record count " + std::to_string(records_) + " but the trie holds " +
           std::to_string(leaves));
  check_arena_slots(*nodes_, nodes, "node arena", "the trie", r);
  check_arena_slots(*leaves_, leaves, "leaf arena", "the trie", r);
  check_arena_blocks(pool_, {nodes_.get(), leaves_.get()}, r);
  r.facts = {{"records", double(leaves)}, {"nodes", double(nodes)}, {"height", double(height)}};
  return r;
}

}  // namespace
}  // namespace baselines

void register_wort_index() {
  add_persistent_index(
      "wort", "WORT",
      "WORT (Lee et al., FAST 2017): persistent radix tree of 4-bit digits (16 children per "
      "node) with path compression in an 8-byte header; out-of-place leaf records; every change "
      "made durable by one 8-byte store (a split's stale header is fixed by recovery); "
      "single-threaded",
      false, "its nodes have the paper's 16 children",
      {.fuzz = TestPlan::Fuzz{},
       .kill = TestPlan::Kill{1, {}},
       .generic = TestPlan::Generic{{}, "nodes", 150, true, 2600}},
      [](pm::Pool& pool, const IndexConfig& cfg) {
        if (cfg.threads > 1)
          throw Error(Errc::invalid_argument,
                      "wort is single-threaded (as in the DPTree paper): use it from 1 thread");
        return std::make_unique<baselines::Wort>(pool);
      });
}

}  // namespace dptree
