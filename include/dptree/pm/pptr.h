// Persistent pointers are offsets from the pool base, never raw addresses, so a pool maps
// anywhere and a crash image opens as a pool (docs/pm-layer.md). 0 is null: the pool header lives
// at offset 0, so no block ever has offset 0.
#pragma once

#include <compare>
#include <cstdint>
#include <type_traits>

namespace dptree::pm {

// A typed offset: one 8-byte word in PM, the offset of a T. Pool::get resolves it unchecked (hot
// paths), Pool::resolve after checking bounds and alignment (recovery, check()).
template <class T>
struct PPtr {
  std::uint64_t off = 0;

  constexpr PPtr() = default;
  constexpr explicit PPtr(std::uint64_t o) : off(o) {}
  static constexpr PPtr null() { return PPtr(); }

  constexpr explicit operator bool() const { return off != 0; }
  friend constexpr auto operator<=>(PPtr a, PPtr b) = default;
  // The persistent word holding the offset: the `dest` of Allocator::activate / free.
  std::uint64_t* word() { return &off; }
};
static_assert(sizeof(PPtr<int>) == 8 && alignof(PPtr<int>) == 8);
static_assert(std::is_trivially_copyable_v<PPtr<int>> && std::is_standard_layout_v<PPtr<int>>);

}  // namespace dptree::pm
