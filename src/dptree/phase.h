// The DPTreePhase of the calling thread (dptree.h), set for a scope; crash tests read it to
// count captures per merge phase. Thread-local, so merge workers each report their own.
#pragma once

#include "dptree/dptree.h"

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

}  // namespace dptree::detail
