// ROART's writes: insert, update and remove, with the array splits, prefix splits and node
// growth they need. Each builds what it adds out of place and publishes it with one 8-byte
// store (tree.cc); concurrent writers lock the holder of the word they swing (ROWEX).
#include "baselines/roart/tree.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "baselines/common.h"
#include "baselines/roart/phase.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"

namespace dptree::baselines::roart {

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

// Holds the lock of node or leaf array x alone when concurrent, and tells whether x is still
// linked (write_locks.h): enough for a change inside x that swings no word above it, as ROART
// locks only the node it inserts into. Two writers under one parent then do not wait on each
// other, where Locked made every insert under a node take that node's lock.
struct Tree::Held {
  std::optional<WriteLocks::One> one;
  bool ok = true;
  Held(Tree& t, u64 x) {
    if (!t.concurrent_) return;
    one.emplace(*t.locks_, off_of(x));
    ok = !t.locks_->obsolete(off_of(x));
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
    ++restarts_;
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
      link(s, new_array_of(k, v));
      ++records_;
      return true;
    }
    if (tag_of(w) == kRecord) {  // every change here swings s's word
      Locked g(*this, s, w);
      if (!g) return std::nullopt;
      return put_at_record(s, w, d, k, v, may_insert, may_update);
    }
    if (tag_of(w) == kArray) {
      if (concurrent_) {  // the array alone; only a full one's split swings s's word
        Held a(*this, w);
        if (!a) return std::nullopt;
        if (auto r = put_in_array(s, w, d, k, v, may_insert, may_update, false)) return r;
      }
      Locked g(*this, s, w);
      if (!g) return std::nullopt;
      return put_in_array(s, w, d, k, v, may_insert, may_update, true);
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
      const Slot at{s.word, s.hi, s.parent, s.byte, w};
      if (concurrent_) {  // the node alone; only a full one's growth swings s's word
        Held n(*this, w);
        if (!n || find_child(w, uc(k[b])).word) return std::nullopt;  // or added meanwhile
        if (free_word(w, uc(k[b]))) {
          add_child(at, uc(k[b]), new_array_of(k, v));
          ++records_;
          return true;
        }
      }
      Locked g(*this, s, w);
      if (!g || find_child(w, uc(k[b])).word) return std::nullopt;  // or added meanwhile
      add_child(at, uc(k[b]), new_array_of(k, v));
      ++records_;
      return true;
    }
    s = c;
    d = b + 1;
  }
}

