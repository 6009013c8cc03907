// A newer sorted run of (key, value) laid over an older one: the concurrent DPTree's Front
// over its Middle when a merge is retried or recovered (§3.2), for both key forms.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace dptree::detail {

// One sorted run of both: where both hold a key, `newer`'s entry, whatever its value (a
// tombstone included, so its removes cancel the older run's inserts).
template <class Pair>
std::vector<Pair> overlay_sorted(std::vector<Pair> older, const std::vector<Pair>& newer) {
  if (newer.empty()) return older;
  std::vector<Pair> both;
  both.reserve(older.size() + newer.size());
  std::size_t i = 0, j = 0;
  while (i < older.size() || j < newer.size()) {
    if (j == newer.size() || (i < older.size() && older[i].first < newer[j].first)) {
      both.push_back(std::move(older[i++]));
    } else {
      if (i < older.size() && older[i].first == newer[j].first) ++i;  // the newer one wins
      both.push_back(newer[j++]);
    }
  }
  return both;
}

}  // namespace dptree::detail
