// ROART's reads: lookup, ordered scans and floor queries. Readers take no lock (ROWEX): every
// word is loaded once and checked before it is followed (docs/indexes.md, ROART).
#include "baselines/roart/tree.h"

#include <algorithm>
#include <cstring>

#include "baselines/common.h"
#include "baselines/roart/phase.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"

namespace dptree::baselines::roart {

std::optional<Value> Tree::lookup(std::string_view k) const {
  Epochs::Guard g(arenas_.epochs());
  u64 w = child_of(load8(&root_->tree));
  std::size_t d = 0;
  // Prefixes are not compared on the way down: the leaf's whole key is (as in ART).
  while (w && !bottom(w)) {
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
  if (tag_of(w) == kRecord)
    return record_key(w) == k ? std::optional<Value>(off_of(w)) : std::nullopt;
  unsigned fp = fingerprint(k);
  for (const u64* e = array_begin(w); e != array_end(w); ++e) {
    u64 x = load8(e);
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
  if (tag_of(w) == kRecord) {
    const std::string_view k = record_key(w);
    if (bounded && k < start) return false;
    emit(k, off_of(w));
    return ++got == count;
  }
  if (tag_of(w) == kArray) return walk_array(w, start, bounded, count, emit, got);
  return walk_node(w, depth, start, bounded, count, emit, got);
}

// A leaf array is unsorted: its keys are sorted here (the paper's range query does the same).
bool Tree::walk_array(u64 w, std::string_view start, bool bounded, std::size_t count,
                      const std::function<void(std::string_view, Value)>& emit,
                      std::size_t& got) const {
  std::pair<std::string_view, Value> kv[kArrayEntries];
  std::size_t n = 0;
  for (const u64* e = array_begin(w); e != array_end(w); ++e)
    if (u64 x = load8(e)) {
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
  return for_each_child(w, bounded ? first : 0, 256, [&](int byte, u64 c) {
    return walk(c, b + 1, start, bounded && byte == first, count, emit, got);
  });
}

// Calls fn(byte, child word) for node w's children with a byte in [lo, hi), ascending, until it
// returns true; returns whether one did. No allocation: scans call it for every node they pass.
bool Tree::for_each_child(u64 w, int lo, int hi, const std::function<bool(int, u64)>& fn) const {
  if (tag_of(w) == kN256) {
    for (int b = lo; b != hi; ++b)
      if (u64 c = child_of(load8(&node<N256>(w)->child[b])); c && fn(b, c)) return true;
    return false;
  }
  if (tag_of(w) == kN48) {
    const N48* n = node<N48>(w);
    for (int b = lo; b != hi; ++b) {
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
    if (fn(kids[i].first, kids[i].second)) return true;
  return false;
}

// ---- floor (PACTree's search layer asks for the greatest anchor <= a key) --------------

std::optional<std::pair<std::string, Value>> Tree::floor(std::string_view k) const {
  Epochs::Guard g(arenas_.epochs());
  const Hit h = floor_walk(child_of(load8(&root_->tree)), 0, k, true);
  if (!h) return std::nullopt;
  return std::pair{std::string(key_of(h)), value_of(h)};
}

std::optional<Value> Tree::floor_value(std::string_view k) const {
  Epochs::Guard g(arenas_.epochs());
  const Hit h = floor_walk(child_of(load8(&root_->tree)), 0, k, true);
  if (!h) return std::nullopt;
  return value_of(h);
}

std::string_view Tree::key_of(const Hit& h) const {
  return h.leaf ? std::string_view(h.leaf->key(), h.leaf->len) : record_key(h.record);
}
Value Tree::value_of(const Hit& h) const {
  return h.leaf ? load8(&h.leaf->value) : off_of(h.record);
}

// The leaf of the greatest key of array w (<= k when `bounded`); none if none.
Tree::Hit Tree::floor_array(u64 w, std::string_view k, bool bounded) const {
  const Leaf* best = nullptr;
  for (const u64* e = array_begin(w); e != array_end(w); ++e)
    if (u64 x = load8(e)) {
      const Leaf* l = leaf_at(x);
      std::string_view lk(l->key(), l->len);
      if ((!bounded || lk <= k) && (!best || lk > std::string_view(best->key(), best->len)))
        best = l;
    }
  return {best, 0};
}

// Record word w when its key is <= k (or not `bounded`). Its key is read from the record, the
// line a lookup reads next anyway (PACTree's data node).
Tree::Hit Tree::floor_record(u64 w, std::string_view k, bool bounded) const {
  if (bounded && record_key(w) > k) return {};
  return {nullptr, w};
}

// The leaf or record of the greatest key below child word w (at `depth`): <= k when `bounded`
// (the path so far holds k's bytes), else the greatest of all. Mirrors walk_node, from the
// right; the largest of all needs only the prefix's length, not its bytes.
Tree::Hit Tree::floor_walk(u64 w, std::size_t d, std::string_view k, bool bounded) const {
  if (!w) return {};
  if (tag_of(w) == kRecord) return floor_record(w, k, bounded);
  if (tag_of(w) == kArray) return floor_array(w, k, bounded);
  const NodeHeader* h = node<NodeHeader>(w);
  const std::size_t b = d + meta_plen(h->meta);
  int below = 256;  // children with a byte below this one are all < k
  if (bounded) {
    std::string whole;
    const std::string_view pfx = prefix_view(w, d, whole);
    if (pfx.size() != b - d) return {};  // emptied meanwhile
    std::size_t m = d;
    while (m < b && m < k.size() && k[m] == pfx[m - d]) ++m;
    if (m < b) {
      if (m == k.size() || uc(k[m]) < uc(pfx[m - d])) return {};  // every key here is > k
      bounded = false;                                            // every key here is < k
    } else if (k.size() == b) {
      return floor_walk(child_of(load8(&h->end)), b, k, false);  // only the end key <= k
    } else {
      if (auto c = find_child(w, uc(k[b])); c.word)
        if (const Hit hit = floor_walk(child_of(c.seen), b + 1, k, true)) return hit;
      below = uc(k[b]);
    }
  }
  // Children below, greatest first; one emptied meanwhile gives the next one down.
  while (u64 c = child_below(w, below))
    if (const Hit hit = floor_walk(c, b + 1, k, false)) return hit;
  return floor_walk(child_of(load8(&h->end)), b, k, false);  // a prefix of k
}

// Node w's prefix (w at `depth`): in its header when all of it is stored there, else read into
// `whole` by prefix_bytes; shorter than the prefix when the subtree emptied meanwhile.
std::string_view Tree::prefix_view(u64 w, std::size_t depth, std::string& whole) const {
  const NodeHeader* h = node<NodeHeader>(w);
  const std::size_t p = meta_plen(h->meta);
  if (p <= kStoredPrefix) return {reinterpret_cast<const char*>(&h->prefix), p};
  if (!prefix_bytes(w, depth, whole)) return {};
  return whole;
}

// The child of node w with the greatest byte below `byte`, and `byte` set to its byte; 0 when
// there is none. Nothing is collected or sorted: a floor query takes one child at a time.
u64 Tree::child_below(u64 w, int& byte) const {
  if (tag_of(w) == kN256) {
    for (int b = byte - 1; b >= 0; --b)
      if (u64 c = child_of(load8(&node<N256>(w)->child[b]))) {
        byte = b;
        return c;
      }
    return 0;
  }
  if (tag_of(w) == kN48) {
    const N48* n = node<N48>(w);
    for (int b = byte - 1; b >= 0; --b) {
      unsigned i = std::atomic_ref<const std::uint8_t>(n->slot[b]).load(std::memory_order_acquire);
      if (i == 0 || i > 48) continue;
      if (u64 c = load8(&n->child[i - 1]); child_of(c) && byte_of(c) == b) {
        byte = b;
        return child_of(c);
      }
    }
    return 0;
  }
  const u64* words = tag_of(w) == kN4 ? node<N4>(w)->child : node<N16>(w)->child;
  const int n = tag_of(w) == kN4 ? 4 : 16;
  int best = -1;
  u64 found = 0;
  for (int i = 0; i < n; ++i)
    if (u64 c = load8(&words[i]); child_of(c) && byte_of(c) < byte && byte_of(c) > best) {
      best = byte_of(c);
      found = child_of(c);
    }
  if (found) byte = best;
  return found;
}

// ---- writes ---------------------------------------------------------------------------

}  // namespace dptree::baselines::roart
