// Helpers of the allocator's tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>

#include "dptree/error.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"

namespace dptree::pm {

// A root table of `words` zeroed 8-byte slots in one block, persisted and activated into the
// pool's root word, so that a block activated into one of its slots is reachable (and recovery
// keeps it).
inline std::uint64_t* make_root_table(Pool& pool, std::size_t words) {
  auto& a = pool.allocator();
  const std::uint64_t root = a.reserve(words * 8);
  std::memset(pool.at(root), 0, words * 8);
  persist(pool.at(root), words * 8);
  a.activate(pool.root_word(), root);
  return pool.at<std::uint64_t>(root);
}

// A reserved block of `bytes`, or nothing when the pool is full (any other error is thrown).
inline std::optional<std::uint64_t> reserve_unless_full(Allocator& a, std::size_t bytes) {
  try {
    return a.reserve(bytes);
  } catch (const Error& e) {
    if (e.code() != Errc::pool_full) throw;
    return std::nullopt;
  }
}

}  // namespace dptree::pm
