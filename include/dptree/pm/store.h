// Stores to PM (docs/pm-layer.md). Every write an index makes to a pool goes through these
// helpers, so that in `sim` mode the crash simulator (sim.h) sees each store and can land a
// cache line as it stood between two of them. In the other modes a helper is the plain store
// plus one predictable branch on a process-wide flag.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>
#include <type_traits>

namespace dptree::pm {

namespace detail {
// True while the process mode is `sim` (set_mode keeps it in step).
inline std::atomic<bool> g_track_stores{false};
// Copy [src, src + len) to dst and record the store with the simulator of the pool holding dst
// (a plain copy when no sim pool holds it). Atomic per aligned 8-byte word.
void sim_store(void* dst, const void* src, std::size_t len);
void sim_fill(void* dst, int byte, std::size_t len);
// Run op(ctx) (an atomic read-modify-write of [dst, dst + len)) and record its result, both
// under the simulator's lock so no flush sees the write unrecorded.
void sim_update(void* dst, std::size_t len, void (*op)(void*), void* ctx);
void sim_note(const void* p, std::size_t len);
void sim_plain_stores(bool begin);
}  // namespace detail

inline bool tracking_stores() {
  return detail::g_track_stores.load(std::memory_order_relaxed);
}

// The value converts to *dst's type, so `store(&word, 0)` needs no cast.
template <class T>
inline void store(T* dst, const std::type_identity_t<T>& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (tracking_stores()) [[unlikely]]
    detail::sim_store(dst, &value, sizeof(T));
  else
    *dst = value;
}

// len may be 0, with src null (an empty vector's data()): nothing is stored.
inline void store_bytes(void* dst, const void* src, std::size_t len) {
  if (len == 0) return;
  if (tracking_stores()) [[unlikely]]
    detail::sim_store(dst, src, len);
  else
    std::memcpy(dst, src, len);
}

inline void fill_bytes(void* dst, int byte, std::size_t len) {
  if (tracking_stores()) [[unlikely]]
    detail::sim_fill(dst, byte, len);
  else
    std::memset(dst, byte, len);
}

// A release store of an aligned word that lock-free readers load concurrently.
namespace detail {
// store_release() in `sim` mode, out of line so that the plain path stays small enough for the
// compiler to inline at every call (with it inline, GCC called store_release() out of line:
// 13% of uTree's inserts, whose array-leaf shifts store every word through it).
template <class T>
[[gnu::noinline]] void tracked_store_release(T* dst, T value) {
  auto op = [&] { std::atomic_ref<T>(*dst).store(value, std::memory_order_release); };
  sim_update(
      dst, sizeof(T), [](void* c) { (*static_cast<decltype(op)*>(c))(); }, &op);
}
}  // namespace detail

template <class T>
inline void store_release(T* dst, std::type_identity_t<T> value) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8);
  if (tracking_stores()) [[unlikely]]
    return detail::tracked_store_release<T>(dst, value);
  std::atomic_ref<T>(*dst).store(value, std::memory_order_release);
}

// An atomic read-modify-write of *dst: `op(std::atomic_ref<T>)` returns what the caller needs
// (a compare-exchange's outcome, a fetch_or's old value).
template <class T, class Op>
inline auto update(T* dst, Op op) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8);
  using R = decltype(op(std::atomic_ref<T>(*dst)));
  if (tracking_stores()) [[unlikely]] {
    if constexpr (std::is_void_v<R>) {
      auto run = [&] { op(std::atomic_ref<T>(*dst)); };
      detail::sim_update(
          dst, sizeof(T), [](void* c) { (*static_cast<decltype(run)*>(c))(); }, &run);
    } else {
      R out{};
      auto run = [&] { out = op(std::atomic_ref<T>(*dst)); };
      detail::sim_update(
          dst, sizeof(T), [](void* c) { (*static_cast<decltype(run)*>(c))(); }, &run);
      return out;
    }
  } else {
    return op(std::atomic_ref<T>(*dst));
  }
}

// For code that cannot route its stores through the helpers (TIPS's plugged-in index, which
// only announces each store before making it): after plain stores to [p, p + len), logs the
// bytes that changed there as one store, so the simulator can land the lines before and after
// it and the detector accepts them. The order of the stores inside it is not modelled.
inline void note_stores(const void* p, std::size_t len) {
  if (tracking_stores()) [[unlikely]]
    detail::sim_note(p, len);
}

// Brackets a stretch of such plain stores, up to the note_stores that logs them, in `sim`
// mode: no crash capture runs meanwhile (one raised by another thread waits), so none finds
// a store not yet noted and reports it as raw. Nothing inside may flush or fence (a capture
// raised there would wait for itself).
inline void begin_plain_stores() {
  if (tracking_stores()) [[unlikely]]
    detail::sim_plain_stores(true);
}
inline void end_plain_stores() {
  if (tracking_stores()) [[unlikely]]
    detail::sim_plain_stores(false);
}

}  // namespace dptree::pm
