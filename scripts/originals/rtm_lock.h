// Force-included into the original LB+-Tree (scripts/originals/compare): its hardware
// transactions become sections under one spin lock. On the VMs here RTM aborts forever once
// the tree outgrows the cache (no fallback path exists in its code); at one thread the lock is
// uncontended: one exchange and one store per section.
#pragma once
#include <immintrin.h>

#include <atomic>

inline std::atomic<int> g_rtm_standin{0};
inline unsigned rtm_standin_begin() {
  while (g_rtm_standin.exchange(1, std::memory_order_acquire)) _mm_pause();
  return _XBEGIN_STARTED;
}
inline void rtm_standin_end() {
  g_rtm_standin.store(0, std::memory_order_release);
}
#undef _xbegin
#undef _xend
#undef _xabort
#define _xbegin() rtm_standin_begin()
#define _xend() rtm_standin_end()
#define _xabort(code) rtm_standin_end()
