// What a merge wrote, for phase 4 (§2.3: before the flip the merge writes back what it changed
// of version nv). Per leaf the merge touched: whether it is new (its crash-consistent metadata
// and occupied slots are all written back) or which of its slots it wrote.
//
// Flat: an open-addressing table of the leaves and one array of slot bitmaps, so a range of
// any size makes a handful of heap blocks. A hash-map node and a slot vector per leaf made
// two small blocks per leaf; freed together after the flush, they waited in glibc's fast bins
// until the next large request consolidated them all, 15-22 ms inside one step of a merge at
// 2^25 records (docs/cdptree.md, "A merge in steps"). The table is written here rather than
// taken from a library so that the engine's static library needs no further package.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dptree::detail {

class DirtyLeaves {
 public:
  using u64 = std::uint64_t;

  // The leaves' slot count (LeafLayout::cap); set before the first wrote(), and not changed
  // while leaves are recorded.
  void set_slots_per_leaf(std::size_t cap);
  // Room for `leaves` leaves without growing.
  void reserve(std::size_t leaves);

  // Version nv's metadata of `leaf` was written (copied from cv), with or without slots.
  void touched(u64 leaf);
  // `leaf` is new in this merge.
  void created(u64 leaf);
  // The merge wrote these slots of `leaf` (any order, repeats allowed).
  void wrote(u64 leaf, std::span<const std::uint16_t> slots);

  bool contains(u64 leaf) const { return find(leaf) != kNone; }
  bool is_new(u64 leaf) const;
  // The slots written in `leaf`, in increasing order, into `out` (emptied first).
  void written(u64 leaf, std::vector<std::uint16_t>& out) const;
  std::size_t size() const { return leaves_.size(); }
  // f(leaf, is_new) for every recorded leaf, in the order first recorded.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < leaves_.size(); ++i) f(leaves_[i], is_new_[i] != 0);
  }
  // Empties the record and returns its memory.
  void release();
  // The bytes its blocks hold (capacities, not sizes).
  std::size_t heap_bytes() const;

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  std::uint32_t find(u64 leaf) const;
  std::uint32_t find_or_add(u64 leaf);
  void grow();
  std::size_t home(u64 leaf) const;

  std::size_t words_ = 0;             // bitmap words per leaf
  std::vector<std::uint32_t> table_;  // record index + 1 (0: empty); size a power of two
  std::vector<u64> leaves_;           // record -> leaf
  std::vector<std::uint8_t> is_new_;  // record -> created in this merge
  std::vector<u64> bits_;             // record i's written slots: words [i * words_, +words_)
};

}  // namespace dptree::detail
