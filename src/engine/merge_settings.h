// The merge settings both DPTree families take (R, FR, CT, the Bloom filter's error rate, the
// log page size and the merge floor): their check and their entries in a family's option table,
// so that DPTree and the concurrent DPTree describe and refuse them alike.
#pragma once

#include <cstddef>
#include <string>

#include "dptree/dptree_options.h"
#include "pm/named.h"
#include "registry/option_table.h"

namespace dptree {

// Every split mode's name (DPTree takes them all, cdptree rebuild and thirds).
inline constexpr Named<SplitMode> kSplitNames[] = {{SplitMode::keep_last, "keep_last"},
                                                   {SplitMode::rebuild, "rebuild"},
                                                   {SplitMode::thirds, "thirds"}};

// R, FR, CT (§2.3), the Bloom filter's error rate, the log page size and the merge floor.
struct MergeSettings {
  double merge_ratio, fill_rate, consolidate_threshold, bloom_error_rate;
  std::size_t log_page_size, min_merge_records;
};
// Throws Error(invalid_argument) naming `family`'s option and its range for the first bad one.
void validate_merge_settings(const std::string& family, const MergeSettings& m);

// The merge settings as entries of family O's option table, with the ranges that
// validate_merge_settings accepts: `buffer` names where writes gather before a merge and
// `zero` what min_merge_records=0 stands for; `ratio_note` is added to merge_ratio's text.
template <class O>
void add_merge_options(option_values::OptionTable<O>& t, const std::string& buffer,
                       const std::string& zero, const std::string& ratio_note = "") {
  t.number("merge_ratio", &O::merge_ratio, "(0, 1)",
           "R: merge when " + buffer + " holds R x the base's records (§2)" + ratio_note)
      .number("fill_rate", &O::fill_rate, "(0.5, 1]",
              "FR: occupancy of the leaves a split creates (§2.3)")
      .number("consolidate_threshold", &O::consolidate_threshold, "(0, 0.5]",
              "CT: leaves below it are consolidated with a neighbour (§2.3)")
      .whole("log_page_size", &O::log_page_size, "1 KiB..64 MiB, a multiple of 1 KiB",
             "bytes per PM log page (§2.1)")
      .number("bloom_error_rate", &O::bloom_error_rate, "(0, 1)",
              "false-positive rate of each Bloom filter of " + buffer + " (§2)")
      .whole("min_merge_records", &O::min_merge_records, "0..2^30",
             "no merge below this many records in " + buffer + " (0: " + zero + ")");
}

}  // namespace dptree
