// uTree (Chen et al., VLDB 2020): see utree.cc and docs/indexes.md.
#pragma once

namespace dptree {
// Registers "utree" with the index registry (called from src/builtin_indexes.cc).
void register_utree_index();
}  // namespace dptree
