// The calling thread's DPTreePhase and kept-split count (phase.h): set by the merge (merge.cc)
// and by DPTree's own operations, read by the crash tests (dptree/testing/phases.h).
#include "engine/phase.h"

#include <atomic>
#include <cstddef>
#include <utility>

#include "dptree/dptree.h"
#include "dptree/testing/phases.h"

namespace dptree {

namespace {
thread_local DPTreePhase g_phase = DPTreePhase::idle;
thread_local std::size_t g_kept_splits = 0;
thread_local std::size_t g_pair_splits = 0;
std::atomic<std::size_t> g_pair_splits_total{0};
}  // namespace

void detail::note_kept_split() {
  ++g_kept_splits;
}
void detail::note_pair_split() {
  ++g_pair_splits;
  g_pair_splits_total.fetch_add(1, std::memory_order_relaxed);
}
detail::KeptSplitScope::KeptSplitScope()
    : saved_(std::exchange(g_kept_splits, 0)), saved_pairs_(std::exchange(g_pair_splits, 0)) {}
detail::KeptSplitScope::~KeptSplitScope() {
  g_kept_splits = saved_;
  g_pair_splits = saved_pairs_;
}
std::size_t dptree_merge_kept_splits() {
  return g_kept_splits;
}
std::size_t dptree_merge_pair_splits() {
  return g_pair_splits;
}
std::size_t dptree_pair_splits_total() {
  return g_pair_splits_total.load(std::memory_order_relaxed);
}

DPTreePhase detail::exchange_phase(DPTreePhase p) {
  return std::exchange(g_phase, p);
}

DPTreePhase dptree_current_phase() {
  return g_phase;
}

}  // namespace dptree
