#include "dptree/pm/sim.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <shared_mutex>

#include "dptree/pm/persist.h"
#include "pm/sim_registry.h"

namespace dptree::pm {

namespace {

std::atomic<std::uint64_t> g_next_sim_id{1};

struct Registry {
  std::shared_mutex mu;
  std::vector<Simulator*> sims;
  Simulator* find_addr(const std::byte* p) {
    std::shared_lock g(mu);
    for (auto* s : sims)
      if (s->contains(p)) return s;
    return nullptr;
  }
  Simulator* find_id(std::uint64_t id) {
    std::shared_lock g(mu);
    for (auto* s : sims)
      if (s->id() == id) return s;
    return nullptr;
  }
};
Registry& reg() {
  static Registry* r = new Registry;
  return *r;
}

thread_local std::vector<std::uint64_t> t_touched;  // sims flushed to since the last fence
thread_local std::uint64_t t_last_sim = 0;
thread_local std::vector<std::uint64_t> t_in_hook;  // sims whose hook runs on this thread

// splitmix64: small, fast and good enough to draw eviction coins.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  bool coin(double p) {
    if (p <= 0.0) return false;
    if (p >= 1.0) return true;
    return static_cast<double>(next() >> 11) * 0x1.0p-53 < p;
  }
};

constexpr std::size_t kPage = 4096;

// Pending lines are kept per (line, thread): a fence persists only its own thread's flushes.
std::uint64_t pending_key(std::uint64_t line, std::uint32_t thread) {
  return (line << 16) | (thread & 0xffff);
}

// Lands `src` on `dst` (one cache line) with probability p per unit.
void land(std::byte* dst, const std::byte* src, double p, Unit unit, Rng& rng) {
  if (unit == Unit::line64) {
    if (std::memcmp(dst, src, kCacheLine) != 0 && rng.coin(p)) std::memcpy(dst, src, kCacheLine);
    return;
  }
  for (std::size_t w = 0; w < kCacheLine; w += 8)
    if (std::memcmp(dst + w, src + w, 8) != 0 && rng.coin(p)) std::memcpy(dst + w, src + w, 8);
}

}  // namespace

void sim_registry_add(Simulator* s) {
  std::unique_lock g(reg().mu);
  reg().sims.push_back(s);
}

void sim_registry_remove(Simulator* s) {
  std::unique_lock g(reg().mu);
  std::erase(reg().sims, s);
}

void sim_registry_flush(const std::byte* addr, std::size_t len) {
  Simulator* s = reg().find_addr(addr);
  if (!s) return;
  if (std::find(t_touched.begin(), t_touched.end(), s->id()) == t_touched.end())
    t_touched.push_back(s->id());
  t_last_sim = s->id();
  s->on_flush(addr, len, this_thread_id());
}

void sim_registry_fence() {
  std::vector<std::uint64_t> ids;
  ids.swap(t_touched);
  if (ids.empty() && t_last_sim) ids.push_back(t_last_sim);
  for (auto id : ids)
    if (Simulator* s = reg().find_id(id)) s->on_fence(this_thread_id());
}

Simulator::Simulator(std::byte* working, std::size_t size, Buffer durable)
    : working_(working), size_(size), durable_(std::move(durable)), id_(g_next_sim_id++) {
  if (durable_.size() != size_) durable_ = Buffer(size_);
  sim_registry_add(this);
}

Simulator::~Simulator() {
  sim_registry_remove(this);
}

void Simulator::set_hook(Hook hook) {
  std::lock_guard g(mu_);
  hook_ = std::move(hook);
}

