// CAWBT (Lee, Lee, Won, IEICE 2019): see tree.h and docs/indexes.md.
#pragma once

namespace dptree {
// Registers "cawbt" with the index registry (called from src/builtin_indexes.cc).
void register_cawbt_index();
}  // namespace dptree
