// The words an open reads of each leaf in the current version (next link, max key, restart
// counter), kept in DRAM by leaf offset. The open-time check (validate.cc) reads them while
// its threads check the directory's slots, on a line of the page of the leaf's header that
// the check reads anyway (already faulted in); the walk of the leaf list and the inner index
// (DPTree paper §2.4, Algorithm 4) then read this table instead of the leaves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dptree::detail {

// An open-addressing table with linear probing. Puts of distinct leaves may run on several
// threads at once (a slot is claimed by compare-and-swap of its key); finds run after the puts
// (their threads joined).
class LeafTable {
 public:
  using u64 = std::uint64_t;
  struct Entry {
    u64 leaf, next, max, rc;  // leaf 0: an empty slot (no block is at offset 0)
  };

  explicit LeafTable(std::size_t leaves);  // room for up to `leaves` entries
  ~LeafTable();
  LeafTable(const LeafTable&) = delete;
  LeafTable& operator=(const LeafTable&) = delete;

  // Each leaf is put once (a block has one owner slot); e.leaf != 0.
  void put(const Entry& e);
  // The entry of `leaf`, or null if it was not put.
  const Entry* find(u64 leaf) const;
  // Requests the line find(leaf) reads first.
  void prefetch(u64 leaf) const { __builtin_prefetch(&e_[slot_of(leaf)]); }

 private:
  std::size_t slot_of(u64 leaf) const {
    return static_cast<std::size_t>((leaf >> 6) * 0x9e3779b97f4a7c15ull >> shift_);
  }
  std::size_t mask_ = 0, bytes_ = 0;
  int shift_ = 60;  // 64 - log2 of the slots: the product's top bits pick the slot
  Entry* e_ = nullptr;
};

// The list from `head` through the table's next words, as a walk one link after another
// would find it, or false (`out` then unspecified) when this way cannot prove it: the walk is
// cut at `marks`, leaves of the table believed on the list in list order (sorted by max key),
// and the stretches between them are walked at once, `threads` threads each interleaving
// many, so that their misses overlap instead of coming one after another. False unless every
// stretch reaches the mark it was walked towards (the last: the list's end) through leaves of
// the table, and the list holds at most `limit` leaves. The caller then walks the list itself.
bool walk_in_stretches(const LeafTable& t, std::uint64_t head,
                       const std::vector<std::uint64_t>& marks, std::size_t limit, unsigned threads,
                       std::vector<std::uint64_t>& out);

}  // namespace dptree::detail
