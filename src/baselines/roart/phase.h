// The names of what a ROART operation writes: "idle", "alloc", "leaf", "array", "node",
// "fence", "publish", "value", "index", "unlink", "recover".
#pragma once

#include "baselines/phase.h"

namespace dptree::baselines::roart {

struct RoartPhases;
using Phase = baselines::PhaseScope<RoartPhases>;
inline const char* phase_now() {
  return PhaseName<RoartPhases>::current;
}

}  // namespace dptree::baselines::roart
