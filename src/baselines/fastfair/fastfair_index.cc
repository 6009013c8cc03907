// FAST_FAIR's options, its factory and its registration as `fastfair`.
#include <memory>

#include "baselines/fastfair/tree.h"
#include "baselines/peers.h"
#include "registry/index_table.h"
#include "registry/option_table.h"

namespace dptree::baselines {
namespace {

struct FastFairOptions {
  std::size_t node_bytes = 512;
};

const option_values::OptionTable<FastFairOptions>& fastfair_options() {
  static const auto t =
      option_values::OptionTable<FastFairOptions>("fastfair")
          .whole_in(
              "node_bytes", &FastFairOptions::node_bytes, {128, 4096, true},
              "bytes per node (a 32-byte header, then 16-byte entries); stored in the pool, which "
              "keeps its own");
  return t;
}

}  // namespace

std::unique_ptr<Index> make_fastfair(const IndexConfig& cfg) {
  pm::Pool& pool = require_pool(cfg, "fastfair");
  const auto o = fastfair_options().parse(cfg.options);
  return std::make_unique<fastfair::FastFair>(pool, o.node_bytes,
                                              cfg.options.contains("node_bytes"), cfg.threads != 1);
}

}  // namespace dptree::baselines

namespace dptree {

void register_fastfair_index() {
  IndexInfo info{"fastfair",
                 "FAST_FAIR (FAST'18): sorted PM B+-tree, failure-atomic shift and in-place "
                 "rebalance, instant recovery; assumes 8-byte atomic stores and in-order "
                 "persistence within a cache line; values up to 2^64-3; concurrent: lock-free "
                 "search, per-node write locks, 8-byte in-place update (DPTree §4.4)",
                 true,
                 true,
                 baselines::make_fastfair,
                 baselines::fastfair_options().docs(),
                 {},
                 TestPlan{.fuzz = TestPlan::Fuzz{{{"node_bytes", "256"}}},
                          .kill = TestPlan::Kill{2, {{"node_bytes", "256"}}}}};
  info.display_name = "FAST_FAIR";
  add_builtin_index(std::move(info));
}

}  // namespace dptree
