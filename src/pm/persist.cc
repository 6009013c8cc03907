// Flush and fence (dptree/pm/persist.h): the flush instruction this CPU has, the emulated
// media latency, and the per-thread counters of lines and fences.
#include "dptree/pm/persist.h"

#include <cpuid.h>
#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "dptree/error.h"
#include "dptree/pm/store.h"
#include "pm/named.h"
#include "pm/sim_registry.h"

namespace dptree::pm {

namespace {

std::atomic<Mode> g_mode{Mode::pmem};
std::atomic<std::uint32_t> g_flush_delay_ns{0};
std::atomic<std::uint32_t> g_fence_delay_ns{0};

FlushInstruction detect_flush() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    if (b & (1u << 24)) return FlushInstruction::clwb;
    if (b & (1u << 23)) return FlushInstruction::clflushopt;
  }
  return FlushInstruction::clflush;
}
const FlushInstruction g_flush_instr = detect_flush();

__attribute__((target("clwb"))) void clwb_range(std::uintptr_t p, std::uintptr_t end) {
  for (; p < end; p += kCacheLine) _mm_clwb(reinterpret_cast<void*>(p));
}
__attribute__((target("clflushopt"))) void clflushopt_range(std::uintptr_t p, std::uintptr_t end) {
  for (; p < end; p += kCacheLine) _mm_clflushopt(reinterpret_cast<void*>(p));
}
void clflush_range(std::uintptr_t p, std::uintptr_t end) {
  for (; p < end; p += kCacheLine) _mm_clflush(reinterpret_cast<void*>(p));
}

void spin_ns(std::uint64_t ns) {
  auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) _mm_pause();
}

// Each thread's counters (detail::t_counters) are listed in a registry so counters() can sum
// them.
using detail::add_count;
using detail::t_counters;
using detail::ThreadCounters;

struct CounterRegistry {
  std::mutex mu;
  std::vector<ThreadCounters*> live;
  std::uint64_t retired[kCategories][2]{};
  std::uint32_t next_thread = 0;
};
CounterRegistry& registry() {
  static CounterRegistry* r = new CounterRegistry;  // never destroyed: threads exit late
  return *r;
}

// This thread's counters, listed from its first bump until it exits, when their counts retire.
struct Enlistment {
  Enlistment() {
    auto& r = registry();
    std::lock_guard g(r.mu);
    r.live.push_back(&t_counters);
  }
  ~Enlistment() {
    auto& r = registry();
    std::lock_guard g(r.mu);
    for (std::size_t c = 0; c < kCategories; ++c)
      for (int k = 0; k < 2; ++k)
        r.retired[c][k] += t_counters.v[c][k].load(std::memory_order_relaxed);
    std::erase(r.live, &t_counters);
  }
};
void enlist() {
  thread_local Enlistment e;
  t_counters.enlisted = true;
}

inline void bump(int kind, std::uint64_t n) {
  if (!t_counters.enlisted) [[unlikely]]
    return detail::first_count(kind == 0 ? n : 0, kind == 1 ? n : 0);
  add_count(kind, n);
}

}  // namespace

namespace detail {
[[gnu::noinline]] void first_count(std::uint64_t lines, std::uint64_t fences) {
  enlist();
  add_count(0, lines);
  add_count(1, fences);
}
}  // namespace detail

std::uint32_t this_thread_id() {
  thread_local std::uint32_t id = [] {
    auto& r = registry();
    std::lock_guard g(r.mu);
    return r.next_thread++;
  }();
  return id;
}

constexpr Named<Mode> kModes[] = {
    {Mode::pmem, "pmem"}, {Mode::eadr, "eadr"}, {Mode::dram, "dram"}, {Mode::sim, "sim"}};

std::string_view to_string(Mode m) {
  return name_of(kModes, m);
}

Mode parse_mode(std::string_view s) {
  return parse_named(kModes, s, "PM mode");
}

constexpr Named<FlushInstruction> kFlushes[] = {{FlushInstruction::clwb, "clwb"},
                                                {FlushInstruction::clflushopt, "clflushopt"},
                                                {FlushInstruction::clflush, "clflush"}};

