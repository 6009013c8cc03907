// The DPTreePhase of the calling thread (dptree.h), set for a scope; crash tests read it to
// count captures per merge phase. Thread-local, so merge workers each report their own.
#pragma once

#include <cstddef>

#include "dptree/dptree.h"
#include "dptree/testing/phases.h"

namespace dptree::detail {

// Sets this thread's phase, returning the previous one.
DPTreePhase exchange_phase(DPTreePhase p);

class PhaseScope {
 public:
  explicit PhaseScope(DPTreePhase p) : saved_(exchange_phase(p)) {}
  ~PhaseScope() { exchange_phase(saved_); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  DPTreePhase saved_;
};

// dptree_merge_kept_splits() and dptree_merge_pair_splits() of this thread: counted by the
// merge, zeroed for the scope of one merge and restored after it (a test may run a second
// tree inside a crash capture).
void note_kept_split();
void note_pair_split();
class KeptSplitScope {
 public:
  KeptSplitScope();
  ~KeptSplitScope();
  KeptSplitScope(const KeptSplitScope&) = delete;
  KeptSplitScope& operator=(const KeptSplitScope&) = delete;

 private:
  std::size_t saved_, saved_pairs_;
};

}  // namespace dptree::detail
