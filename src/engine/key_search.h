// A static search tree over a sorted array of keys (the base tree's DRAM inner index, §2.2:
// the leaves' max keys). A binary search over 50,000 leaves makes 16 dependent loads, most of
// them on different cache lines and about half of them mispredicted branches. Here the array
// is read in blocks of eight keys (one line) and above it sit levels of one-line nodes, each
// key the last of a block below: six lines for 50,000 leaves, the top levels hot in the cache,
// and a scan inside each line that stops at the first key not below the one sought.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace dptree::detail {

class KeySearch {
 public:
  static constexpr std::size_t kFan = 8;  // keys of a node: one 64-byte line

  // A copy would search the original's keys; a move keeps them, as a vector's move keeps its
  // elements where they are.
  KeySearch() = default;
  KeySearch(const KeySearch&) = delete;
  KeySearch& operator=(const KeySearch&) = delete;
  KeySearch(KeySearch&&) = default;
  KeySearch& operator=(KeySearch&&) = default;

  // Builds the levels over `keys` (non-decreasing), which must neither move nor change until
  // the next build.
  void build(std::span<const std::uint64_t> keys) {
    keys_ = keys;
    levels_.clear();
    store_.clear();
    std::vector<std::size_t> sizes;
    std::size_t below = keys.size();  // entries of the level below
    while (below > kFan) {
      below = (below + kFan - 1) / kFan;
      sizes.push_back(round_up(below));
    }
    std::size_t total = 0;
    for (std::size_t s : sizes) total += s;
    store_.assign(total + kFan, kInf);  // + kFan: room to align the first node to a line
    std::uint64_t* p = aligned(store_.data());
    // Level 0 sits on `keys`; level l + 1's entry j is the last key of level l's block j, and
    // infinite for the last block, so that a key above them all goes down the last path and
    // no count runs past its node.
    std::span<const std::uint64_t> prev = keys;
    std::size_t used = keys.size();  // entries of `prev` that are not padding
    for (std::size_t s : sizes) {
      std::span<std::uint64_t> cur(p, s);
      const std::size_t blocks = (used + kFan - 1) / kFan;
      for (std::size_t j = 0; j + 1 < blocks; ++j) cur[j] = prev[j * kFan + kFan - 1];
      levels_.push_back(cur);
      prev = cur;
      used = blocks;
      p += s;
    }
    std::reverse(levels_.begin(), levels_.end());  // the root first
  }

  // The index of the first key >= k (std::lower_bound's), keys.size() if none. `with` is an
  // array indexed like the keys: the line of the found block in it is requested together
  // with the block's own keys, so the caller's next read does not wait for a second miss.
  std::size_t find(std::uint64_t k, const std::uint64_t* with = nullptr) const {
    std::size_t b = 0;  // block of the level being searched
    for (std::span<const std::uint64_t> lv : levels_) b = b * kFan + count_below(&lv[b * kFan], k);
    const std::size_t first = b * kFan;
    const std::size_t n = std::min(kFan, keys_.size() - first);
    if (with && n != 0) {  // n == 0: no keys, and no line to request
      __builtin_prefetch(with + first);
      __builtin_prefetch(with + first + n - 1);
    }
    if (n == kFan) return first + count_below(&keys_[first], k);
    std::size_t i = first;
    while (i < first + n && keys_[i] < k) ++i;
    return i;
  }

  std::size_t dram_bytes() const { return 8 * store_.capacity(); }

 private:
  static constexpr std::uint64_t kInf = std::numeric_limits<std::uint64_t>::max();

  static std::size_t round_up(std::size_t n) { return (n + kFan - 1) / kFan * kFan; }
  static std::uint64_t* aligned(std::uint64_t* p) {
    auto a = (reinterpret_cast<std::uintptr_t>(p) + 63) & ~std::uintptr_t{63};
    return reinterpret_cast<std::uint64_t*>(a);
  }
  // Keys of the node below k: the node is sorted, so this is the position of the first >= k.
  // A scan that stops there, with branches: a branch-free count made the next level's address
  // wait for the whole line, where the core follows a predicted exit to the next level (and
  // the next lookup) while the line is in flight; lookups ran up to 1.7x faster at 10M keys.
  static std::size_t count_below(const std::uint64_t* node, std::uint64_t k) {
    for (std::size_t i = 0; i < kFan; ++i)
      if (node[i] >= k) return i;
    return kFan;
  }

  std::span<const std::uint64_t> keys_;
  std::vector<std::span<const std::uint64_t>> levels_;
  std::vector<std::uint64_t> store_;
};

}  // namespace dptree::detail
