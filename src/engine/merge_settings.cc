// The check of the merge settings both DPTree families take (merge_settings.h).
#include "engine/merge_settings.h"

#include <string>

#include "dptree/dptree_options.h"
#include "dptree/error.h"
#include "format/verify.h"
#include "registry/option_values.h"

namespace dptree {

// Here, below both trees' options, since both name their split mode.
const char* to_string(SplitMode m) {
  return name_of(kSplitNames, m);
}

using detail::log_page_size_ok;

void validate_merge_settings(const std::string& family, const MergeSettings& m) {
  auto bad = [&](const std::string& what) {
    throw Error(Errc::invalid_argument, family + " option " + what);
  };
  if (!(m.merge_ratio > 0 && m.merge_ratio < 1))
    bad("merge_ratio (R)=" + option_values::shown(m.merge_ratio) +
        " is out of range: use a value in (0, 1)");
  if (!(m.fill_rate > 0.5 && m.fill_rate <= 1))
    bad("fill_rate (FR)=" + option_values::shown(m.fill_rate) +
        " is out of range: use a value in (0.5, 1]");
  if (!(m.consolidate_threshold > 0 && m.consolidate_threshold <= 0.5))
    bad("consolidate_threshold (CT)=" + option_values::shown(m.consolidate_threshold) +
        " is out of range: use a value in (0, 0.5]");
  if (!log_page_size_ok(m.log_page_size))
    bad("log_page_size=" + std::to_string(m.log_page_size) +
        " is out of range: use a multiple of 1024 from 1024 to 64 MiB");
  if (m.min_merge_records > kMaxMergeRecords)
    bad("min_merge_records=" + std::to_string(m.min_merge_records) +
        " is out of range: use 0..2^30 (it sizes the buffer's Bloom filter)");
  if (!(m.bloom_error_rate > 0 && m.bloom_error_rate < 1))
    bad("bloom_error_rate=" + option_values::shown(m.bloom_error_rate) +
        " is out of range: use a value in (0, 1)");
}

}  // namespace dptree
