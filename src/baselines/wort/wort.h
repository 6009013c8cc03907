// WORT (Lee et al., FAST 2017): see wort.cc and docs/indexes.md.
#pragma once

namespace dptree {
// Registers "wort" with the index registry (called from src/builtin_indexes.cc).
void register_wort_index();
// What the calling thread's WORT operation is writing now, for crash tests to name their
// captures: "idle", "alloc", "leaf", "value", "node", "fence", "publish", "header", "unlink",
// "recover".
const char* wort_current_phase();
}  // namespace dptree
