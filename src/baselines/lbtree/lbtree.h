// LB+-Tree (Liu, Chen, Wang, VLDB 2020): see lbtree.cc and docs/indexes.md.
#pragma once

namespace dptree {
// Registers "lbtree" with the index registry (called from src/builtin_indexes.cc).
void register_lbtree_index();
}  // namespace dptree
