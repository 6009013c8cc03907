// `absl-btree`: absl::btree_map in DRAM, the benchmark's yardstick. A well-kept B-tree
// library that anyone can build, so every figure the benchmark reports can be read as a ratio
// to it, whatever the load of the machine that ran it. Single-threaded, no persistence.
#include <absl/container/btree_map.h>

#include <memory>
#include <mutex>

#include "bench/reference_indexes.h"
#include "btree/map_index.h"
#include "dptree/error.h"
#include "dptree/registry.h"

namespace dptree::bench {

void register_reference_indexes() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_index({"absl-btree",
                    "absl::btree_map in DRAM, single-threaded; the yardstick every ratio is "
                    "read against, no persistence",
                    false, false, [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
                      if (!cfg.options.empty())
                        throw Error(Errc::invalid_argument,
                                    "absl-btree takes no index options (got '" +
                                        cfg.options.begin()->first + "'); remove the option");
                      // 16-byte pairs in 256-byte nodes about 70% full after random inserts.
                      return std::make_unique<btree::MapIndex<absl::btree_map<Key, Value>>>(
                          "absl-btree", 16 / 0.7);
                    }});
  });
}

}  // namespace dptree::bench
