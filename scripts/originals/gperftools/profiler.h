// Stands in for gperftools' profiler header, which the original uTree's utree.h includes
// (scripts/originals/compare): nothing in its tree calls the profiler, so the calls are no-ops.
#pragma once
inline int ProfilerStart(const char*) {
  return 0;
}
inline void ProfilerStop() {}
