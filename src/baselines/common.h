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

// Reads an unsigned option in [lo, hi]; refuses unknown option names. fptree's one option
// is still read so; every other index parses its options with an OptionTable
// (registry/option_table.h), which also describes them for `dptree bench --help-options`.
inline std::uint64_t option_u64(const IndexConfig& cfg, const std::string& index,
                                const std::string& name, std::uint64_t dflt, std::uint64_t lo,
                                std::uint64_t hi) {
  for (const auto& [k, v] : cfg.options)
    if (k != name)
      throw Error(Errc::invalid_argument,
                  index + ": unknown option '" + k + "': the only option is '" + name + "'");
  auto it = cfg.options.find(name);
  if (it == cfg.options.end()) return dflt;
  std::uint64_t x = 0;
  try {
    std::size_t used = 0;
    x = std::stoull(it->second, &used);
    if (used != it->second.size()) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw Error(Errc::invalid_argument, index + ": option " + name + "='" + it->second +
                                            "' is not a number: pass an integer in [" +
                                            std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  if (x < lo || x > hi)
    throw Error(Errc::invalid_argument, index + ": option " + name + "=" + it->second +
                                            " is out of range: pass an integer in [" +
                                            std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
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
