// 2-Tier-BM's options and its registration as `bm-btree` (the tree: tree.h).
#include "baselines/bmtree/bm_btree.h"

#include <map>
#include <memory>
#include <string>

#include "baselines/bmtree/tree.h"
#include "registry/index_table.h"
#include "registry/option_table.h"

namespace dptree::baselines::bmtree {
namespace {

const option_values::OptionTable<Options>& option_table() {
  static const auto t =
      option_values::OptionTable<Options>("bm-btree")
          .whole_in("dram_pct", &Options::dram_pct, {1, 100},
                    "the share of leaves whose pages fit in DRAM (Figure 11's x-axis)")
          .whole_in("log_pct", &Options::log_pct, {1, 1000},
                    "log capacity, % of the key-value set (16 bytes a record)")
          .whole_in("page_bytes", &Options::page_bytes, {kMinPage, kMaxPage, true},
                    "bytes per page; stored in the pool, which keeps its own")
          .choice("leaf", &Options::leaf, {{"hash", kHashLeaf}, {"sorted", kSortedLeaf}},
                  "leaf layout; stored in the pool, which keeps its own")
          .boolean("mini_pages", &Options::mini_pages,
                   "cache a leaf first as a 16-line mini page (pages of 2 KiB or more)");
  return t;
}

Options parse_options(const std::map<std::string, std::string>& opts) {
  Options o = option_table().parse(opts);
  o.page_given = opts.contains("page_bytes");
  o.leaf_given = opts.contains("leaf");
  return o;
}

}  // namespace
}  // namespace dptree::baselines::bmtree

namespace dptree {

void register_bm_btree_index() {
  add_persistent_index(
      "bm-btree", "2-Tier-BM",
      "2-Tier-BM (DPTree paper §4.3): B+-tree over a DRAM buffer of PM pages with "
      "cache-line-grained loading, mini pages and pointer swizzling (van Renen et al., SIGMOD "
      "2018), physiological redo/undo log on PM, checkpoints when the log fills; "
      "single-threaded",
      false, baselines::bmtree::option_table().docs(),
      // Small pages, little DRAM and a small log: kills and damage land in evictions, steals
      // and checkpoints.
      {.fuzz = TestPlan::Fuzz{{{"page_bytes", "256"}, {"dram_pct", "10"}, {"log_pct", "1"}},
                              512 * 1024},
       .kill = TestPlan::Kill{1, {{"page_bytes", "256"}, {"dram_pct", "1"}, {"log_pct", "1"}}}},
      [](pm::Pool& pool, const IndexConfig& cfg) {
        return std::make_unique<baselines::bmtree::BMBTree>(
            pool, baselines::bmtree::parse_options(cfg.options), cfg.expected_records);
      });
}

}  // namespace dptree
