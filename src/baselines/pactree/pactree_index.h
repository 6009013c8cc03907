// PACTree (Kim et al., "PACTree: A High Performance Persistent Range Index Using PAC
// Guidelines", SOSP 2021): see pactree.h, layout.h and docs/indexes.md.
#pragma once

namespace dptree {
// Registers "pactree", with its integer and string forms (called from builtin_indexes.cc).
void register_pactree_index();
// What the calling thread's PACTree operation is writing now, for crash tests.
const char* pactree_current_phase();
}  // namespace dptree
