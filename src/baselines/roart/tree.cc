// ROART's operations (layout.h gives the words, docs/indexes.md the design). Every write is
// made durable by one 8-byte store after what it names is written back ("publish"): a new
// leaf into a free entry of its leaf array, a new leaf array or a grown, split or re-prefixed
// node into the word that named the old one, a removal as one cleared word.
#include "baselines/roart/tree.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <thread>

#include "baselines/common.h"
#include "baselines/roart/phase.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"

namespace dptree::baselines::roart {

namespace {

unsigned char uc(char c) {
  return static_cast<unsigned char>(c);
}

}  // namespace

// A 16-bit fingerprint of the whole key (leaf arrays are probed by it first).
unsigned fingerprint(std::string_view k) {
  u64 h = 0x9E37'79B9'7F4A'7C15ull * (k.size() + 1);
  for (std::size_t i = 0; i < k.size(); i += 8) {
    u64 w = 0;
    std::memcpy(&w, k.data() + i, std::min<std::size_t>(8, k.size() - i));
    h = (h ^ w) * 0xFF51'AFD7'ED55'8CCDull;
    h ^= h >> 32;
  }
  return static_cast<unsigned>(h >> 48);
}

namespace {

u64 pack_prefix(std::string_view p) {
  u64 w = 0;
  std::memcpy(&w, p.data(), std::min(p.size(), kStoredPrefix));
  return w;
}

Tag tag_for(std::size_t kids) {
  return kids <= 4 ? kN4 : kids <= 16 ? kN16 : kids <= 48 ? kN48 : kN256;
}

std::size_t slot_bytes(int arena) {
  if (arena < kArenaArray) return kNodeSlot[arena];
  if (arena == kArenaArray) return sizeof(LeafArray);
  return std::size_t{32} << (arena - kArenaLeaf0);
}

}  // namespace

Tree::Tree(pm::Pool& pool, u64 form, unsigned threads) : pool_(pool) {
  claim_.emplace(pool, "roart");
  root_ = static_cast<Root*>(open_arena_root(pool, sizeof(Root), kMagic, "roart"));
  if (root_->dir[0] == 0 && root_->tree == 0) {  // never opened: this open decides the form
    pm::store(&root_->form, form);
    pm::persist(&root_->form, 8);
  } else if (root_->form != form) {
    const char* held = root_->form == kFormStrings ? "string" : "integer";
    throw Error(Errc::wrong_index, "pool '" + pool.name() + "' holds a roart over " + held +
                                       " keys: open it with --key-type " +
                                       (root_->form == kFormStrings ? "string" : "u64"));
  }
  open(threads);
}

Tree::Tree(pm::Pool& pool, Root* root, unsigned threads) : pool_(pool), root_(root) {
  embedded_ = true;
  if (root_->magic == 0) {  // new: the slab size first, then the magic that says it is set
    pm::store(&root_->slab_size, SlabArena::slab_size_for(pool.size()));
    pm::store(&root_->form, kFormStrings);
    pm::persist(root_, sizeof(Root));
    pm::store(&root_->magic, kMagic);
    pm::persist(&root_->magic, 8);
  }
  if (root_->magic != kMagic || root_->form != kFormStrings ||
      root_->slab_size != SlabArena::slab_size_for(pool.size()))
    problem("the search layer's root block is not a ROART's");
  open(threads);
}

void Tree::open(unsigned threads) {
  concurrent_ = threads != 1;
  if (concurrent_) locks_ = std::make_unique<WriteLocks>(pool_.size());
  arenas_.create(pool_, root_->dir, root_->slab_size, slot_bytes, concurrent_);
  recover();
}

std::vector<const SlabArena*> Tree::arenas() const {
  std::vector<const SlabArena*> v;
  arenas_.list(v);
  return v;
}

// ---- reads ----------------------------------------------------------------------------

int Tree::arena_of(u64 child) const {
  return tag_of(child) == kArray ? int{kArenaArray} : static_cast<int>(tag_of(child) - kN4);
}

const Leaf* Tree::leaf_at(u64 entry) const {
  return pool_.at<Leaf>(entry_leaf(entry));
}

Tree::Slot Tree::find_child(u64 w, int byte) const {
  auto compressed = [&](u64* words, int n) -> Slot {
    for (int i = 0; i < n; ++i) {
      u64 c = load8(&words[i]);
      if (child_of(c) && byte_of(c) == byte) return {&words[i], with_byte(byte, 0), w, byte, c};
    }
    return {};
  };
  switch (tag_of(w)) {
    case kN4:
      return compressed(node<N4>(w)->child, 4);
    case kN16:
      return compressed(node<N16>(w)->child, 16);
    case kN48: {
      N48* n = node<N48>(w);
      unsigned i = std::atomic_ref<std::uint8_t>(n->slot[byte]).load(std::memory_order_acquire);
      if (i == 0 || i > 48) return {};
      u64 c = load8(&n->child[i - 1]);
      if (!child_of(c) || byte_of(c) != byte) return {};
      return {&n->child[i - 1], with_byte(byte, 0), w, byte, c};
    }
    default: {
      N256* n = node<N256>(w);
      u64 c = child_of(load8(&n->child[byte]));
      if (!c) return {};
      return {&n->child[byte], 0, w, byte, c};
    }
  }
}

// The children of node w as (byte, child word), in byte order.
std::vector<std::pair<int, u64>> Tree::children(u64 w) const {
  std::vector<std::pair<int, u64>> out;
  auto compressed = [&](const u64* words, int n) {
    for (int i = 0; i < n; ++i) {
      u64 c = load8(&words[i]);
      if (child_of(c)) out.emplace_back(byte_of(c), child_of(c));
    }
    std::sort(out.begin(), out.end());
  };
  switch (tag_of(w)) {
    case kN4:
      compressed(node<N4>(w)->child, 4);
      break;
    case kN16:
      compressed(node<N16>(w)->child, 16);
      break;
    case kN48:
      compressed(node<N48>(w)->child, 48);
      break;
    default:
      for (int b = 0; b < 256; ++b)
        if (u64 c = child_of(load8(&node<N256>(w)->child[b]))) out.emplace_back(b, c);
  }
  return out;
}

// The key of some leaf below child word w; empty when there is none (a subtree a concurrent
// remove has just emptied).
std::string_view Tree::any_key(u64 w) const {
  while (child_of(w)) {
    w = child_of(w);
    if (tag_of(w) == kArray) {
      const LeafArray* a = node<LeafArray>(w);
      for (const u64& e : a->entry)
        if (u64 x = load8(&e)) return {leaf_at(x)->key(), leaf_at(x)->len};
      return {};
    }
    u64 end = load8(&node<NodeHeader>(w)->end);
    if (end) {
      w = end;
      continue;
    }
    auto kids = children(w);
    if (kids.empty()) return {};
    w = kids.front().second;
  }
  return {};
}

// The whole prefix of node w (at `depth`) into `out`: the stored bytes, the rest from a key
// below (as ART does for prefixes longer than the header holds). False for an empty subtree.
std::size_t Tree::prefix_bytes(u64 w, std::size_t depth, std::string& out) const {
  const NodeHeader* h = node<NodeHeader>(w);
  std::size_t p = meta_plen(h->meta);
  out.assign(reinterpret_cast<const char*>(&h->prefix), std::min(p, kStoredPrefix));
  if (p > kStoredPrefix) {
    std::string_view k = any_key(w);
    if (k.size() < depth + p) return false;
    out.append(k.substr(depth + kStoredPrefix, p - kStoredPrefix));
  }
  return true;
}

std::optional<Value> Tree::lookup(std::string_view k) const {
  Epochs::Guard g(arenas_.epochs());
  u64 w = child_of(load8(&root_->tree));
  std::size_t d = 0;
  // Prefixes are not compared on the way down: the leaf's whole key is (as in ART).
  while (w && tag_of(w) != kArray) {
    const NodeHeader* h = node<NodeHeader>(w);
    std::size_t b = d + meta_plen(h->meta);
    if (k.size() < b) return std::nullopt;
    if (k.size() == b) {
      w = child_of(load8(&h->end));
      break;
    }
    w = child_of(find_child(w, uc(k[b])).seen);
    d = b + 1;
  }
  if (!w) return std::nullopt;
  const LeafArray* a = node<LeafArray>(w);
  unsigned fp = fingerprint(k);
  for (const u64& e : a->entry) {
    u64 x = load8(&e);
    if (!x || entry_fp(x) != fp) continue;
    const Leaf* l = leaf_at(x);
    if (l->len == k.size() && std::memcmp(l->key(), k.data(), k.size()) == 0)
      return load8(&l->value);
  }
  return std::nullopt;
}

std::size_t Tree::scan(std::string_view start, std::size_t count,
                       const std::function<void(std::string_view, Value)>& emit) const {
  Epochs::Guard g(arenas_.epochs());
  std::size_t got = 0;
  if (count) walk(child_of(load8(&root_->tree)), 0, start, true, count, emit, got);
  return got;
}

bool Tree::walk(u64 w, std::size_t depth, std::string_view start, bool bounded, std::size_t count,
                const std::function<void(std::string_view, Value)>& emit, std::size_t& got) const {
  if (!w) return false;
  if (tag_of(w) == kArray) return walk_array(w, start, bounded, count, emit, got);
  return walk_node(w, depth, start, bounded, count, emit, got);
}

// A leaf array is unsorted: its keys are sorted here (the paper's range query does the same).
bool Tree::walk_array(u64 w, std::string_view start, bool bounded, std::size_t count,
                      const std::function<void(std::string_view, Value)>& emit,
                      std::size_t& got) const {
  std::pair<std::string_view, Value> kv[kArrayEntries];
  std::size_t n = 0;
  for (const u64& e : node<LeafArray>(w)->entry)
    if (u64 x = load8(&e)) {
      const Leaf* l = leaf_at(x);
      std::string_view k(l->key(), l->len);
      if (!bounded || k >= start) kv[n++] = {k, load8(&l->value)};
    }
  n = sorted_unique(kv, n);
  for (std::size_t i = 0; i < n; ++i) {
    emit(kv[i].first, kv[i].second);
    if (++got == count) return true;
  }
  return false;
}

bool Tree::walk_node(u64 w, std::size_t d, std::string_view start, bool bounded, std::size_t count,
                     const std::function<void(std::string_view, Value)>& emit,
                     std::size_t& got) const {
  std::string pfx;
  if (!prefix_bytes(w, d, pfx)) return false;  // emptied meanwhile
  std::size_t b = d + pfx.size();
  bool take_end = true;
  int first = 0;
  if (bounded) {
    std::size_t m = d;
    while (m < b && m < start.size() && start[m] == pfx[m - d]) ++m;
    if (m < b) {
      // start ends inside the prefix, or is below it: every key here is larger.
      if (m < start.size() && uc(start[m]) > uc(pfx[m - d])) return false;  // all smaller
      bounded = false;
    } else if (start.size() == b) {
      bounded = false;  // the end key equals start, and the rest are longer
    } else {
      take_end = false;  // the end key is a proper prefix of start: smaller
      first = uc(start[b]);
    }
  }
  const NodeHeader* h = node<NodeHeader>(w);
  if (take_end && walk(child_of(load8(&h->end)), b, start, false, count, emit, got)) return true;
  return for_each_child(w, bounded ? first : 0, 256, false, [&](int byte, u64 c) {
    return walk(c, b + 1, start, bounded && byte == first, count, emit, got);
  });
}

// Calls fn(byte, child word) for node w's children with a byte in [lo, hi), ascending (or
// descending when `down`), until it returns true; returns whether one did. No allocation:
// scans and floor queries call it for every node they pass.
bool Tree::for_each_child(u64 w, int lo, int hi, bool down,
                          const std::function<bool(int, u64)>& fn) const {
  const int first = down ? hi - 1 : lo, last = down ? lo - 1 : hi, step = down ? -1 : 1;
  if (tag_of(w) == kN256) {
    for (int b = first; b != last; b += step)
      if (u64 c = child_of(load8(&node<N256>(w)->child[b])); c && fn(b, c)) return true;
    return false;
  }
  if (tag_of(w) == kN48) {
    const N48* n = node<N48>(w);
    for (int b = first; b != last; b += step) {
      unsigned i = std::atomic_ref<const std::uint8_t>(n->slot[b]).load(std::memory_order_acquire);
      if (i == 0 || i > 48) continue;
      u64 c = load8(&n->child[i - 1]);
      if (child_of(c) && byte_of(c) == b && fn(b, child_of(c))) return true;
    }
    return false;
  }
  const u64* words = tag_of(w) == kN4 ? node<N4>(w)->child : node<N16>(w)->child;
  int n = tag_of(w) == kN4 ? 4 : 16, k = 0;
  std::pair<int, u64> kids[16];
  for (int i = 0; i < n; ++i)
    if (u64 c = load8(&words[i]); child_of(c) && byte_of(c) >= lo && byte_of(c) < hi)
      kids[k++] = {byte_of(c), child_of(c)};
  std::sort(kids, kids + k);
  for (int i = 0; i < k; ++i)
    if (fn(kids[down ? k - 1 - i : i].first, kids[down ? k - 1 - i : i].second)) return true;
  return false;
}

// ---- floor (PACTree's search layer asks for the greatest anchor <= a key) --------------

std::optional<std::pair<std::string, Value>> Tree::floor(std::string_view k) const {
  Epochs::Guard g(arenas_.epochs());
  const Leaf* l = floor_walk(child_of(load8(&root_->tree)), 0, k, true);
  if (!l) return std::nullopt;
  return std::pair{std::string(l->key(), l->len), load8(&l->value)};
}

std::optional<Value> Tree::floor_value(std::string_view k) const {
  Epochs::Guard g(arenas_.epochs());
  const Leaf* l = floor_walk(child_of(load8(&root_->tree)), 0, k, true);
  if (!l) return std::nullopt;
  return load8(&l->value);
}

// The leaf of the greatest key of array w (<= k when `bounded`); null if none.
const Leaf* Tree::floor_array(u64 w, std::string_view k, bool bounded) const {
  const Leaf* best = nullptr;
  for (const u64& e : node<LeafArray>(w)->entry)
    if (u64 x = load8(&e)) {
      const Leaf* l = leaf_at(x);
      std::string_view lk(l->key(), l->len);
      if ((!bounded || lk <= k) && (!best || lk > std::string_view(best->key(), best->len)))
        best = l;
    }
  return best;
}

// The leaf of the greatest key below child word w (at `depth`): <= k when `bounded` (the path
// so far holds k's bytes), else the greatest of all. Mirrors walk_node, from the right.
const Leaf* Tree::floor_walk(u64 w, std::size_t d, std::string_view k, bool bounded) const {
  if (!w) return nullptr;
  if (tag_of(w) == kArray) return floor_array(w, k, bounded);
  std::string pfx;
  if (!prefix_bytes(w, d, pfx)) return nullptr;
  std::size_t b = d + pfx.size();
  const NodeHeader* h = node<NodeHeader>(w);
  int below = 256;  // children with a byte below this one are all < k
  if (bounded) {
    std::size_t m = d;
    while (m < b && m < k.size() && k[m] == pfx[m - d]) ++m;
    if (m < b) {
      if (m == k.size() || uc(k[m]) < uc(pfx[m - d])) return nullptr;  // every key here is > k
      bounded = false;                                                 // every key here is < k
    } else if (k.size() == b) {
      return floor_walk(child_of(load8(&h->end)), b, k, false);  // only the end key <= k
    } else {
      if (auto c = find_child(w, uc(k[b])); c.word)
        if (const Leaf* l = floor_walk(child_of(c.seen), b + 1, k, true)) return l;
      below = uc(k[b]);
    }
  }
  // Children below, greatest first; one emptied meanwhile gives the next one down.
  const Leaf* found = nullptr;
  for_each_child(w, 0, below, true, [&](int, u64 c) {
    found = floor_walk(c, b + 1, k, false);
    return found != nullptr;
  });
  return found ? found : floor_walk(child_of(load8(&h->end)), b, k, false);  // a prefix of k
}

// ---- writes ---------------------------------------------------------------------------

u64 Tree::take(int arena) {
  Phase ph("alloc");
  return arenas_.take(arena, [&](u64 off) {
    if (arena <= kArenaArray) locks_->clear_obsolete(off);  // handed out again
  });
}

// Called under the locks that unlinked the slot: a node or array is marked replaced before
// they are released, so a writer that found it without a lock sees that when it validates.
void Tree::retire(int arena, u64 off) {
  if (concurrent_ && arena <= kArenaArray) locks_->set_obsolete(off);
  arenas_.retire(arena, off);
}

// A leaf written and written back (the publish's fence orders it); returns its entry word.
u64 write_leaf(pm::Pool& pool, u64 off, std::string_view k, Value v) {
  Leaf* l = pool.at<Leaf>(off);
  pm::store(l, Leaf{k.size(), v});
  pm::store_bytes(l->key(), k.data(), k.size());
  pm::flush(l, sizeof(Leaf) + k.size());
  return u64(fingerprint(k)) << kFpShift | off | u64(leaf_class(k.size()));
}

u64 Tree::new_leaf(std::string_view k, Value v) {
  u64 off = take(kArenaLeaf0 + leaf_class(k.size()));
  Phase ph("leaf");
  return write_leaf(pool_, off, k, v);
}

u64 Tree::new_array(const std::vector<u64>& entries) {
  u64 off = take(kArenaArray);
  Phase ph("array");
  LeafArray a{};
  std::copy(entries.begin(), entries.end(), a.entry);
  pm::store(pool_.at<LeafArray>(off), a);
  pm::flush(pool_.at<LeafArray>(off), sizeof(LeafArray));
  return off | kArray;
}

// A node of the smallest kind that holds `kids` (byte, child word), written back.
u64 Tree::new_node(std::size_t depth, std::string_view prefix, u64 end,
                   const std::vector<std::pair<int, u64>>& kids) {
  Tag t = tag_for(kids.size());
  int arena = static_cast<int>(t) - kN4;
  u64 off = take(arena);
  Phase ph("node");
  std::vector<u64> img(kNodeSlot[arena] / 8, 0);
  NodeHeader h{meta_word(t, depth, prefix.size()), pack_prefix(prefix), end};
  std::memcpy(img.data(), &h, sizeof(h));
  u64* child = img.data() + 3;
  for (std::size_t i = 0; i < kids.size(); ++i) {
    auto [byte, c] = kids[i];
    if (t == kN256) {
      child[byte] = c;
    } else {
      child[i] = with_byte(byte, c);
      if (t == kN48) reinterpret_cast<std::uint8_t*>(child + 48)[byte] = std::uint8_t(i + 1);
    }
  }
  std::size_t bytes = t == kN4    ? sizeof(N4)
                      : t == kN16 ? sizeof(N16)
                      : t == kN48 ? sizeof(N48)
                                  : sizeof(N256);
  pm::store_bytes(at(off), img.data(), bytes);
  pm::flush(at(off), bytes);
  return off | t;
}

// The one 8-byte store that makes `child` (written back already) reachable from slot s.
void Tree::publish(const Slot& s, u64 child) {
  {
    Phase ph("fence");
    pm::fence();
  }
  Phase ph("publish");
  pm::store_release(s.word, s.hi | child);
  pm::persist(s.word, 8);
}

void Tree::unlink(const Slot& s) {
  Phase ph("unlink");
  pm::store_release(s.word, u64{0});
  pm::persist(s.word, 8);
  if (s.parent && tag_of(s.parent) == kN48 && s.byte >= 0) {  // its byte no longer names it
    std::uint8_t* idx = &node<N48>(s.parent)->slot[s.byte];
    pm::store_release(idx, std::uint8_t{0});
    pm::persist(idx, 1);
  }
}

// Holds the locks of slot s's holder and of x (the word's child, 0 for none) when concurrent,
// and tells whether both are as the lock-free walk saw them: neither replaced, s naming x.
struct Tree::Locked {
  std::optional<WriteLocks::Pair> pair;
  bool ok = true;
  Locked(Tree& t, const Slot& s, u64 x) {
    if (!t.concurrent_) return;
    pair.emplace(*t.locks_, off_of(s.parent), off_of(x));
    ok = !t.locks_->obsolete(off_of(s.parent)) && child_of(load8(s.word)) == x &&
         !t.locks_->obsolete(off_of(x));
  }
  explicit operator bool() const { return ok; }
};

void Tree::collect() {
  arenas_.collect();
}

bool Tree::put(std::string_view k, Value v, bool may_insert, bool may_update) {
  pm::CategoryScope cat(pm::Category::node);
  for (;;) {
    std::optional<bool> r;
    {
      Epochs::Guard g(arenas_.epochs());
      r = put_once(k, v, may_insert, may_update);
    }
    collect();
    if (r) return *r;
    std::this_thread::yield();  // a writer replaced what this one had found
  }
}

std::optional<bool> Tree::put_once(std::string_view k, Value v, bool may_insert, bool may_update) {
  Slot s{&root_->tree};
  std::size_t d = 0;
  std::string pfx;
  for (;;) {
    u64 w = child_of(load8(s.word));
    if (!w) {  // the root word or an end word, empty
      if (!may_insert) return false;
      Locked g(*this, s, 0);
      if (!g) return std::nullopt;
      publish(s, new_array({new_leaf(k, v)}));
      ++records_;
      return true;
    }
    if (tag_of(w) == kArray) {
      Locked g(*this, s, w);
      if (!g) return std::nullopt;
      return put_in_array(s, d, k, v, may_insert, may_update);
    }
    if (!prefix_bytes(w, d, pfx)) return std::nullopt;  // a remove is dropping the empty node
    std::size_t b = d + pfx.size(), m = d;
    while (m < b && m < k.size() && k[m] == pfx[m - d]) ++m;
    if (m < b) {  // k leaves (or ends inside) the node's prefix at byte m
      if (!may_insert) return false;
      Locked g(*this, s, w);
      if (!g) return std::nullopt;
      split_prefix(s, d, m, k, v);
      ++records_;
      return true;
    }
    if (k.size() == b) {
      s = Slot{&node<NodeHeader>(w)->end, 0, w, -1};
      d = b;
      continue;
    }
    Slot c = find_child(w, uc(k[b]));
    if (!c.word) {
      if (!may_insert) return false;
      Locked g(*this, s, w);
      if (!g || find_child(w, uc(k[b])).word) return std::nullopt;  // or added meanwhile
      add_child(Slot{s.word, s.hi, s.parent, s.byte, w}, uc(k[b]), new_array({new_leaf(k, v)}));
      ++records_;
      return true;
    }
    s = c;
    d = b + 1;
  }
}

bool Tree::put_in_array(const Slot& s, std::size_t depth, std::string_view k, Value v,
                        bool may_insert, bool may_update) {
  LeafArray* a = node<LeafArray>(child_of(*s.word));
  unsigned fp = fingerprint(k);
  int free_at = -1;
  for (int i = 0; i < int(kArrayEntries); ++i) {
    u64 e = a->entry[i];
    if (!e) {
      if (free_at < 0) free_at = i;
      continue;
    }
    if (entry_fp(e) != fp) continue;
    Leaf* l = pool_.at<Leaf>(entry_leaf(e));
    if (l->len != k.size() || std::memcmp(l->key(), k.data(), k.size()) != 0) continue;
    if (!may_update) return false;
    Phase ph("value");
    pm::store_release(&l->value, v);
    pm::persist(&l->value, 8);
    return true;
  }
  if (!may_insert) return false;
  u64 e = new_leaf(k, v);
  if (free_at >= 0)
    publish(Slot{&a->entry[free_at]}, e);
  else
    split_array(s, depth, e);
  ++records_;
  return true;
}

// A full leaf array (at `depth`) and one more entry become a node over new leaf arrays: the
// node's prefix is what all the keys share from `depth` on, and its branch byte splits them.
// The leaves move by reference; the node is swung in by one store.
void Tree::split_array(const Slot& s, std::size_t depth, u64 entry) {
  u64 old = child_of(*s.word);
  std::vector<u64> all(std::begin(node<LeafArray>(old)->entry),
                       std::end(node<LeafArray>(old)->entry));
  all.push_back(entry);
  auto key = [&](u64 e) { return std::string_view(leaf_at(e)->key(), leaf_at(e)->len); };
  std::string_view first = key(all[0]);
  std::size_t b = depth;
  auto all_same = [&](std::size_t i) {
    for (u64 e : all)
      if (key(e).size() <= i || first.size() <= i || key(e)[i] != first[i]) return false;
    return true;
  };
  while (all_same(b)) ++b;
  u64 end = 0;
  std::map<int, std::vector<u64>> groups;
  for (u64 e : all) {
    if (key(e).size() == b)
      end = new_array({e});
    else
      groups[uc(key(e)[b])].push_back(e);
  }
  std::vector<std::pair<int, u64>> kids;
  for (const auto& [byte, es] : groups) kids.emplace_back(byte, new_array(es));
  publish(s, new_node(depth, first.substr(depth, b - depth), end, kids));
  retire(kArenaArray, off_of(old));
  ++array_splits_;
}

// Node w = s's word (at `depth`) has a prefix that k leaves at byte m: a new node at `depth`
// with the prefix's first m - depth bytes takes its place, over a copy of w holding the rest
// of the prefix and over k's new leaf array (its end word when k ends at m).
void Tree::split_prefix(const Slot& s, std::size_t depth, std::size_t m, std::string_view k,
                        Value v) {
  u64 w = child_of(*s.word);
  std::string pfx;
  prefix_bytes(w, depth, pfx);
  int arena = arena_of(w);
  u64 copy = take(arena);
  {
    Phase ph("node");
    std::vector<u64> img(kNodeSlot[arena] / 8);
    std::memcpy(img.data(), at(off_of(w)), kNodeSlot[arena]);
    std::string_view rest = std::string_view(pfx).substr(m - depth + 1);
    img[0] = meta_word(Tag(tag_of(w)), m + 1, rest.size());
    img[1] = pack_prefix(rest);
    pm::store_bytes(at(copy), img.data(), kNodeSlot[arena]);
    pm::flush(at(copy), kNodeSlot[arena]);
  }
  u64 arr = new_array({new_leaf(k, v)});
  std::vector<std::pair<int, u64>> kids{{uc(pfx[m - depth]), copy | tag_of(w)}};
  if (k.size() > m) kids.emplace_back(uc(k[m]), arr);
  std::sort(kids.begin(), kids.end());
  publish(s, new_node(depth, std::string_view(pfx).substr(0, m - depth), k.size() == m ? arr : 0,
                      kids));
  retire(arena, off_of(w));
  ++prefix_splits_;
}

// Adds child `c` under `byte` to node s.seen: one store into a free word, or a grown copy of
// the node swung into s (ART's node growth, copy-on-write).
void Tree::add_child(const Slot& s, int byte, u64 c) {
  u64 w = s.seen;
  auto into_free = [&](u64* words, int n) {
    for (int i = 0; i < n; ++i)
      if (!child_of(words[i])) {
        publish(Slot{&words[i], with_byte(byte, 0)}, c);
        return i;
      }
    return -1;
  };
  switch (tag_of(w)) {
    case kN4:
      if (into_free(node<N4>(w)->child, 4) >= 0) return;
      break;
    case kN16:
      if (into_free(node<N16>(w)->child, 16) >= 0) return;
      break;
    case kN48:
      if (int i = into_free(node<N48>(w)->child, 48); i >= 0) {
        Phase ph("index");  // recovery rebuilds it, so a crash before it loses nothing
        std::uint8_t* idx = &node<N48>(w)->slot[byte];
        pm::store_release(idx, std::uint8_t(i + 1));
        pm::persist(idx, 1);
        return;
      }
      break;
    default:
      publish(Slot{&node<N256>(w)->child[byte]}, c);
      return;
  }
  auto kids = children(w);
  kids.emplace_back(byte, c);
  std::sort(kids.begin(), kids.end());
  const NodeHeader* h = node<NodeHeader>(w);
  std::size_t depth = meta_depth(h->meta);
  std::string pfx;
  prefix_bytes(w, depth, pfx);
  publish(s, new_node(depth, pfx, child_of(h->end), kids));
  retire(arena_of(w), off_of(w));
  ++grows_;
}

bool Tree::remove(std::string_view k) {
  pm::CategoryScope cat(pm::Category::node);
  for (;;) {
    std::optional<bool> r;
    {
      Epochs::Guard g(arenas_.epochs());
      r = remove_once(k);
    }
    if (r && *r)
      for (bool again = true; again;) {  // nodes the remove left empty go, deepest first
        Epochs::Guard g(arenas_.epochs());
        again = drop_empty_node(k);
      }
    collect();
    if (r) return *r;
    std::this_thread::yield();
  }
}

// Clears k's entry; an array left empty is unlinked at once (under its holder's lock).
std::optional<bool> Tree::remove_once(std::string_view k) {
  Slot s{&root_->tree};
  std::size_t d = 0;
  u64 w = 0;
  for (;;) {
    w = child_of(load8(s.word));
    if (!w) return false;
    if (tag_of(w) == kArray) break;
    const NodeHeader* h = node<NodeHeader>(w);
    std::size_t b = d + meta_plen(h->meta);
    if (k.size() < b) return false;
    if (k.size() == b) {
      s = Slot{&node<NodeHeader>(w)->end, 0, w, -1};
    } else {
      s = find_child(w, uc(k[b]));
      if (!s.word) return false;
    }
    d = b + 1;
  }
  Locked g(*this, s, w);
  if (!g) return std::nullopt;
  LeafArray* a = node<LeafArray>(w);
  unsigned fp = fingerprint(k);
  int at_i = -1, left = 0;
  for (int i = 0; i < int(kArrayEntries); ++i) {
    u64 e = a->entry[i];
    if (!e) continue;
    const Leaf* l = leaf_at(e);
    if (at_i < 0 && entry_fp(e) == fp && l->len == k.size() &&
        std::memcmp(l->key(), k.data(), k.size()) == 0)
      at_i = i;
    else
      ++left;
  }
  if (at_i < 0) return false;
  u64 gone = a->entry[at_i];
  unlink(Slot{&a->entry[at_i]});
  retire(kArenaLeaf0 + entry_class(gone), entry_leaf(gone));
  --records_;
  if (left == 0) {
    unlink(s);
    retire(kArenaArray, off_of(w));
  }
  return true;
}

bool Tree::node_empty(u64 w) const {
  return !child_of(load8(&node<NodeHeader>(w)->end)) && children(w).empty();
}

// Unlinks the deepest empty node on k's path; false when there is none.
bool Tree::drop_empty_node(std::string_view k) {
  Slot s{&root_->tree}, found;
  std::size_t d = 0;
  for (u64 w = child_of(load8(s.word)); w && tag_of(w) != kArray; w = child_of(s.seen)) {
    if (node_empty(w)) found = Slot{s.word, s.hi, s.parent, s.byte, w};
    std::size_t b = d + meta_plen(node<NodeHeader>(w)->meta);
    if (k.size() == b) break;  // an end word holds arrays only
    if (k.size() < b) break;
    s = find_child(w, uc(k[b]));
    if (!s.word) break;
    d = b + 1;
  }
  if (!found.word) return false;
  Locked g(*this, found, found.seen);
  if (!g) return true;  // replaced meanwhile: walk again
  if (!node_empty(found.seen)) return false;
  unlink(found);
  retire(arena_of(found.seen), off_of(found.seen));
  return true;
}

std::size_t Tree::node_count() const {
  return nodes_in(arenas_.usage().used);
}

IndexStats Tree::stats() const {
  IndexStats s;
  s.records = records_.load();
  const auto u = arenas_.usage();
  s.pm_bytes = pool_.allocator().block_size(*pool_.root_word()) + u.pm_bytes;
  s.dram_bytes = u.dram_bytes;
  s.extra = {{"nodes", double(nodes_in(u.used))},
             {"leaf_arrays", double(u.used[kArenaArray])},
             {"array_splits", double(array_splits_)},
             {"grows", double(grows_)},
             {"prefix_splits", double(prefix_splits_)}};
  return s;
}

}  // namespace dptree::baselines::roart
