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

Tree::Tree(pm::Pool& pool, Root* root, unsigned threads, const Records* records)
    : pool_(pool), root_(root) {
  embedded_ = true;
  owner_ = records;
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
  if (!owner_)
    ends_ = std::make_unique<std::atomic<std::uint8_t>[]>(pool_.size() / sizeof(LeafArray));
  arenas_.create(pool_, root_->dir, root_->slab_size, slot_bytes, concurrent_, /*runs=*/true);
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
    if (tag_of(w) == kRecord) return record_key(w);
    if (tag_of(w) == kArray) {
      for (const u64* e = array_begin(w); e != array_end(w); ++e)
        if (u64 x = load8(e)) return {leaf_at(x)->key(), leaf_at(x)->len};
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

// A new node or leaf array is handed out marked replaced, so writers that meet it restart,
// until settle() clears the mark once the publish that links it is durable.
u64 Tree::take(int arena) {
  Phase ph("alloc");
  return arenas_.take(arena, [&](u64 off) {
    if (arena <= kArenaArray) locks_->set_obsolete(off);
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
  set_end_mark(off, entries.size());  // before the publish that makes the array reachable
  return off | kArray;
}

// What ends the path of one key (k, v): a new leaf array holding its new leaf, or, over an
// owner's records, the word of record v itself (written back by its owner).
u64 Tree::new_array_of(std::string_view k, Value v) {
  if (!owner_) return new_array({new_leaf(k, v)});
  if (v & kTagMask || v > kWordMask)
    throw Error(Errc::invalid_argument,
                "roart: a record offset must be a multiple of 8 below 2^56");
  return v | kRecord;
}

// What ends the path of the keys of `entries` (a split's group): a new leaf array of them, or
// over records the one record's word (two records never share a path's end).
u64 Tree::bottom_of(const std::vector<u64>& entries) {
  return owner_ ? entries[0] : new_array(entries);
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

// The one 8-byte store that makes `child` (written back already) reachable from slot s. Over
// records (which have no leaf arrays, so no entry word is published) a record's word needs no
// fence before it: the tree wrote nothing for it, and its owner made the record durable before
// putting it. An entry word's low bits are a size class, which may equal kRecord's tag.
void Tree::publish(const Slot& s, u64 child) {
  if (!owner_ || tag_of(child) != kRecord) {
    Phase ph("fence");
    pm::fence();
  }
  Phase ph("publish");
  pm::store_release(s.word, s.hi | child);
  pm::persist(s.word, 8);
}

// A publish's store makes its new node or array visible at once, but durable only at the
// fence after it. A writer that changed one in between and returned would lose its write to a
// crash there (the publish undone), so new slots stay marked replaced (take()) until the
// publish that linked them is durable: only then does this clear the marks of `child` and of
// the new slots below it, deepest first, so the words it reads stay as they are (no writer
// changes a marked node). A new node names only new slots and its holder's live children,
// whose words change only under that holder's lock, so no child is marked but a new one.
void Tree::settle(u64 child) {
  const u64 t = tag_of(child);
  if (!concurrent_ || (t != kArray && (t < kN4 || t > kN256))) return;
  if (!locks_->obsolete(off_of(child))) return;  // linked before: settled already
  if (t != kArray) {
    settle(child_of(load8(&node<NodeHeader>(child)->end)));
    for_each_child(child, 0, 256, [&](int, u64 c) {
      settle(c);
      return false;
    });
  }
  locks_->clear_obsolete(off_of(child));
}

// Publishes a new leaf array or node (written back) into slot s and lets other writers at it.
void Tree::link(const Slot& s, u64 child) {
  publish(s, child);
  settle(child);
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
             {"array_splits", double(array_splits_.load())},
             {"grows", double(grows_.load())},
             {"prefix_splits", double(prefix_splits_.load())},
             {"restarts", double(restarts_.load())}};
  return s;
}

}  // namespace dptree::baselines::roart