void Simulator::call_hook(EventKind k) {
  Event e;
  Hook h;
  {
    std::lock_guard g(mu_);
    if (!hook_) return;
    e = Event{this, k, flushes_ + fences_, k == EventKind::flush ? flushes_ : fences_};
    h = hook_;
  }
  if (std::find(t_in_hook.begin(), t_in_hook.end(), id_) != t_in_hook.end()) return;
  // The hook runs in a persistence context of its own: fences it issues (say, while
  // recovering a captured image) must not reach the pools this thread flushed to before.
  struct Isolate {
    std::vector<std::uint64_t> touched;
    std::uint64_t last;
    std::uint64_t id;
    explicit Isolate(std::uint64_t i) : last(t_last_sim), id(i) {
      touched.swap(t_touched);
      t_in_hook.push_back(id);
    }
    ~Isolate() {
      t_touched.swap(touched);
      t_last_sim = last;
      std::erase(t_in_hook, id);
    }
  } isolate(id_);
  h(e);
}

void Simulator::on_flush(const std::byte* addr, std::size_t len, std::uint32_t thread) {
  call_hook(EventKind::flush);
  std::lock_guard g(mu_);
  ++flushes_;
  auto first = static_cast<std::uint64_t>(addr - working_) / kCacheLine;
  auto last = static_cast<std::uint64_t>(std::min<std::size_t>(addr - working_ + len, size_) - 1) /
              kCacheLine;
  for (auto line = first; line <= last; ++line) {
    auto [it, inserted] = pending_index_.try_emplace(pending_key(line, thread), pending_.size());
    if (inserted) pending_.push_back(Pending{line, 0, thread, {}});
    pending_[it->second].seq = flushes_;
    std::memcpy(pending_[it->second].data, working_ + line * kCacheLine, kCacheLine);
  }
}

void Simulator::on_fence(std::uint32_t thread) {
  call_hook(EventKind::fence);
  std::lock_guard g(mu_);
  ++fences_;
  std::unordered_map<std::uint64_t, std::uint64_t> persisted;  // line -> snapshot seq
  for (const auto& p : pending_)
    if (p.thread == thread) {
      std::memcpy(durable_.data() + p.line * kCacheLine, p.data, kCacheLine);
      persisted[p.line] = p.seq;
    }
  if (persisted.empty()) return;
  // Keep the other threads' snapshots, except those older than what just became durable.
  std::erase_if(pending_, [&](const Pending& p) {
    if (p.thread == thread) return true;
    auto it = persisted.find(p.line);
    return it != persisted.end() && p.seq < it->second;
  });
  reindex_pending();
}

void Simulator::reindex_pending() {
  pending_index_.clear();
  for (std::size_t i = 0; i < pending_.size(); ++i)
    pending_index_[pending_key(pending_[i].line, pending_[i].thread)] = i;
}

Image Simulator::capture(const CaptureOptions& opt) const {
  std::lock_guard g(mu_);
  Rng rng{opt.seed};
  Image img;
  img.bytes = Buffer::copy_of(durable_.span());
  std::byte* out = img.bytes.data();
  std::vector<const Pending*> order;
  order.reserve(pending_.size());
  for (const auto& p : pending_) order.push_back(&p);
  std::sort(order.begin(), order.end(),
            [](const Pending* a, const Pending* b) { return a->seq < b->seq; });
  for (const Pending* p : order)
    land(out + p->line * kCacheLine, p->data, opt.p_pending, opt.unit, rng);
  // Dirty lines: compare a page at a time, then the lines of a page that differs.
  for (std::size_t page = 0; page < size_; page += kPage) {
    std::size_t n = std::min(kPage, size_ - page);
    if (std::memcmp(out + page, working_ + page, n) == 0) continue;
    for (std::size_t l = page; l < page + n; l += kCacheLine)
      land(out + l, working_ + l, opt.p_evict, opt.unit, rng);
  }
  return img;
}

std::uint64_t Simulator::flush_events() const {
  std::lock_guard g(mu_);
  return flushes_;
}
std::uint64_t Simulator::fence_events() const {
  std::lock_guard g(mu_);
  return fences_;
}
std::size_t Simulator::pending_lines() const {
  std::lock_guard g(mu_);
  return pending_.size();
}

}  // namespace dptree::pm
