// For the allocator's tests: a root table of `words` zeroed 8-byte slots in one block,
// persisted and activated into the pool's root word, so that a block activated into one of its
// slots is reachable (and recovery keeps it).
#pragma once

#include <cstdint>
#include <cstring>

#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"

namespace dptree::pm {

inline std::uint64_t* make_root_table(Pool& pool, std::size_t words) {
  auto& a = pool.allocator();
  const std::uint64_t root = a.reserve(words * 8);
  std::memset(pool.at(root), 0, words * 8);
  persist(pool.at(root), words * 8);
  a.activate(pool.root_word(), root);
  return pool.at<std::uint64_t>(root);
}

}  // namespace dptree::pm
