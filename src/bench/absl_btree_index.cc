// `absl-btree`: absl::btree_map in DRAM, the benchmark's yardstick. A well-kept B-tree
// library that anyone can build, so every figure the benchmark reports can be read as a ratio
// to it, whatever the load of the machine that ran it. Single-threaded, no persistence.
#include <absl/container/btree_map.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "bench/reference_indexes.h"
#include "btree/map_index.h"
#include "dptree/error.h"
#include "dptree/registry.h"
#include "registry/option_values.h"

namespace dptree::bench {

namespace {

void refuse_options(const IndexConfig& cfg) {
  option_values::refuse_options("absl-btree", cfg.options);
}

}  // namespace

void register_reference_indexes() {
  static std::once_flag once;
  std::call_once(once, [] {
    IndexInfo info{"absl-btree",
                   "absl::btree_map in DRAM, single-threaded; the yardstick every ratio is "
                   "read against, no persistence; takes string keys too",
                   false, false, [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
                     refuse_options(cfg);
                     // 16-byte pairs in 256-byte nodes about 70% full after random inserts.
                     return std::make_unique<btree::MapIndex<absl::btree_map<Key, Value>>>(
                         "absl-btree", 16 / 0.7);
                   }};
    info.create_string = [](const IndexConfig& cfg) -> std::unique_ptr<StringIndex> {
      refuse_options(cfg);
      // 40-byte pairs (a std::string and a value) in nodes about 70% full.
      return std::make_unique<
          btree::MapIndex<absl::btree_map<std::string, Value, std::less<>>, StringIndex>>(
          "absl-btree", 40 / 0.7);
    };
    info.display_name = "absl::btree_map";
    register_index(std::move(info));
  });
}

}  // namespace dptree::bench
