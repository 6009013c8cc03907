// The calling thread's DPTreePhase and kept-split count (phase.h): set by the merge (merge.cc)
// and by DPTree's own operations, read by the crash tests (dptree/testing/phases.h).
#include "engine/phase.h"

#include <cstddef>
#include <utility>

#include "dptree/dptree.h"
#include "dptree/testing/phases.h"

namespace dptree {

namespace {
thread_local DPTreePhase g_phase = DPTreePhase::idle;
thread_local std::size_t g_kept_splits = 0;
}  // namespace

void detail::note_kept_split() {
  ++g_kept_splits;
}
detail::KeptSplitScope::KeptSplitScope() : saved_(std::exchange(g_kept_splits, 0)) {}
detail::KeptSplitScope::~KeptSplitScope() {
  g_kept_splits = saved_;
}
std::size_t dptree_merge_kept_splits() {
  return g_kept_splits;
}

DPTreePhase detail::exchange_phase(DPTreePhase p) {
  return std::exchange(g_phase, p);
}

DPTreePhase dptree_current_phase() {
  return g_phase;
}

}  // namespace dptree
