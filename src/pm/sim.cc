// The crash simulator's bookkeeping (dptree/pm/sim.h says what it models): the process-wide
// registry that routes tracked stores, flushes and fences to the simulator of the pool they
// touch, each line's log of stores since it was durable, and capture(), which lands pending
// and dirty lines at random to build a crash image.
#include "dptree/pm/sim.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <shared_mutex>

#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"
#include "pm/sim_registry.h"

namespace dptree::pm {

// splitmix64: small, fast and good enough to draw eviction coins.
struct SimRng {
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

constexpr std::size_t kPage = 4096;

constexpr std::size_t kWords = kCacheLine / 8;

// Lands `src` on `dst` (one cache line) with probability p per unit; returns the words that
// landed as a bit set.
unsigned land(std::byte* dst, const std::byte* src, double p, Unit unit, SimRng& rng) {
  if (unit == Unit::line64) {
    if (std::memcmp(dst, src, kCacheLine) == 0 || !rng.coin(p)) return 0;
    std::memcpy(dst, src, kCacheLine);
    return (1u << kWords) - 1;
  }
  unsigned landed = 0;
  for (std::size_t w = 0; w < kWords; ++w)
    if (std::memcmp(dst + w * 8, src + w * 8, 8) != 0 && rng.coin(p)) {
      std::memcpy(dst + w * 8, src + w * 8, 8);
      landed |= 1u << w;
    }
  return landed;
}

// Byte i of `mask` set: byte i of the line is in [from, to) (offsets within the line).
std::uint64_t byte_mask(std::size_t from, std::size_t to) {
  std::uint64_t hi = to >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << to) - 1;
  return hi & ~((std::uint64_t{1} << from) - 1);
}

void apply_masked(std::byte* out, const std::byte* data, std::uint64_t mask) {
  for (std::size_t w = 0; w < kWords; ++w) {
    auto m = static_cast<std::uint8_t>(mask >> (w * 8));
    if (m == 0xff) {
      std::memcpy(out + w * 8, data + w * 8, 8);
    } else if (m) {
      for (std::size_t b = 0; b < 8; ++b)
        if (m & (1u << b)) out[w * 8 + b] = data[w * 8 + b];
    }
  }
}

// Aligned whole words are copied one atomic word at a time: lock-free readers of a word
// never see half of it, as with the plain store the helper replaces.
void copy_words(std::byte* dst, const void* src, std::size_t len) {
  auto a = reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src) | len;
  if (a % 8 != 0) {
    std::memcpy(dst, src, len);
    return;
  }
  auto* d = reinterpret_cast<std::uint64_t*>(dst);
  auto* s = static_cast<const std::uint64_t*>(src);
  for (std::size_t i = 0; i < len / 8; ++i) __atomic_store_n(d + i, s[i], __ATOMIC_RELAXED);
}

}  // namespace

namespace detail {

void sim_store(void* dst, const void* src, std::size_t len) {
  auto* d = static_cast<std::byte*>(dst);
  Simulator* s = len ? reg().find_addr(d) : nullptr;
  if (!s) {
    std::memcpy(dst, src, len);
    return;
  }
  s->on_store(d, len, [&] { copy_words(d, src, len); });
}

void sim_fill(void* dst, int byte, std::size_t len) {
  auto* d = static_cast<std::byte*>(dst);
  Simulator* s = len ? reg().find_addr(d) : nullptr;
  if (!s) {
    std::memset(dst, byte, len);
    return;
  }
  s->on_store(d, len, [&] { std::memset(dst, byte, len); });
}

void sim_update(void* dst, std::size_t len, void (*op)(void*), void* ctx) {
  auto* d = static_cast<std::byte*>(dst);
  Simulator* s = reg().find_addr(d);
  if (!s) {
    op(ctx);
    return;
  }
  s->on_store(d, len, [&] { op(ctx); });
}

void sim_note(const void* p, std::size_t len) {
  auto* d = static_cast<const std::byte*>(p);
  if (Simulator* s = len ? reg().find_addr(d) : nullptr) s->on_note(d, len);
}

// Held shared by threads inside begin/end_plain_stores, exclusively by a capture.
std::shared_mutex& plain_stores_mu() {
  static std::shared_mutex mu;
  return mu;
}

void sim_plain_stores(bool begin) {
  if (begin)
    plain_stores_mu().lock_shared();
  else
    plain_stores_mu().unlock_shared();
}

}  // namespace detail

void sim_registry_add(Simulator* s) {
  std::unique_lock g(reg().mu);
  reg().sims.push_back(s);
}

void sim_registry_remove(Simulator* s) {
  std::unique_lock g(reg().mu);
  std::erase(reg().sims, s);
}

