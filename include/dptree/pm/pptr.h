// Persistent pointers are offsets from the pool base, never raw addresses, so a pool maps
// anywhere and a crash image opens as a pool (docs/pm-layer.md). 0 is null: the pool header lives
// at offset 0, so no block ever has offset 0.
#pragma once

#include <cstdint>

namespace dptree::pm {

template <class T>
struct PPtr {
  std::uint64_t off = 0;

  explicit operator bool() const { return off != 0; }
  friend bool operator==(PPtr a, PPtr b) { return a.off == b.off; }
  // The persistent word holding the offset: the `dest` of Allocator::activate / free.
  std::uint64_t* word() { return &off; }
};
static_assert(sizeof(PPtr<int>) == 8);

}  // namespace dptree::pm
