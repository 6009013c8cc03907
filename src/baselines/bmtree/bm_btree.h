// 2-Tier-BM (the DPTree paper's buffer-manager peer): see tree.h and docs/bm-btree.md.
#pragma once

namespace dptree {
// Registers "bm-btree" with the index registry (called from src/builtin_indexes.cc).
void register_bm_btree_index();
}  // namespace dptree
