// ROART (Ma et al., "ROART: Range-query Optimized Persistent ART", FAST 2021): see tree.h,
// layout.h and docs/indexes.md.
#pragma once

namespace dptree {
// Registers "roart", with its integer and string forms (called from src/builtin_indexes.cc).
void register_roart_index();
// What the calling thread's ROART operation is writing now, for crash tests to name their
// captures (phase.h lists the names).
const char* roart_current_phase();
}  // namespace dptree
