// TIPS frontend (TIPS paper, "Application writes are absorbed in TIPS-Frontend"): a concurrent
// open-chaining hash table in DRAM holds the newest write of each recent key; a write is
// acknowledged once its record is durable in the writer's OLog lane (2 persist barriers: the
// record, then the lane's tail). Writes of different keys run in parallel (striped locks),
// whatever the plugged-in index's own concurrency model; writes of one key are ordered by the
// key's stripe, so timestamp order per key equals acknowledgement order.
//
// Durable linearizability: a read takes the cache entry if there is one (it is the newest
// acknowledged write of the key); an entry leaves the cache only after the backend applied
// it, so a miss can read the backend.
#include <algorithm>
#include <atomic>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"
#include "format/layout.h"
#include "tips/engine.h"

namespace dptree::tips::detail {

namespace {
std::atomic<unsigned> g_thread_numbers{0};
thread_local unsigned t_thread_no = g_thread_numbers.fetch_add(1);
}  // namespace

std::uint64_t mix(std::uint64_t k) {
  return dptree::detail::hash_key(k);
}  // murmur3 finaliser

std::size_t Engine::bucket_of(Key k) const {
  return mix(k ^ 0x5bd1e995u) & bucket_mask_;
}
std::mutex& Engine::stripe_of(std::size_t bucket) const {
  return stripes_[bucket & (stripes_.size() - 1)];
}
Partition& Engine::partition_of(Key k) const {
  return *parts_[mix(k) % parts_.size()];
}
unsigned Engine::my_lane() const {
  return t_thread_no % static_cast<unsigned>(lanes_.size());
}
void Engine::count_read() {
  reads_[t_thread_no % 16].n.fetch_add(1, std::memory_order_relaxed);
}

CacheEntry* Engine::find_entry(std::size_t bucket, Key k) const {
  for (CacheEntry* e = buckets_[bucket]; e; e = e->next)
    if (e->key == k) return e;
  return nullptr;
}

std::optional<Value> Engine::backend_lookup(Key k) const {
  Partition& p = partition_of(k);
  std::shared_lock g(p.mu);
  return adapter_->lookup(p.header, k);
}

// Back-pressure: too many writes the backend has not applied yet (the cache would grow
// without bound) -> this writer replays a round itself. Called holding no lock.
void Engine::help_if_behind() {
  const std::uint64_t behind = global_ts_.load() - applied_all_.load();
  const bool inline_due =
      !opt_.background && writes_since_replay_.load(std::memory_order_relaxed) >= opt_.replay_every;
  if (!inline_due && behind < opt_.cache_entries) return;
  std::lock_guard g(replay_mu_);
  replay_round();
}

bool Engine::write(Kind kind, Key k, Value v) {
  help_if_behind();
  const std::size_t b = bucket_of(k);
  for (;;) {
    std::unique_lock sg(stripe_of(b));
    CacheEntry* e = find_entry(b, k);
    bool present;
    if (e)
      present = !e->absent;
    else if (kind == Kind::upsert)
      present = false;  // not needed for a blind write
    else
      present = backend_lookup(k).has_value();
    if ((kind == Kind::insert && present) || (kind == Kind::update && !present) ||
        (kind == Kind::remove && !present))
      return false;
    Lane& lane = *lanes_[my_lane()];
    std::unique_lock lg(lane.mu);
    if (lane.tail - lane.head >= opt_.lane_records) {  // ring full: replay, then retry
      lg.unlock();
      sg.unlock();
      std::lock_guard g(replay_mu_);
      replay_round();
      continue;
    }
    PhaseScope phase("olog_append");
    pm::CategoryScope cat(pm::Category::log);
    const std::uint64_t ts = global_ts_.fetch_add(1) + 1;
    layout::Record& r = lane.rec[lane.tail % opt_.lane_records];
    pm::store(&r, layout::Record{ts, kind == Kind::remove ? layout::kRemove : layout::kPut, k,
                                 kind == Kind::remove ? 0 : v});
    pm::persist(&r, sizeof(r));  // barrier 1: the record
    ++lane.tail;
    pm::store_release(&lane.hdr->tail, lane.tail);
    pm::persist(&lane.hdr->tail, 8);  // barrier 2: the tail; the write is durable
    lg.unlock();
    if (e) {
      e->value = v;
      e->absent = kind == Kind::remove;
      e->ts = ts;
    } else {
      buckets_[b] = new CacheEntry{k, v, ts, kind == Kind::remove, buckets_[b]};
      cache_size_.fetch_add(1, std::memory_order_relaxed);
    }
    break;
  }
  if (!opt_.background) writes_since_replay_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::optional<Value> Engine::lookup(Key k) {
  count_read();
  const std::size_t b = bucket_of(k);
  {
    std::lock_guard sg(stripe_of(b));
    if (CacheEntry* e = find_entry(b, k)) {
      if (e->absent) return std::nullopt;
      return e->value;
    }
  }
  return backend_lookup(k);
}

// A scan first makes the backend hold every write acknowledged before it began (replaying on
// this thread if needed), then merges the partitions under their shared locks.
std::size_t Engine::scan(Key start, std::size_t n, std::vector<KV>& out) {
  count_read();
  replay_until(global_ts_.load());
  std::vector<std::shared_lock<std::shared_mutex>> locks;
  for (auto& p : parts_) locks.emplace_back(p->mu);
  std::vector<KV> all;
  for (auto& p : parts_) adapter_->scan(p->header, start, n, all);
  std::sort(all.begin(), all.end());
  const std::size_t got = std::min(n, all.size());
  out.insert(out.end(), all.begin(), all.begin() + static_cast<std::ptrdiff_t>(got));
  return got;
}

// Drops clean entries (applied by the backend) until the cache is back to 7/8 of its
// capacity, walking the buckets like a clock hand. Caller holds replay_mu_.
void Engine::evict() {
  const std::size_t target = opt_.cache_entries - opt_.cache_entries / 8;
  if (cache_size_.load() <= opt_.cache_entries) return;
  const std::uint64_t applied = applied_all_.load();
  for (std::size_t step = 0; step <= bucket_mask_ && cache_size_.load() > target; ++step) {
    const std::size_t b = evict_hand_;
    evict_hand_ = (evict_hand_ + 1) & bucket_mask_;
    std::lock_guard sg(stripe_of(b));
    CacheEntry** link = &buckets_[b];
    while (CacheEntry* e = *link) {
      if (e->ts <= applied) {
        *link = e->next;
        delete e;
        cache_size_.fetch_sub(1, std::memory_order_relaxed);
      } else {
        link = &e->next;
      }
    }
  }
}

}  // namespace dptree::tips::detail
