// Names what the calling thread's ROART operation is writing (crash tests name their
// captures by it): "idle", "alloc", "leaf", "array", "node", "fence", "publish", "value",
// "index", "unlink", "recover".
#pragma once

namespace dptree::baselines::roart {

inline thread_local const char* g_phase = "idle";

// Names what the scope writes; restores the previous name at its end.
struct Phase {
  const char* saved;
  explicit Phase(const char* p) : saved(g_phase) { g_phase = p; }
  ~Phase() { g_phase = saved; }
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;
};

}  // namespace dptree::baselines::roart
