// The DPTree family's option table, described for `dptree bench --help-options`, and the
// checks both DPTree families make of the merge settings they share.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dptree/registry.h"

namespace dptree {

std::vector<OptionDoc> dptree_option_docs();

// R, FR, CT (§2.3), the Bloom filter's error rate, the log page size and the merge floor.
struct MergeSettings {
  double merge_ratio, fill_rate, consolidate_threshold, bloom_error_rate;
  std::size_t log_page_size, min_merge_records;
};
// Throws Error(invalid_argument) naming `family`'s option and its range for the first bad one.
void validate_merge_settings(const std::string& family, const MergeSettings& m);

}  // namespace dptree
