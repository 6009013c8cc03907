// Persistence primitives: the only place in the code base that issues clwb / clflushopt /
// clflush / sfence (docs/pm-layer.md), here and in persist.cc.
//
// Counters count what the algorithms ask for (lines flushed, fences), in every mode, so
// flushes per operation (the DPTree paper's Table 1) can be measured in `dram` mode too; the
// mode only decides which instructions run.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dptree::pm {

inline constexpr std::size_t kCacheLine = 64;

enum class Mode : std::uint8_t {
  pmem,  // best of clwb > clflushopt > clflush (cpuid), then sfence
  eadr,  // caches are persistent: fence only
  dram,  // no persistence at all: neither
  sim,   // crash simulator: flushes and fences drive the durable image of sim pools (sim.h)
};

std::string_view to_string(Mode m);
// Parses "pmem", "eadr", "dram" or "sim"; throws dptree::Error naming the accepted values.
Mode parse_mode(std::string_view s);

// Process-wide mode. Set it before creating or opening pools: a pool opened in `sim` mode
// keeps a durable image, others do not.
void set_mode(Mode m);
Mode mode();

enum class FlushInstruction : std::uint8_t { clwb, clflushopt, clflush };
FlushInstruction flush_instruction();  // what `pmem` mode uses on this CPU
std::string_view to_string(FlushInstruction f);

// Optional emulated media latency: busy-wait per flushed line and per fence (0 = off).
void set_delays(std::uint32_t flush_ns_per_line, std::uint32_t fence_ns);

// Write back every cache line overlapping [addr, addr + len). No ordering: see fence().
void flush(const void* addr, std::size_t len);
// Order all earlier flushes of this thread before any later store (sfence).
void fence();
inline void persist(const void* addr, std::size_t len) {
  flush(addr, len);
  fence();
}

// The inline form of persist() for one line, for loops that persist many lines in a row
// (FAST's in-node shift): clwb + sfence inline, so the loop keeps its values in registers and
// stores nothing else while the fence waits for the write-back (docs/peers.md, FAST_FAIR).
// Use it only where inline_persist() is true, and charge what it issued with
// count_persists(); elsewhere (`sim`, `eadr`, `dram`, emulated delays) use persist().
// inline_persist() (below): `pmem` mode on a CPU with clwb, no emulated delays. Its halves,
// flush_line_inline() and fence_inline(), persist several lines under one fence.
inline void flush_line_inline(const void* line) {
  asm volatile("clwb %0" : "+m"(*static_cast<volatile char*>(const_cast<void*>(line))));
}
inline void fence_inline() {
  asm volatile("sfence" ::: "memory");
}
inline void persist_line_inline(const void* line) {
  flush_line_inline(line);
  fence_inline();
}
// One line through persist_line_inline() where `inl` (inline_persist() as the caller read it
// once for the whole operation, which then charges the lines itself), else through persist().
inline void persist_line(const void* line, bool inl) {
  if (inl)
    persist_line_inline(line);
  else
    persist(line, kCacheLine);
}
// What the counters charge a flush or fence to (the paper's Table 1 splits log/alloc/node).
enum class Category : std::uint8_t { other, log, alloc, node };
inline constexpr std::size_t kCategories = 4;
std::string_view to_string(Category c);

namespace detail {
// inline_persist()'s answer, kept in step by set_mode() and set_delays(); false until
// persist.cc's initialisation has found the CPU's flush instruction.
inline std::atomic<bool> g_inline_persist{false};
// The category this thread's flushes and fences are charged to. Inline, so that a scope is a
// load and two stores where an index opens one per operation, not two calls.
inline thread_local Category t_category = Category::other;

// This thread's counts, [category][lines, fences]. Each slot is written only by its thread
// (relaxed load + store, no atomic RMW on the hot path) and summed by counters(). Constant-
// initialised and trivially destroyed, so an inline count reaches them with no initialisation
// guard; a thread enlists them with counters() on its first count, out of line (first_count).
struct ThreadCounters {
  std::atomic<std::uint64_t> v[kCategories][2]{};
  bool enlisted = false;
};
inline thread_local ThreadCounters t_counters;
// A thread's first count: registers t_counters, then counts. Out of line, so the common path
// of count_persists() calls nothing and saves no registers.
void first_count(std::uint64_t lines, std::uint64_t fences);
inline void add_count(Category c, int kind, std::uint64_t n) {
  auto& slot = t_counters.v[static_cast<int>(c)][kind];
  slot.store(slot.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
inline void add_count(int kind, std::uint64_t n) {
  add_count(t_category, kind, n);
}
}  // namespace detail

// Charges lines flushed and fences issued to category c, whatever the thread's current one (an
// operation that persists inline names its category here instead of opening a CategoryScope).
// Inline: an index that persists inline (persist_line_inline) charges each operation with a
// few loads and stores, not a call.
inline void count_persists(std::uint64_t lines, std::uint64_t fences, Category c) {
  if (!detail::t_counters.enlisted) [[unlikely]] {
    const Category saved = detail::t_category;
    detail::t_category = c;
    detail::first_count(lines, fences);
    detail::t_category = saved;
    return;
  }
  detail::add_count(c, 0, lines);
  detail::add_count(c, 1, fences);
}
// The same, charged to this thread's current category.
inline void count_persists(std::uint64_t lines, std::uint64_t fences) {
  count_persists(lines, fences, detail::t_category);
}

inline bool inline_persist() {  // see persist_line_inline()
  return detail::g_inline_persist.load(std::memory_order_relaxed);
}

// Sets this thread's counter category for the scope's lifetime, restoring the previous one.
class CategoryScope {
 public:
  explicit CategoryScope(Category c) : saved_(detail::t_category) { detail::t_category = c; }
  ~CategoryScope() { detail::t_category = saved_; }
  CategoryScope(const CategoryScope&) = delete;
  CategoryScope& operator=(const CategoryScope&) = delete;

 private:
  Category saved_;
};

// persist_line() for an operation that names its category: where it calls persist() (not
// inline), that runs under category c; the inline form's caller charges its lines to c itself
// (count_persists(lines, fences, c)). `p` may be any address in the line.
inline void persist_line(const void* p, bool inl, Category c) {
  if (inl) return persist_line_inline(p);
  CategoryScope scope(c);
  persist(p, 1);
}

struct Counters {
  std::uint64_t lines = 0;   // cache lines flushed
  std::uint64_t fences = 0;  // fences issued
  std::uint64_t bytes = 0;   // bytes written back to PM (lines * 64)

  Counters& operator+=(const Counters& o) {
    lines += o.lines;
    fences += o.fences;
    bytes += o.bytes;
    return *this;
  }
  friend Counters operator-(Counters a, const Counters& b) {
    a.lines -= b.lines;
    a.fences -= b.fences;
    a.bytes -= b.bytes;
    return a;
  }
};

struct CounterSnapshot {
  std::array<Counters, kCategories> by_category{};
  Counters total() const {
    Counters t;
    for (const auto& c : by_category) t += c;
    return t;
  }
  const Counters& operator[](Category c) const { return by_category[static_cast<int>(c)]; }
  friend CounterSnapshot operator-(CounterSnapshot a, const CounterSnapshot& b) {
    for (std::size_t i = 0; i < kCategories; ++i)
      a.by_category[i] = a.by_category[i] - b.by_category[i];
    return a;
  }
};

// Sum of every thread's counters, live and exited.
CounterSnapshot counters();
// Zero all counters. Call when no other thread is flushing (counts may otherwise be lost).
void reset_counters();

}  // namespace dptree::pm