// Array w is s's child, locked; a full one is split when may_split (s's holder locked too),
// else nothing is done and nullopt returned.
std::optional<bool> Tree::put_in_array(const Slot& s, u64 w, std::size_t depth, std::string_view k,
                                       Value v, bool may_insert, bool may_update, bool may_split) {
  LeafArray* a = node<LeafArray>(w);
  unsigned fp = fingerprint(k);
  const int end = end_mark(w).load(std::memory_order_relaxed);  // its writers hold its lock
  int free_at = end < int(kArrayEntries) ? end : -1;            // past the mark, unless one is free
  for (int i = 0; i < end; ++i) {
    u64 e = a->entry[i];
    if (!e) {
      if (free_at < 0 || free_at == end) free_at = i;
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
  if (free_at < 0 && !may_split) return std::nullopt;
  u64 e = new_leaf(k, v);
  if (free_at == end) set_end_mark(w, end + 1);  // before the entry can be read
  if (free_at >= 0)
    publish(Slot{&a->entry[free_at]}, e);
  else
    split_array(s, depth, e);
  ++records_;
  return true;
}

// Record word w = s's child (its holder locked) ends k's path: the record's own key is
// updated by naming record v instead, another key splits the path as a full array does.
std::optional<bool> Tree::put_at_record(const Slot& s, u64 w, std::size_t depth, std::string_view k,
                                        Value v, bool may_insert, bool may_update) {
  if (record_key(w) == k) {
    if (!may_update) return false;
    if (off_of(w) != v) publish(s, new_array_of(k, v));
    return true;
  }
  if (!may_insert) return false;
  split_array(s, depth, new_array_of(k, v));
  ++records_;
  return true;
}

// The key an array entry's leaf holds, or over records the key of a record word.
std::string_view Tree::entry_key(u64 e) const {
  if (owner_) return record_key(e);
  return {leaf_at(e)->key(), leaf_at(e)->len};
}

// A full leaf array (at `depth`) and one more entry become a node over new leaf arrays: the
// node's prefix is what all the keys share from `depth` on, and its branch byte splits them.
// The leaves move by reference; the node is swung in by one store. Over records, s names one
// record and the node goes over the two record words themselves.
void Tree::split_array(const Slot& s, std::size_t depth, u64 entry) {
  u64 old = child_of(*s.word);
  std::vector<u64> all;
  if (owner_)
    all.push_back(old);
  else
    all.assign(array_begin(old), array_end(old));
  all.push_back(entry);
  std::string_view first = entry_key(all[0]);
  std::size_t b = depth;
  auto all_same = [&](std::size_t i) {
    for (u64 e : all)
      if (entry_key(e).size() <= i || first.size() <= i || entry_key(e)[i] != first[i])
        return false;
    return true;
  };
  while (all_same(b)) ++b;
  u64 end = 0;
  std::map<int, std::vector<u64>> groups;
  for (u64 e : all) {
    if (entry_key(e).size() == b)
      end = bottom_of({e});
    else
      groups[uc(entry_key(e)[b])].push_back(e);
  }
  std::vector<std::pair<int, u64>> kids;
  for (const auto& [byte, es] : groups) kids.emplace_back(byte, bottom_of(es));
  link(s, new_node(depth, first.substr(depth, b - depth), end, kids));
  if (!owner_) retire(kArenaArray, off_of(old));
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
  u64 arr = new_array_of(k, v);
  std::vector<std::pair<int, u64>> kids{{uc(pfx[m - depth]), copy | tag_of(w)}};
  if (k.size() > m) kids.emplace_back(uc(k[m]), arr);
  std::sort(kids.begin(), kids.end());
  link(s,
       new_node(depth, std::string_view(pfx).substr(0, m - depth), k.size() == m ? arr : 0, kids));
  retire(arena, off_of(w));
  ++prefix_splits_;
}

// Adds child `c` under `byte` to node s.seen: one store into a free word, or a grown copy of
// the node swung into s (ART's node growth, copy-on-write).
// The word of node w (locked) a child under `byte` can take without growing w; nullptr when w
// is full.
u64* Tree::free_word(u64 w, int byte) const {
  auto first_free = [](u64* words, int n) -> u64* {
    for (int i = 0; i < n; ++i)
      if (!child_of(words[i])) return &words[i];
    return nullptr;
  };
  switch (tag_of(w)) {
    case kN4:
      return first_free(node<N4>(w)->child, 4);
    case kN16:
      return first_free(node<N16>(w)->child, 16);
    case kN48:
      return first_free(node<N48>(w)->child, 48);
    default:
      return &node<N256>(w)->child[byte];
  }
}

void Tree::add_child(const Slot& s, int byte, u64 c) {
  u64 w = s.seen;
  if (u64* word = free_word(w, byte)) {
    const bool n256 = tag_of(w) == kN256;  // its words keep no key byte
    link(Slot{word, n256 ? 0 : with_byte(byte, 0)}, c);
    if (tag_of(w) == kN48) {
      Phase ph("index");  // recovery rebuilds it, so a crash before it loses nothing
      std::uint8_t* idx = &node<N48>(w)->slot[byte];
      pm::store_release(idx, std::uint8_t(word - node<N48>(w)->child + 1));
      pm::persist(idx, 1);
    }
    return;
  }
  auto kids = children(w);
  kids.emplace_back(byte, c);
  std::sort(kids.begin(), kids.end());
  const NodeHeader* h = node<NodeHeader>(w);
  std::size_t depth = meta_depth(h->meta);
  std::string pfx;
  prefix_bytes(w, depth, pfx);
  link(s, new_node(depth, pfx, child_of(h->end), kids));
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
    ++restarts_;
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
    if (bottom(w)) break;
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
  if (tag_of(w) == kRecord) {
    if (record_key(w) != k) return false;
    unlink(s);
    --records_;
    return true;
  }
  LeafArray* a = node<LeafArray>(w);
  unsigned fp = fingerprint(k);
  int at_i = -1, left = 0;
  for (int i = 0; i < int(array_end(w) - a->entry); ++i) {
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
  for (u64 w = child_of(load8(s.word)); w && !bottom(w); w = child_of(s.seen)) {
    if (node_empty(w)) found = Slot{s.word, s.hi, s.parent, s.byte, w};
    std::size_t b = d + meta_plen(node<NodeHeader>(w)->meta);
    if (k.size() == b) break;  // an end word holds no node
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

}  // namespace dptree::baselines::roart