std::string_view to_string(FlushInstruction f) {
  return name_of(kFlushes, f);
}

constexpr Named<Category> kCategoryNames[] = {{Category::other, "other"},
                                              {Category::log, "log"},
                                              {Category::alloc, "alloc"},
                                              {Category::node, "node"}};

std::string_view to_string(Category c) {
  return name_of(kCategoryNames, c);
}

namespace {
// inline_persist(): persist() is exactly clwb + sfence.
void refresh_inline_persist() {
  detail::g_inline_persist.store(g_mode.load(std::memory_order_relaxed) == Mode::pmem &&
                                     g_flush_instr == FlushInstruction::clwb &&
                                     g_flush_delay_ns.load(std::memory_order_relaxed) == 0 &&
                                     g_fence_delay_ns.load(std::memory_order_relaxed) == 0,
                                 std::memory_order_relaxed);
}
[[maybe_unused]] const bool g_inline_persist_set = (refresh_inline_persist(), true);
}  // namespace

void set_mode(Mode m) {
  g_mode.store(m, std::memory_order_relaxed);
  detail::g_track_stores.store(m == Mode::sim, std::memory_order_relaxed);
  refresh_inline_persist();
}
Mode mode() {
  return g_mode.load(std::memory_order_relaxed);
}
FlushInstruction flush_instruction() {
  return g_flush_instr;
}

void set_delays(std::uint32_t flush_ns_per_line, std::uint32_t fence_ns) {
  g_flush_delay_ns.store(flush_ns_per_line, std::memory_order_relaxed);
  g_fence_delay_ns.store(fence_ns, std::memory_order_relaxed);
  refresh_inline_persist();
}

void flush(const void* addr, std::size_t len) {
  if (len == 0) return;
  auto p = reinterpret_cast<std::uintptr_t>(addr) & ~(kCacheLine - 1);
  auto end = reinterpret_cast<std::uintptr_t>(addr) + len;
  std::uint64_t lines = (end - p + kCacheLine - 1) / kCacheLine;
  bump(0, lines);
  switch (mode()) {
    case Mode::pmem:
      if (g_flush_instr == FlushInstruction::clwb)
        clwb_range(p, end);
      else if (g_flush_instr == FlushInstruction::clflushopt)
        clflushopt_range(p, end);
      else
        clflush_range(p, end);
      break;
    case Mode::sim:
      sim_registry_flush(static_cast<const std::byte*>(addr), len, __builtin_return_address(0));
      break;
    case Mode::eadr:
    case Mode::dram:
      return;  // no write-back, no emulated delay
  }
  if (auto d = g_flush_delay_ns.load(std::memory_order_relaxed)) spin_ns(d * lines);
}

void fence() {
  bump(1, 1);
  switch (mode()) {
    case Mode::pmem:
    case Mode::eadr:
      _mm_sfence();
      break;
    case Mode::sim:
      sim_registry_fence();
      break;
    case Mode::dram:
      return;
  }
  if (auto d = g_fence_delay_ns.load(std::memory_order_relaxed)) spin_ns(d);
}

CounterSnapshot counters() {
  auto& r = registry();
  std::lock_guard g(r.mu);
  CounterSnapshot s;
  for (std::size_t c = 0; c < kCategories; ++c) {
    std::uint64_t lines = r.retired[c][0], fences = r.retired[c][1];
    for (auto* t : r.live) {
      lines += t->v[c][0].load(std::memory_order_relaxed);
      fences += t->v[c][1].load(std::memory_order_relaxed);
    }
    s.by_category[c] = Counters{lines, fences, lines * kCacheLine};
  }
  return s;
}

void reset_counters() {
  auto& r = registry();
  std::lock_guard g(r.mu);
  for (std::size_t c = 0; c < kCategories; ++c) {
    r.retired[c][0] = r.retired[c][1] = 0;
    for (auto* t : r.live) {
      t->v[c][0].store(0, std::memory_order_relaxed);
      t->v[c][1].store(0, std::memory_order_relaxed);
    }
  }
}

}  // namespace dptree::pm
