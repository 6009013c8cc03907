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

// An Index named Derived::kName whose upsert, insert and update are each one call of
// Derived's put(k, v, may_insert, may_update), which returns whether it changed anything.
template <class Derived>
class PutIndex : public Index {
 public:
  std::string name() const override { return Derived::kName; }
  void upsert(Key k, Value v) override { self().put(k, v, true, true); }
  bool insert(Key k, Value v) override { return self().put(k, v, true, false); }
  bool update(Key k, Value v) override { return self().put(k, v, false, true); }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

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
