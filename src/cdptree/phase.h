// The phase the calling thread is in inside a CDPTree (cdptree.h), for crash tests.
#pragma once

#include "dptree/cdptree.h"
#include "dptree/testing/phases.h"

namespace dptree::cdp {

CDPTreePhase& current_phase();

struct PhaseScope {
  CDPTreePhase saved;
  explicit PhaseScope(CDPTreePhase p) : saved(current_phase()) { current_phase() = p; }
  ~PhaseScope() { current_phase() = saved; }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;
};

}  // namespace dptree::cdp
