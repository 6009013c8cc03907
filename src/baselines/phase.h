// What the calling thread's operation on an index is writing, for crash tests to name their
// captures: each index keeps its own name per thread (Tag tells them apart), and a PhaseScope
// names what its scope writes, restoring the previous name at its end.
#pragma once

namespace dptree::baselines {

template <class Tag>
struct PhaseName {
  static inline thread_local const char* current = "idle";
};

template <class Tag>
struct PhaseScope {
  const char* saved;
  explicit PhaseScope(const char* p) : saved(PhaseName<Tag>::current) {
    PhaseName<Tag>::current = p;
  }
  ~PhaseScope() { PhaseName<Tag>::current = saved; }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;
};

}  // namespace dptree::baselines
