// The flat record of a merge's writes; see dirty_leaves.h.
#include "engine/dirty_leaves.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace dptree::detail {

void DirtyLeaves::set_slots_per_leaf(std::size_t cap) {
  const std::size_t w = (cap + 63) / 64;
  if (w == words_) return;
  if (!leaves_.empty()) throw std::logic_error("DirtyLeaves: slot count changed mid-merge");
  words_ = w;
}

void DirtyLeaves::reserve(std::size_t leaves) {
  leaves_.reserve(leaves);
  is_new_.reserve(leaves);
  bits_.reserve(leaves * words_);
  std::size_t t = 16;
  while (t < 2 * leaves) t *= 2;  // load at most a half
  if (t > table_.size()) {
    table_.assign(t, 0);
    for (std::size_t i = 0; i < leaves_.size(); ++i) {
      std::size_t s = home(leaves_[i]);
      while (table_[s]) s = (s + 1) & (table_.size() - 1);
      table_[s] = static_cast<std::uint32_t>(i + 1);
    }
  }
}

std::size_t DirtyLeaves::home(u64 leaf) const {
  // Fibonacci hashing: leaf offsets share their low bits (leaves are aligned blocks).
  const int shift = 64 - std::countr_zero(table_.size());
  return static_cast<std::size_t>((leaf * 0x9E3779B97F4A7C15ull) >> shift);
}

std::uint32_t DirtyLeaves::find(u64 leaf) const {
  if (table_.empty()) return kNone;
  for (std::size_t s = home(leaf);; s = (s + 1) & (table_.size() - 1)) {
    const std::uint32_t r = table_[s];
    if (r == 0) return kNone;
    if (leaves_[r - 1] == leaf) return r - 1;
  }
}

void DirtyLeaves::grow() {
  reserve(std::max<std::size_t>(8, 2 * leaves_.size()));
}

std::uint32_t DirtyLeaves::find_or_add(u64 leaf) {
  if (2 * (leaves_.size() + 1) > table_.size()) grow();
  std::size_t s = home(leaf);
  for (; table_[s]; s = (s + 1) & (table_.size() - 1))
    if (leaves_[table_[s] - 1] == leaf) return table_[s] - 1;
  const auto r = static_cast<std::uint32_t>(leaves_.size());
  table_[s] = r + 1;
  leaves_.push_back(leaf);
  is_new_.push_back(0);
  bits_.resize(bits_.size() + words_, 0);
  return r;
}

void DirtyLeaves::touched(u64 leaf) {
  find_or_add(leaf);
}

void DirtyLeaves::created(u64 leaf) {
  is_new_[find_or_add(leaf)] = 1;
}

void DirtyLeaves::wrote(u64 leaf, std::span<const std::uint16_t> slots) {
  const std::uint32_t r = find_or_add(leaf);
  u64* w = bits_.data() + r * words_;
  for (std::uint16_t s : slots) {
    if (s / 64 >= words_) throw std::logic_error("DirtyLeaves: slot beyond the leaf's slots");
    w[s / 64] |= u64{1} << (s % 64);
  }
}

bool DirtyLeaves::is_new(u64 leaf) const {
  const std::uint32_t r = find(leaf);
  return r != kNone && is_new_[r];
}

void DirtyLeaves::written(u64 leaf, std::vector<std::uint16_t>& out) const {
  out.clear();
  const std::uint32_t r = find(leaf);
  if (r == kNone) return;
  const u64* w = bits_.data() + r * words_;
  for (std::size_t i = 0; i < words_; ++i)
    for (u64 b = w[i]; b; b &= b - 1)
      out.push_back(
          static_cast<std::uint16_t>(64 * i + static_cast<std::size_t>(std::countr_zero(b))));
}

// Swapped with empty vectors: `v = {}` picks the initializer-list assignment, which empties
// the vector but keeps its block.
void DirtyLeaves::release() {
  std::vector<std::uint32_t>().swap(table_);
  std::vector<u64>().swap(leaves_);
  std::vector<std::uint8_t>().swap(is_new_);
  std::vector<u64>().swap(bits_);
}

std::size_t DirtyLeaves::heap_bytes() const {
  return 4 * table_.capacity() + 8 * leaves_.capacity() + is_new_.capacity() + 8 * bits_.capacity();
}

}  // namespace dptree::detail