void sim_registry_flush(const std::byte* addr, std::size_t len, const void* caller) {
  Simulator* s = reg().find_addr(addr);
  if (!s) return;
  if (std::find(t_touched.begin(), t_touched.end(), s->id()) == t_touched.end())
    t_touched.push_back(s->id());
  t_last_sim = s->id();
  s->on_flush(addr, len, this_thread_id(), caller);
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

void Simulator::on_flush(const std::byte* addr, std::size_t len, std::uint32_t thread,
                         const void* caller) {
  call_hook(EventKind::flush);
  std::lock_guard g(mu_);
  ++flushes_;
  auto first = static_cast<std::uint64_t>(addr - working_) / kCacheLine;
  auto last = static_cast<std::uint64_t>(std::min<std::size_t>(addr - working_ + len, size_) - 1) /
              kCacheLine;
  for (auto line = first; line <= last; ++line) {
    check_line(line, caller);
    auto [it, inserted] = pending_index_.try_emplace(std::pair{line, thread}, pending_.size());
    if (inserted) pending_.push_back(Pending{line, 0, 0, thread, {}});
    pending_[it->second].seq = flushes_;
    pending_[it->second].store_seq = stores_;
    std::memcpy(pending_[it->second].data, working_ + line * kCacheLine, kCacheLine);
  }
}

void Simulator::log_store(const std::byte* dst, std::size_t len) {
  ++stores_;
  auto from = static_cast<std::size_t>(dst - working_);
  auto to = std::min(from + len, size_);
  for (std::size_t line = from / kCacheLine; line * kCacheLine < to; ++line) {
    std::size_t base = line * kCacheLine;
    append(line, byte_mask(std::max(from, base) - base, std::min(to, base + kCacheLine) - base));
  }
}

void Simulator::append(std::uint64_t line, std::uint64_t mask) {
  auto [it, fresh] = logs_.try_emplace(line);
  auto& log = it->second;
  if (fresh) std::memcpy(log.predicted, durable_.data() + line * kCacheLine, kCacheLine);
  Store& st = log.stores.emplace_back();
  st.seq = stores_;
  st.mask = mask;
  std::memcpy(st.data, working_ + line * kCacheLine, kCacheLine);
  apply_masked(log.predicted, st.data, mask);
  if (log.stores.size() > kMaxLog) {
    // Merge the two oldest stores: the states between them are no longer produced.
    log.stores[1].mask |= log.stores[0].mask;
    log.stores.erase(log.stores.begin());
  }
}

void Simulator::on_note(const std::byte* p, std::size_t len) {
  std::lock_guard g(mu_);
  auto from = static_cast<std::size_t>(p - working_);
  auto to = std::min(from + len, size_);
  bool counted = false;
  for (std::size_t line = from / kCacheLine; line * kCacheLine < to; ++line) {
    auto it = logs_.find(line);
    if (it != logs_.end() && it->second.raw) continue;
    const std::byte* want =
        it == logs_.end() ? durable_.data() + line * kCacheLine : it->second.predicted;
    const std::byte* have = working_ + line * kCacheLine;
    std::uint64_t mask = 0;
    for (std::size_t b = 0; b < kCacheLine; ++b)
      if (want[b] != have[b]) mask |= std::uint64_t{1} << b;
    if (!mask) continue;
    if (!counted) ++stores_;
    counted = true;
    append(line, mask);
  }
}

void Simulator::replay(std::uint64_t line, const LineLog& log, std::size_t k,
                       std::byte* out) const {
  std::memcpy(out, durable_.data() + line * kCacheLine, kCacheLine);
  for (std::size_t i = 0; i < k && i < log.stores.size(); ++i)
    apply_masked(out, log.stores[i].data, log.stores[i].mask);
}

void Simulator::check_line(std::uint64_t line, const void* caller) const {
  auto it = logs_.find(line);
  if (it != logs_.end() && it->second.raw) return;  // reported already
  const std::byte* want =
      it == logs_.end() ? durable_.data() + line * kCacheLine : it->second.predicted;
  const std::byte* have = working_ + line * kCacheLine;
  if (std::memcmp(want, have, kCacheLine) == 0) return;
  std::size_t w = 0;
  while (std::memcmp(want + w * 8, have + w * 8, 8) == 0) ++w;
  ++raw_count_;
  if (raw_.size() < kMaxRawReports) raw_.push_back(RawStore{line * kCacheLine + w * 8, caller});
  logs_[line].raw = true;
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
      // The line is durable as of the snapshot: the stores it holds leave the log.
      if (auto it = logs_.find(p.line); it != logs_.end()) {
        std::erase_if(it->second.stores, [&](const Store& st) { return st.seq <= p.store_seq; });
        it->second.raw = false;
        if (it->second.stores.empty())
          logs_.erase(it);
        else
          replay(p.line, it->second, it->second.stores.size(), it->second.predicted);
      }
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
    pending_index_[std::pair{pending_[i].line, pending_[i].thread}] = i;
}

Image Simulator::capture(const CaptureOptions& opt) const {
  std::unique_lock plain(detail::plain_stores_mu());  // before mu_: a noting thread needs mu_
  std::lock_guard g(mu_);
  SimRng rng{opt.seed};
  Image img;
  img.bytes = Buffer::copy_of(durable_.span());
  std::byte* out = img.bytes.data();
  // The detector, on logged lines here and on the other dirty lines below. Lines whose log
  // explains them land by prefix; landed[line] is, per word, how many of the logged stores
  // the snapshot that landed last holds.
  std::vector<std::uint64_t> logged;
  for (const auto& [line, log] : logs_) {
    check_line(line, nullptr);
    if (!log.raw && !log.stores.empty()) logged.push_back(line);
  }
  std::sort(logged.begin(), logged.end());
  std::unordered_map<std::uint64_t, std::array<std::uint32_t, kWords>> landed;
  std::vector<const Pending*> order;
  order.reserve(pending_.size());
  for (const auto& p : pending_) order.push_back(&p);
  std::sort(order.begin(), order.end(),
            [](const Pending* a, const Pending* b) { return a->seq < b->seq; });
  for (const Pending* p : order) {
    unsigned words = land(out + p->line * kCacheLine, p->data, opt.p_pending, opt.unit, rng);
    auto it = logs_.find(p->line);
    if (!words || it == logs_.end() || it->second.raw) continue;
    const auto& st = it->second.stores;
    auto held = static_cast<std::uint32_t>(
        std::partition_point(st.begin(), st.end(),
                             [&](const Store& s) { return s.seq <= p->store_seq; }) -
        st.begin());
    auto& k = landed[p->line];
    for (std::size_t w = 0; w < kWords; ++w)
      if (words & (1u << w)) k[w] = held;
  }
  for (std::uint64_t line : logged) {
    const auto& log = logs_.find(line)->second;
    auto it = landed.find(line);
    std::array<std::uint32_t, kWords> from{};
    if (it != landed.end()) from = it->second;
    evict(line, log, from, opt, rng, out + line * kCacheLine);
  }
  // Other dirty lines (raw stores): compare a page at a time, then the lines of a page that
  // differs, and land the current content.
  for (std::size_t page = 0; page < size_; page += kPage) {
    std::size_t n = std::min(kPage, size_ - page);
    if (std::memcmp(out + page, working_ + page, n) == 0) continue;
    for (std::size_t l = page; l < page + n; l += kCacheLine)
      if (!std::binary_search(logged.begin(), logged.end(), l / kCacheLine)) {
        check_line(l / kCacheLine, nullptr);
        land(out + l, working_ + l, opt.p_evict, opt.unit, rng);
      }
  }
  return img;
}

void Simulator::evict(std::uint64_t line, const LineLog& log,
                      const std::array<std::uint32_t, 8>& from, const CaptureOptions& opt,
                      SimRng& rng, std::byte* out) const {
  const auto n = static_cast<std::uint32_t>(log.stores.size());
  // The prefix each word lands at (0: it does not land).
  std::array<std::uint32_t, kWords> k{};
  auto pick = [&](std::uint32_t lo) -> std::uint32_t {
    if (lo >= n || !rng.coin(opt.p_evict)) return 0;
    if (!opt.intermediate || rng.coin(0.5)) return n;
    return lo + 1 + static_cast<std::uint32_t>(rng.next() % (n - lo));
  };
  if (opt.unit == Unit::line64) {
    k.fill(pick(from[0]));
  } else {
    for (std::size_t w = 0; w < kWords; ++w) k[w] = pick(from[w]);
  }
  std::uint32_t last = *std::max_element(k.begin(), k.end());
  if (last == 0) return;
  alignas(8) std::byte state[kCacheLine];
  std::memcpy(state, durable_.data() + line * kCacheLine, kCacheLine);
  for (std::uint32_t j = 1; j <= last; ++j) {
    apply_masked(state, log.stores[j - 1].data, log.stores[j - 1].mask);
    for (std::size_t w = 0; w < kWords; ++w)
      if (k[w] == j) std::memcpy(out + w * 8, state + w * 8, 8);
  }
}

std::vector<RawStore> Simulator::raw_stores() const {
  std::lock_guard g(mu_);
  return raw_;
}
std::uint64_t Simulator::raw_store_count() const {
  std::lock_guard g(mu_);
  return raw_count_;
}

std::uint64_t Simulator::flush_events() const {
  std::lock_guard g(mu_);
  return flushes_;
}
std::uint64_t Simulator::fence_events() const {
  std::lock_guard g(mu_);
  return fences_;
}
std::size_t Simulator::pending_lines_of_other_threads() const {
  const std::uint32_t me = this_thread_id();
  std::lock_guard g(mu_);
  return static_cast<std::size_t>(std::count_if(pending_.begin(), pending_.end(),
                                                [&](const Pending& p) { return p.thread != me; }));
}

std::size_t Simulator::pending_lines() const {
  std::lock_guard g(mu_);
  return pending_.size();
}

}  // namespace dptree::pm
