// FAST_FAIR's lock-free passes over a node's entries (tree.h), written against their loads:
// the tree passes 8-byte acquire loads, and a test passes loads that rewrite an entry between
// two of them, as a concurrent shift can (FAST_FAIR §5: searches take no lock).
#pragma once

#include <cstddef>
#include <cstdint>

#include "baselines/fastfair/layout.h"

namespace dptree::baselines::fastfair {

enum class Slot { end, skip, ok };

// One entry as a pair that was in the node at one instant: value, key, value again (every
// rewrite stores hole, key, value, so equal values bracket a key of that same write).
template <class Load>
Slot read_entry(const Entry& e, Entry& out, Load&& load) {
  for (;;) {
    const Value v1 = load(&e.val);
    if (v1 == kEnd) return Slot::end;
    if (v1 == kHole) return Slot::skip;
    const Key k = load(&e.key);
    if (load(&e.val) != v1) continue;  // rewritten meanwhile
    out = {k, v1};
    return Slot::ok;
  }
}

// The quick passes load each entry's value and then its key, once: two loads and two compares
// an entry where read_entry() takes three loads and four compares, and the entry scans were
// 60% of an insert's instructions and most of a lookup's (callgrind). A pair read so may be
// torn by a concurrent shift (a value of one rewrite, the key of a later one), so each pass
// checks what it takes from such a pair, and gives up (false / 0) on a hole, which the
// whole-entry scans step over. The live keys of a node are sorted at every instant (a shift to
// the right copies each key one slot up, then writes the new one between its neighbours), so
// a key read above k still shows that k lies to the left of it. The last slot of every node
// holds kEnd for good (nothing stores anything else there, and the open checks it), so the
// passes stop without a bound check.

// A leaf's entry for k: the pass stops at the first key at or above k (*reached) and reads
// that entry whole; equal to k, its value is the answer. False: search with read_entry().
template <class Load>
bool quick_find(const Entry* e, Key k, Value& found, bool& has, bool& reached, Load&& load) {
  for (std::size_t i = 0;; ++i) {
    const Value v = load(&e[i].val);
    if (v >= kHole) return v == kEnd;
    const Key key = load(&e[i].key);
    if (key < k) continue;
    if (key == k) {
      Entry x;
      if (read_entry(e[i], x, load) != Slot::ok || x.key != k) return false;
      found = x.val;
      has = true;
    }
    reached = true;
    return true;
  }
}

// The child of an inner node whose range holds k, from `leftmost` and the entries. A torn pair
// names a child of this node all the same (every value an inner entry held is one, and no node
// is freed), perhaps one right of k's; the child's low key (`low_key(c)`, in the header line
// the descent reads next) shows which: the child is taken only when its low key is at or
// below k, and moving right from it then finds k's node. *reached: an entry above k was seen.
// 0: search with read_entry().
template <class Load, class LowKey>
std::uint64_t quick_child(const Entry* e, std::uint64_t leftmost, Key k, bool& reached, Load&& load,
                          LowKey&& low_key) {
  std::uint64_t c = leftmost;
  for (std::size_t i = 0;; ++i) {
    const Value v = load(&e[i].val);
    if (v >= kHole) {
      if (v == kHole) return 0;
      break;
    }
    if (load(&e[i].key) > k) {
      reached = true;
      break;
    }
    c = v;
  }
  return low_key(c) <= k ? c : 0;
}

}  // namespace dptree::baselines::fastfair
