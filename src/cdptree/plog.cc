// The partitioned concurrent log (§3.1, Algorithm 5); see plog.h.
#include "cdptree/plog.h"

#include <algorithm>
#include <cstring>

#include "cdptree/phase.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"

namespace dptree::cdp {

using detail::hash_key;

PartitionedLog::PartitionedLog(const LogShared& sh, detail::LogPagePtr* table, int ver)
    : sh_(sh), table_(table), ver_(ver), parts_(new Part[sh.partitions]) {}

std::size_t PartitionedLog::partition_of(u64 k) const {
  // A different mix from the bloom filter's and the leaves' (hash_key): rotate first.
  return static_cast<std::size_t>(hash_key(k ^ 0x9e3779b97f4a7c15ull) % sh_.partitions);
}

u64* PartitionedLog::record(u64 page, std::size_t r) const {
  return sh_.pool.at<u64>(page + sh_.codec.G.offset(r));
}

void PartitionedLog::append(u64 k, u64 v) {
  PhaseScope ph(CDPTreePhase::log_append);
  pm::CategoryScope cat(pm::Category::log);
  const std::size_t p = partition_of(k);
  const auto& G = sh_.codec.G;
  u64 rec[16];
  sh_.codec.encode(k, v, detail::log_valid_bit(ver_), rec);
  for (;;) {
    Page* t = parts_[p].tail.load(std::memory_order_acquire);  // line 2
    if (t) {
      u64 slot = t->claim.fetch_add(1, std::memory_order_relaxed);  // line 4
      if (slot < G.per_page) {                                      // line 5
        u64* dst = record(t->off, slot);
        pm::store_bytes(dst, rec, G.words * 8);
        pm::flush(dst, G.words * 8);  // line 6: one line; its fence is fence_append()
        return;
      }
    }
    new_page(p, t);  // lines 8-14
  }
}

void PartitionedLog::fence_append() {
  PhaseScope ph(CDPTreePhase::log_append);
  pm::CategoryScope cat(pm::Category::log);  // as when append() fenced its record itself
  pm::fence();
}

void PartitionedLog::new_page(std::size_t p, Page* seen) {
  PhaseScope ph(CDPTreePhase::log_page);
  Part& P = parts_[p];
  std::lock_guard g(P.mu);                                     // line 8
  if (P.tail.load(std::memory_order_relaxed) != seen) return;  // another writer did it
  detail::LogPagePtr pg = sh_.cache.take(ver_);                // line 9: reserve (cached)
  auto* h = sh_.pool.get(pg);
  pm::store(&h->next, seen ? detail::LogPagePtr(seen->off) : detail::LogPagePtr::null());  // prev
  pm::persist(&h->next, 8);   // line 10
  pm::store(&table_[p], pg);  // line 11: activate as the partition's tail
  pm::persist(&table_[p], 8);
  P.pages.push_back(std::make_unique<Page>(pg.off, true));
  P.tail.store(P.pages.back().get(), std::memory_order_release);
  size_.fetch_add(sh_.codec.G.per_page, std::memory_order_relaxed);  // line 13
}

void PartitionedLog::adopt(std::size_t p, u64 page, bool clean) {
  Part& P = parts_[p];
  std::lock_guard g(P.mu);
  P.pages.push_back(std::make_unique<Page>(page, clean));
  P.pages.back()->claim.store(sh_.codec.G.per_page, std::memory_order_relaxed);
  P.tail.store(P.pages.back().get(), std::memory_order_release);
  size_.fetch_add(sh_.codec.G.per_page, std::memory_order_relaxed);
}

std::vector<u64> PartitionedLog::read_chain(std::size_t p) const {
  std::vector<u64> chain;
  const std::size_t limit = sh_.pool.size() / sh_.page_bytes + 1;
  for (detail::LogPagePtr pg = table_[p]; pg && chain.size() <= limit;
       pg = sh_.pool.resolve(pg, "a log partition's page link")->next)
    chain.push_back(pg.off);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

bool PartitionedLog::kept(const Page& pg) const {
  return pg.clean && pg.claim.load(std::memory_order_relaxed) >= sh_.codec.G.per_page;
}

std::vector<PartitionedLog::PageState> PartitionedLog::page_states() const {
  std::vector<PageState> out;
  for (std::size_t p = 0; p < sh_.partitions; ++p) {
    std::lock_guard g(parts_[p].mu);
    for (auto& pg : parts_[p].pages)
      out.push_back(PageState{
          pg->off,
          std::min<std::size_t>(pg->claim.load(std::memory_order_relaxed), sh_.codec.G.per_page),
          kept(*pg)});
  }
  return out;
}

std::vector<u64> PartitionedLog::pages() const {
  std::vector<u64> out;
  for (std::size_t p = 0; p < sh_.partitions; ++p) {
    std::lock_guard g(parts_[p].mu);
    for (auto& pg : parts_[p].pages) out.push_back(pg->off);
  }
  return out;
}

void PartitionedLog::release() {
  PhaseScope ph(CDPTreePhase::log_release);
  pm::CategoryScope cat(pm::Category::log);
  std::vector<std::pair<u64, bool>> all;  // page, goes to the freelist
  for (std::size_t p = 0; p < sh_.partitions; ++p) {
    std::lock_guard g(parts_[p].mu);
    for (auto& pg : parts_[p].pages) {
      bool keep = kept(*pg);
      auto* h = sh_.pool.at<detail::LogPageHeader>(pg->off);
      pm::store(&h->flavor, keep ? static_cast<u64>(1 - ver_) : detail::kDiscardFlavor);
      pm::flush(&h->flavor, 8);
      all.emplace_back(pg->off, keep);
    }
    parts_[p].pages.clear();
    parts_[p].tail.store(nullptr, std::memory_order_release);
  }
  pm::fence();
  for (std::size_t p = 0; p < sh_.partitions; ++p) {
    pm::store(&table_[p], detail::LogPagePtr::null());
    pm::flush(&table_[p], 8);
  }
  pm::fence();
  for (auto [pg, keep] : all) {
    if (keep)
      sh_.cache.give(1 - ver_, pg);
    else
      sh_.cache.discard(pg);
  }
  size_.store(0, std::memory_order_relaxed);
}

void PartitionedLog::release_table(pm::Pool& pool, detail::LogPagePtr* table,
                                   std::size_t partitions, int ver, std::size_t max_pages) {
  PhaseScope ph(CDPTreePhase::log_release);
  pm::CategoryScope cat(pm::Category::log);
  for (std::size_t p = 0; p < partitions; ++p) {
    std::size_t n = 0;
    detail::LogPageHeader* h = nullptr;
    for (detail::LogPagePtr pg = table[p]; pg && n <= max_pages; pg = h->next, ++n) {
      h = pool.resolve(pg, "a released log partition's page link");
      if (h->flavor == static_cast<u64>(ver)) {
        pm::store(&h->flavor, detail::kDiscardFlavor);
        pm::flush(&h->flavor, 8);
      }
    }
  }
  pm::fence();
  for (std::size_t p = 0; p < partitions; ++p) {
    if (!table[p]) continue;
    pm::store(&table[p], detail::LogPagePtr::null());
    pm::flush(&table[p], 8);
  }
  pm::fence();
}

}  // namespace dptree::cdp
