// Small helpers shared by the peer indexes.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/registry.h"

namespace dptree::baselines {

// An 8-byte store the compiler may not reorder with the stores around it: FAST's in-line
// ordering and the commit words rely on program order reaching the cache line.
inline void store8(std::uint64_t* p, std::uint64_t v) {
  pm::store_release(p, v);
}

// The matching 8-byte load, for words another thread may be storing to (lock-free readers).
inline std::uint64_t load8(const std::uint64_t* p) {
  return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(p))
      .load(std::memory_order_acquire);
}

// The pool's root word must own the block it names (PM is untrusted: checked before the
// root is read). Returns the root block's offset; throws Error(corrupt) naming `index`.
inline std::uint64_t owned_root(const pm::Pool& p, const std::string& index) {
  const auto rw = *p.root_word();
  if (p.allocator().owner_of(rw) != p.offset_of(p.root_word()))
    throw Error(Errc::corrupt, "pool '" + p.name() + "': " + index + " root at offset " +
                                   std::to_string(rw) +
                                   " is not a live block owned by the root word: the pool is "
                                   "damaged; restore it from a copy");
  return rw;
}

}  // namespace dptree::baselines
