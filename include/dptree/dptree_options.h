// DPTree options with the paper's §4.2 defaults (leaf 256 entries, R = 0.1, FR = 0.7,
// CT = 0.34, log page 64 KiB) and the §4.4 bloom filter error rate (0.03).
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace dptree {

struct DPTreeOptions {
  std::size_t leaf_capacity = 256;        // key-value slots per base-tree leaf (§2.2)
  double merge_ratio = 0.1;               // R: merge when buffer > R * base (§2)
  double fill_rate = 0.7;                 // FR: occupancy of leaves created by a split (§2.3)
  double consolidate_threshold = 0.34;    // CT: leaves below it are consolidated (§2.3)
  std::size_t log_page_size = 64 * 1024;  // PM log page (§2.1)
  double bloom_error_rate = 0.03;         // bloom filter over buffer keys (§2, §4.4)
  // Floor of the merge trigger while the base tree is small (R * 0 would merge on every
  // write); 0 means leaf_capacity.
  std::size_t min_merge_records = 0;

  // Throws dptree::Error(invalid_argument) naming the bad option and its accepted range.
  void validate() const;
  // Reads the keys above from an IndexConfig option map; unknown keys are refused.
  static DPTreeOptions from_map(const std::map<std::string, std::string>& m);
};

}  // namespace dptree
