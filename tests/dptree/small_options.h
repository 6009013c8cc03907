// Small DPTree options for tests: tiny leaves and 1 KiB log pages, so merges, splits and
// consolidations happen after a few hundred writes.
#pragma once

#include <cstddef>

#include "dptree/dptree_options.h"

namespace dptree {

inline DPTreeOptions small_options(std::size_t leaf_capacity = 8, double merge_ratio = 0.3,
                                   std::size_t min_merge_records = 12) {
  DPTreeOptions o;
  o.leaf_capacity = leaf_capacity;
  o.merge_ratio = merge_ratio;
  o.min_merge_records = min_merge_records;
  o.log_page_size = 1024;
  return o;
}

}  // namespace dptree
