// The index a pool holds, found through the registry, opened (and so recovered) and checked:
// what `dptree check` reports, callable on any pool (a test's own, an index registered by its
// user). Every persistent index's factory, in either key form and in registration order, is
// asked in turn: it opens the pool if it holds that index's root and refuses another's with
// Error(wrong_index), so the first that accepts the pool names its index.
#pragma once

#include <string>

#include "dptree/index.h"

namespace dptree {

namespace pm {
class Pool;
}

struct PoolCheck {
  std::string index;     // the registry's name: "dptree", "fastfair", ...
  bool strings = false;  // the string form (IndexInfo::create_string) holds the pool
  CheckReport report;    // the index's check()
  IndexStats stats;      // its stats() after recovery
};

// Recovers and checks the index in `pool`. Throws Error(wrong_index) when the pool holds no
// index (an empty root word) or none of the registry's, and whatever the index's open throws
// for a damaged pool (Error(corrupt) naming the index and the problem).
PoolCheck check_pool(pm::Pool& pool);

}  // namespace dptree
