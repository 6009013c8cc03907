// TIPS backend (TIPS paper, "Plugged-in index is updated using background threads"): replay
// rounds take every OLog record up to the current global timestamp, split them by partition,
// and apply each partition's records in timestamp order to its plugged-in index in PM.
//
// Each partition applies in epochs. Before the index stores to a PM line, will_write undo-logs
// the line (ULog) - unless the UNO protocol says it need not: the line was logged already in
// this epoch (its oldest image is what a rollback needs), or it lies in a block allocated in
// this epoch (a rollback frees the block, and the OLog recreates its content). Allocations
// and frees go to the MLog; frees wait for the commit. Commit: write back every line the
// epoch touched, fence, then persist the partition's applied timestamp (the commit point),
// then carry out the frees and clear the MLog. The ULog needs no clearing: its entries are
// tagged with the epoch's starting timestamp, which the commit makes stale.
//
// Adaptive scaling: each round counts writes (timestamps issued) and reads since the last one
// and lets ceil(write ratio * max_writers) threads (at least 1) apply partitions at once.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"
#include "tips/engine.h"

namespace dptree::tips {

namespace detail {
namespace {
thread_local Engine* t_engine = nullptr;
thread_local Partition* t_part = nullptr;
thread_local const char* t_phase = "idle";

Partition& current(Engine*& e, const char* what) {
  if (!t_engine || !t_part)
    throw Error(Errc::invalid_argument,
                std::string("tips::") + what +
                    " called outside a TIPS replay: only an Adapter's write calls (create, "
                    "insert, update, upsert, remove) may allocate, free or modify PM");
  e = t_engine;
  return *t_part;
}
constexpr std::size_t kUlogMargin = 128;  // undo lines one operation may need, at most
constexpr std::size_t kMlogMargin = 24;   // allocations + frees of one operation, at most
constexpr std::size_t kChunk = 64;        // records applied per hold of the partition lock
}  // namespace

ReplayScope::ReplayScope(Engine* e, Partition* p) : saved_e_(t_engine), saved_p_(t_part) {
  t_engine = e;
  t_part = p;
}
ReplayScope::~ReplayScope() {
  t_engine = saved_e_;
  t_part = saved_p_;
}
// Inside a recovery every event counts as "recovery", whatever step of it runs.
PhaseScope::PhaseScope(const char* phase) : saved_(t_phase) {
  if (std::strcmp(t_phase, "recovery") != 0) t_phase = phase;
}
PhaseScope::~PhaseScope() {
  t_phase = saved_;
}

std::uint64_t* Engine::slot_word(std::uint64_t slot) const {
  auto* page = pool_.at<std::uint64_t>(dir_[slot / layout::kSlotsPerPage]);
  return page + slot % layout::kSlotsPerPage;
}

// A free owner slot; a new page of slots when none is left (zeroed and persisted before it
// is linked into the directory, so a crash never exposes garbage slots).
std::uint64_t Engine::take_slot() {
  std::lock_guard g(slot_mu_);
  if (free_slots_.empty()) {
    std::size_t page = 0;
    while (page < layout::kDirPages && dir_[page]) ++page;
    if (page == layout::kDirPages)
      throw Error(Errc::pool_full, "tips: all " +
                                       std::to_string(layout::kDirPages * layout::kSlotsPerPage) +
                                       " node slots are in use; use fewer, larger nodes");
    pm::CategoryScope cat(pm::Category::alloc);
    auto& a = pool_.allocator();
    std::uint64_t blk = a.reserve(layout::kSlotsPerPage * 8);
    pm::fill_bytes(pool_.at(blk), 0, layout::kSlotsPerPage * 8);
    pm::flush(pool_.at(blk), layout::kSlotsPerPage * 8);
    a.activate(&dir_[page], blk);
    for (std::size_t i = layout::kSlotsPerPage; i-- > 0;)
      free_slots_.push_back(page * layout::kSlotsPerPage + i);
  }
  std::uint64_t s = free_slots_.back();
  free_slots_.pop_back();
  return s;
}

void Engine::mlog_append(Partition& p, std::uint64_t word) {
  if (p.mlog_used >= opt_.mlog_entries)
    throw Error(Errc::invalid_argument,
                "tips: one operation needed more than mlog_entries allocation/free entries; "
                "raise the mlog_entries option");
  if (p.mlog_used == 0) {  // the entries that follow belong to the epoch that began at `tag`
    pm::store(&p.hdr->mlog_base, p.tag);
    pm::persist(&p.hdr->mlog_base, 8);
  }
  pm::store(&p.mlog[p.mlog_used], word);
  pm::flush(&p.mlog[p.mlog_used], 8);  // made durable by the next fence (activate's first)
  ++p.mlog_used;
}

// The index stores after it announces, often several ranges before the first store (a
// shift of keys and values, then the count): every range of the call is noted each time, so
// a store is logged at the first hook after it, whichever range it belongs to.
void Engine::note_announced(Partition& p) {
  for (auto [addr, len] : p.announced) pm::note_stores(addr, len);
}

namespace {
void set_plain_stores(Partition& p, bool on) {
  if (p.plain_stores == on || !pm::tracking_stores()) return;
  p.plain_stores = on;
  on ? pm::begin_plain_stores() : pm::end_plain_stores();
}
}  // namespace

void Engine::begin_write(Partition& p) {
  p.in_write = true;
  set_plain_stores(p, true);
}

void Engine::end_write(Partition& p) {
  note_announced(p);
  set_plain_stores(p, false);
  p.in_write = false;
  p.announced.clear();
}

Engine::Hook::Hook(Partition& p) : p_(p) {
  note_announced(p);
  set_plain_stores(p, false);
}

Engine::Hook::~Hook() {
  if (p_.in_write) set_plain_stores(p_, true);
}

void* Engine::alloc(Partition& p, std::size_t bytes) {
  Hook hook(p);
  PhaseScope phase("mlog");
  pm::CategoryScope cat(pm::Category::alloc);
  auto& a = pool_.allocator();
  const std::uint64_t blk = a.reserve(bytes + layout::kNodeHeader);
  std::uint64_t slot;
  try {
    slot = take_slot();
  } catch (...) {
    a.cancel(blk);
    throw;
  }
  mlog_append(p, layout::kMlogUsed | slot);
  auto* h = pool_.at<std::uint64_t>(blk);
  pm::store(&h[0], slot);
  pm::store(&h[1], layout::kNodeMagic);
  pm::flush(h, 16);
  a.activate(slot_word(slot), blk);  // fence 1: MLog entry, header, owner; fence 2: the slot
  const auto start = reinterpret_cast<std::uintptr_t>(pool_.at(blk));
  p.fresh[start] = start + a.block_size(blk);
  p.dirty.insert(start);  // the header line (already flushed; cheap to flush again)
  return pool_.at(blk + layout::kNodeHeader);
}

void Engine::release(Partition& p, void* node) {
  Hook hook(p);
  PhaseScope phase("mlog");
  auto* h = reinterpret_cast<std::uint64_t*>(static_cast<std::byte*>(node) - layout::kNodeHeader);
  if (!pool_.contains(h, 16) || h[1] != layout::kNodeMagic)
    throw Error(Errc::invalid_argument,
                "tips::release: the pointer is not a block from tips::alloc");
  mlog_append(p, layout::kMlogUsed | layout::kMlogFree | h[0]);
  p.deferred.push_back(h[0]);
}

void Engine::will_write(Partition& p, const void* addr, std::size_t len) {
  Hook hook(p);
  if (len == 0) return;
  if (pm::tracking_stores()) p.announced.emplace_back(addr, len);
  const auto first = reinterpret_cast<std::uintptr_t>(addr) & ~std::uintptr_t{63};
  const auto end = reinterpret_cast<std::uintptr_t>(addr) + len;
  bool logged = false;
  for (std::uintptr_t line = first; line < end; line += 64) {
    if (p.dirty.contains(line)) {
      ++p.undo_skipped;  // UNO: logged already in this epoch
      continue;
    }
    auto f = p.fresh.upper_bound(line);
    if (f != p.fresh.begin() && line < std::prev(f)->second) {
      p.dirty.insert(line);  // UNO: a block of this epoch, recreated by the OLog
      ++p.undo_skipped;
      continue;
    }
    if (!pool_.contains(reinterpret_cast<void*>(line), 64))
      throw Error(Errc::invalid_argument,
                  "tips::will_write: the address is not in the index's pool; the plugged-in "
                  "index may only keep its state in the header and in tips::alloc blocks");
    if (p.ulog_used >= opt_.ulog_lines)
      throw Error(Errc::invalid_argument,
                  "tips: one operation modified more lines than ulog_lines allows; raise it");
    PhaseScope phase("ulog");
    pm::CategoryScope cat(pm::Category::log);
    layout::UndoEntry& u = p.ulog[p.ulog_used++];
    layout::UndoEntry undo{};
    std::memcpy(undo.data, reinterpret_cast<const void*>(line), 64);
    undo.off = pool_.offset_of(reinterpret_cast<const void*>(line));
    undo.tag = p.tag;
    undo.sum = layout::undo_sum(undo.off, undo.tag, undo.data);
    pm::store(&u, undo);
    pm::flush(&u, sizeof(u));
    p.dirty.insert(line);
    ++p.undo_lines;
    logged = true;
  }
  if (logged) {
    PhaseScope phase("ulog");
    pm::fence();  // the old images are durable before any of these lines changes
  }
}

void Engine::begin_epoch(Partition& p) {
  p.tag = p.hdr->applied;
  p.ulog_used = 0;
  p.mlog_used = 0;
  p.dirty.clear();
  p.fresh.clear();
  p.deferred.clear();
}

void Engine::commit_epoch(Partition& p, std::uint64_t ts) {
  note_announced(p);
  PhaseScope phase("commit");
  {
    pm::CategoryScope cat(pm::Category::node);
    for (std::uintptr_t line : p.dirty) pm::flush(reinterpret_cast<const void*>(line), 64);
    pm::fence();
  }
  pm::store(&p.hdr->applied, ts);
  pm::persist(&p.hdr->applied, 8);  // the commit point
  if (p.mlog_used) {
    PhaseScope mphase("mlog");
    pm::CategoryScope cat(pm::Category::alloc);
    for (std::uint64_t s : p.deferred) pool_.allocator().free(slot_word(s));
    pm::fill_bytes(p.mlog, 0, p.mlog_used * 8);
    pm::flush(p.mlog, p.mlog_used * 8);
    pm::fence();
    std::lock_guard g(slot_mu_);
    free_slots_.insert(free_slots_.end(), p.deferred.begin(), p.deferred.end());
  }
  ++p.epochs;
  begin_epoch(p);
}

// Applies p.batch (sorted by timestamp) in epochs; the partition lock is released between
// chunks so lookups of this partition are not held up for a whole round.
void Engine::apply_partition(Partition& p) {
  PhaseScope phase("replay");
  ReplayScope scope(this, &p);
  begin_epoch(p);
  std::uint64_t last = 0;
  for (std::size_t i = 0; i < p.batch.size();) {
    std::unique_lock g(p.mu);
    for (std::size_t end = std::min(p.batch.size(), i + kChunk); i < end; ++i) {
      const layout::Record& r = p.batch[i];
      if (last && (p.ulog_used + kUlogMargin > opt_.ulog_lines ||
                   p.mlog_used + kMlogMargin > opt_.mlog_entries)) {
        commit_epoch(p, last);
        last = 0;
      }
      struct Write {
        Partition& p;
        explicit Write(Partition& q) : p(q) { Engine::begin_write(p); }
        ~Write() { Engine::end_write(p); }
      } call{p};
      if (r.op == layout::kPut)
        adapter_->upsert(p.header, r.key, r.value);
      else
        adapter_->remove(p.header, r.key);
      last = r.ts;
      ++p.records;
    }
    if (i == p.batch.size() && last) commit_epoch(p, last);
  }
  p.batch.clear();
}

unsigned Engine::choose_writers(std::size_t busy_partitions) {
  std::uint64_t reads = 0;
  for (auto& c : reads_) reads += c.n.load(std::memory_order_relaxed);
  const std::uint64_t ts = global_ts_.load();
  const double dw = static_cast<double>(ts - round_ts_);
  const double dr = static_cast<double>(reads - round_reads_);
  round_ts_ = ts;
  round_reads_ = reads;
  const double ratio = dw + dr > 0 ? dw / (dw + dr) : 0.0;
  unsigned w = writers_for_ratio(ratio, opt_.max_writers);
  w = std::min<unsigned>(w, static_cast<unsigned>(std::max<std::size_t>(busy_partitions, 1)));
  return opt_.background ? w : 1;
}

// One round: every record up to the global timestamp G read when it starts. A writer holds
// its lane's lock from taking its timestamp until its tail is durable, so after taking each
// lane's lock once, every record with ts <= G is in a lane. Caller holds replay_mu_.
void Engine::replay_round() {
  if (bg_error_) std::rethrow_exception(bg_error_);
  writes_since_replay_.store(0, std::memory_order_relaxed);
  const std::uint64_t G = global_ts_.load();
  if (G == applied_all_.load()) return;
  const std::vector<std::uint64_t> new_head = gather_batches(G);
  std::vector<Partition*> busy;
  for (auto& p : parts_) {
    if (p->batch.empty()) continue;
    std::sort(p->batch.begin(), p->batch.end(),
              [](const layout::Record& a, const layout::Record& b) { return a.ts < b.ts; });
    busy.push_back(p.get());
  }
  const unsigned writers = choose_writers(busy.size());
  last_writers_ = writers;
  ++rounds_;
  writer_sum_ += writers;
  try {
    apply_batches(busy, writers);
  } catch (...) {
    // The backend's volatile view may be half-way through an operation: refuse further work
    // (PM stays recoverable: reopening rolls back with the ULog).
    bg_error_ = std::current_exception();
    throw;
  }
  advance_heads(new_head);
  applied_all_.store(G);
  evict();
}

// Each lane's records up to G into their partitions' batches; returns each lane's new head.
std::vector<std::uint64_t> Engine::gather_batches(std::uint64_t G) {
  std::vector<std::uint64_t> new_head(lanes_.size());
  for (std::size_t l = 0; l < lanes_.size(); ++l) {
    Lane& lane = *lanes_[l];
    std::lock_guard g(lane.mu);
    std::uint64_t i = lane.head;
    for (; i < lane.tail; ++i) {
      const layout::Record& r = lane.rec[i % opt_.lane_records];
      if (r.ts > G) break;
      partition_of(r.key).batch.push_back(r);
    }
    new_head[l] = i;
  }
  return new_head;
}

// The busy partitions' batches, by `writers` threads (this one included); the first error
// any of them met is rethrown.
void Engine::apply_batches(const std::vector<Partition*>& busy, unsigned writers) {
  if (writers <= 1) {
    for (Partition* p : busy) apply_partition(*p);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr err;
  std::mutex err_mu;
  auto work = [&] {
    try {
      for (std::size_t i; (i = next.fetch_add(1)) < busy.size();) apply_partition(*busy[i]);
    } catch (...) {
      std::lock_guard g(err_mu);
      err = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned w = 1; w < writers; ++w) helpers.emplace_back(work);
  work();
  for (auto& t : helpers) t.join();
  if (err) std::rethrow_exception(err);
}

// The replayed records leave their lanes: each lane's new head, persisted.
void Engine::advance_heads(const std::vector<std::uint64_t>& new_head) {
  PhaseScope phase("commit");
  pm::CategoryScope cat(pm::Category::log);
  for (std::size_t l = 0; l < lanes_.size(); ++l) {
    Lane& lane = *lanes_[l];
    std::lock_guard g(lane.mu);
    if (lane.head == new_head[l]) continue;
    lane.head = new_head[l];
    pm::store(&lane.hdr->head, lane.head);
    pm::flush(&lane.hdr->head, 8);
  }
  pm::fence();
}

void Engine::replay_until(std::uint64_t ts) {
  while (applied_all_.load() < ts) {
    std::lock_guard g(replay_mu_);
    replay_round();
  }
}

void Engine::sync() {
  replay_until(global_ts_.load());
}

void Engine::background_loop() {
  using namespace std::chrono_literals;
  while (!stop_.load()) {
    const std::uint64_t behind = global_ts_.load() - applied_all_.load();
    if (behind == 0 || (behind < 64 && !stop_.load())) {
      std::unique_lock g(bg_mu_);
      bg_cv_.wait_for(g, behind ? 200us : 1ms, [&] { return stop_.load(); });
      if (behind == 0) continue;
    }
    try {
      std::lock_guard g(replay_mu_);
      if (bg_error_) return;
      replay_round();
    } catch (...) {
      return;  // bg_error_ holds it; the next frontend call that replays rethrows it
    }
  }
}

}  // namespace detail

void* alloc(std::size_t bytes) {
  detail::Engine* e = nullptr;
  detail::Partition& p = detail::current(e, "alloc");
  return e->alloc(p, bytes);
}
void release(void* node) {
  detail::Engine* e = nullptr;
  detail::Partition& p = detail::current(e, "release");
  e->release(p, node);
}
void will_write(const void* addr, std::size_t len) {
  detail::Engine* e = nullptr;
  detail::Partition& p = detail::current(e, "will_write");
  e->will_write(p, addr, len);
}
unsigned writers_for_ratio(double write_ratio, unsigned max_writers) {
  const double r = std::clamp(write_ratio, 0.0, 1.0);
  return std::clamp(static_cast<unsigned>(std::ceil(r * max_writers)), 1u,
                    std::max(max_writers, 1u));
}

const char* current_phase() {
  return detail::t_phase;
}

}  // namespace dptree::tips
