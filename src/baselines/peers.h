// The DPTree paper's peer indexes (§4), re-implemented from their papers on our PM layer:
// FAST_FAIR (Hwang et al., FAST 2018) and FPTree (Oukid et al., SIGMOD 2016).
#pragma once

#include <memory>

#include "dptree/index.h"
#include "dptree/registry.h"

namespace dptree::baselines {

// Create-or-open on cfg.pool (required). Options: fastfair {"node_bytes"} (power of two,
// 128..4096, default 512); fptree {"leaf_capacity"} (2..56, default 56).
std::unique_ptr<Index> make_fastfair(const IndexConfig& cfg);
std::unique_ptr<Index> make_fptree(const IndexConfig& cfg);

}  // namespace dptree::baselines

namespace dptree {
// Registers `fptree` (called from builtin_indexes.cc; `fastfair` registers itself in
// fastfair/fastfair_index.cc).
void register_paper_peers();
}  // namespace dptree
