// CDPTreeOptions: validation with clear errors, and reading from an option map.
#include <cstdio>
#include <string>

#include "cdptree/options.h"
#include "dptree/cdptree.h"
#include "dptree/error.h"
#include "engine/merge_settings.h"
#include "format/verify.h"
#include "pm/named.h"
#include "registry/option_table.h"
#include "registry/option_values.h"

namespace dptree {

void CDPTreeOptions::validate() const {
  auto bad = [](const std::string& what) {
    throw Error(Errc::invalid_argument, "CDPTree option " + what);
  };
  if (log_partitions < 1 || log_partitions > 4096)
    bad("log_partitions=" + std::to_string(log_partitions) + " is out of range: use 1..4096");
  if (leaf_capacity == 0 && (leaf_bytes < 512 || leaf_bytes > (1u << 20)))
    bad("leaf_bytes=" + std::to_string(leaf_bytes) + " is out of range: use 512..1048576");
  if (leaf_capacity != 0 &&
      (leaf_capacity < detail::kMinLeafCapacity || leaf_capacity > detail::kMaxLeafCapacity))
    bad("leaf_capacity=" + std::to_string(leaf_capacity) +
        " is out of range: use 4..4096, or 0 to derive it from leaf_bytes");
  validate_merge_settings("CDPTree", {merge_ratio, fill_rate, consolidate_threshold,
                                      bloom_error_rate, log_page_size, min_merge_records});
  if (merge_threads > 256)
    bad("merge_threads=" + std::to_string(merge_threads) +
        " is out of range: use 1..256, or 0 for the hardware threads");
  if (recovery_threads > 256)
    bad("recovery_threads=" + std::to_string(recovery_threads) +
        " is out of range: use 1..256, or 0 for the hardware threads");
  if (merge_nice > 19)
    bad("merge_nice=" + std::to_string(merge_nice) +
        " is out of range: use 0..19 (a thread may lower its own priority, not raise it)");
  if (psize < 1) bad("psize=0 is out of range: use at least 1 leaf per merge partition");
  if (merge_steps && background_merge)
    bad("merge_steps=1 runs the merge in the writers: set background_merge=0 with it");
  if (split != SplitMode::rebuild && split != SplitMode::thirds)
    bad(std::string("split=") + to_string(split) + " is not one of rebuild, thirds");
}

namespace {

constexpr Named<SplitMode> kCdpSplits[] = {{SplitMode::rebuild, "rebuild"},
                                           {SplitMode::thirds, "thirds"}};

const option_values::OptionTable<CDPTreeOptions>& table() {
  using O = CDPTreeOptions;
  static const auto built = [] {
    option_values::OptionTable<O> t("CDPTree");
    t.whole("log_partitions", &O::log_partitions, "1..4096", "N hash partitions of the log (§3.1)")
        .whole("leaf_bytes", &O::leaf_bytes, "512..1048576",
               "base leaf size; sets the leaf capacity when leaf_capacity is 0")
        .whole("leaf_capacity", &O::leaf_capacity, "0 or 4..4096",
               "slots per base leaf; 0: the most that fit leaf_bytes");
    add_merge_options(t, "the Front", "two log pages of records per log partition",
                      "; string keys: 0.1 when not set");
    t.choice("split", &O::split, kCdpSplits,
             "rebuild: Algorithm 2, a split leaf's entries into new leaves; thirds: a split leaf "
             "and its next leaf become three of two-thirds");
    t.whole("merge_threads", &O::merge_threads, "0..256",
            "merge workers (Algorithm 9); 0: the hardware threads")
        .whole(
            "recovery_threads", &O::recovery_threads, "0..256",
            "threads of an open: directory checks, leaf reads, log replay; 0: the hardware threads")
        .whole_in("merge_nice", &O::merge_nice, {0, 19},
                  "nice value of the merge workers: above 0, writers preempt a background merge")
        .whole("psize", &O::psize, "1 or more", "PSize: base leaves per merge partition (§3.3)")
        .boolean("background_merge", &O::background_merge,
                 "merge on a background thread (else the writer that fills the Front merges)")
        .boolean("merge_steps", &O::merge_steps,
                 "with background_merge=0: the writers run the merge a partition at a time "
                 "between their writes (integer keys)")
        .boolean("inplace_update", &O::inplace_update,
                 "§3.4: update a key found only in the base tree in place")
        .boolean("inplace_delete", &O::inplace_delete,
                 "§3.4: delete a key found only in the base tree in place");
    return t;
  }();
  return built;
}

}  // namespace

CDPTreeOptions CDPTreeOptions::from_map(const std::map<std::string, std::string>& m) {
  return table().parse(m);
}

std::vector<OptionDoc> cdptree_option_docs() {
  return table().docs();
}

}  // namespace dptree
