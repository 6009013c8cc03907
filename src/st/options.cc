// DPTreeOptions: validation and parsing from an IndexConfig option map (dptree_options.h).
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "dptree/dptree_options.h"
#include "dptree/error.h"
#include "engine/merge_settings.h"
#include "format/verify.h"
#include "pm/named.h"
#include "registry/option_table.h"
#include "registry/option_values.h"
#include "st/options.h"

namespace dptree {

using detail::entry_width_ok;
using detail::kMaxLeafCapacity;
using detail::kMinLeafCapacity;

namespace {
constexpr Named<ProbeMode> kProbes[] = {{ProbeMode::both, "both"},
                                        {ProbeMode::linear, "linear"},
                                        {ProbeMode::fingerprint, "fingerprint"}};
constexpr Named<MergeMode> kMergeModes[] = {{MergeMode::in_place, "in_place"},
                                            {MergeMode::out_of_place, "out_of_place"}};
}  // namespace

const char* to_string(ProbeMode p) {
  return name_of(kProbes, p);
}

const char* to_string(MergeMode m) {
  return name_of(kMergeModes, m);
}

void DPTreeOptions::validate() const {
  auto bad = [](const std::string& what) {
    throw Error(Errc::invalid_argument, "DPTree option " + what);
  };
  if (leaf_capacity < kMinLeafCapacity || leaf_capacity > kMaxLeafCapacity)
    bad("leaf_capacity=" + std::to_string(leaf_capacity) + " is out of range: use 4..4096");
  validate_merge_settings("DPTree", {merge_ratio, fill_rate, consolidate_threshold,
                                     bloom_error_rate, log_page_size, min_merge_records});
  if (key_bytes && !entry_width_ok(key_bytes))
    bad("key_bytes=" + std::to_string(key_bytes) +
        " is out of range: use 8, 16, 24, 32, 40, 48 or 56");
  if (value_bytes && !entry_width_ok(value_bytes))
    bad("value_bytes=" + std::to_string(value_bytes) +
        " is out of range: use 8, 16, 24, 32, 40, 48 or 56");
  if (probe != ProbeMode::both && probe != ProbeMode::linear && probe != ProbeMode::fingerprint)
    bad("probe is not one of both, linear, fingerprint");
  if (merge_mode != MergeMode::in_place && merge_mode != MergeMode::out_of_place)
    bad("merge_mode is not one of in_place, out_of_place");
  if (split != SplitMode::rebuild && split != SplitMode::keep_last && split != SplitMode::thirds)
    bad("split is not one of rebuild, keep_last, thirds");
}

namespace {

const option_values::OptionTable<DPTreeOptions>& table() {
  using O = DPTreeOptions;
  static const auto built = [] {
    option_values::OptionTable<O> t("DPTree");
    t.whole("leaf_capacity", &O::leaf_capacity, "4..4096",
            "entries per base leaf (§2.2); 352 fill an 8 KiB block");
    add_merge_options(t, "the buffer", "leaf_capacity");
    t.choice("probe", &O::probe, kProbes,
             "leaf lookup (Figure 10): hash probe with fingerprints, probe reading keys, or "
             "a scan of all fingerprints")
        .choice("merge_mode", &O::merge_mode, kMergeModes,
                "the §2.3 merge, or one that rewrites the whole base tree (Figure 8d)")
        .choice("split", &O::split, kSplitNames,
                "keep_last: a split leaf keeps its last part; rebuild: Algorithm 2, every entry "
                "into new leaves; thirds: a split leaf and its next leaf become three of "
                "two-thirds")
        .whole("key_bytes", &O::key_bytes, "8..56, a multiple of 8",
               "key field width in PM (0: the type's); the key is its first 8 bytes")
        .whole("value_bytes", &O::value_bytes, "8..56, a multiple of 8",
               "value field width in PM (0: the type's)");
    return t;
  }();
  return built;
}

}  // namespace

DPTreeOptions DPTreeOptions::from_map(const std::map<std::string, std::string>& m) {
  return table().parse(m);
}

std::vector<OptionDoc> dptree_option_docs() {
  return table().docs();
}

}  // namespace dptree
