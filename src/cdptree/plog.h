// The concurrent log of a CPBT (DPTree paper §3.1, Figure 7, Algorithm 5): hash-partitioned
// on key into N partitions, each a persistent list of log pages reached from its tail word
// in a persistent header table (one table per log version) and linked by prev pointers.
//
//   - A writer claims a record slot of the partition's tail page by fetch-and-add on the
//     page's volatile offset (not persisted: recovery finds valid records by their validity
//     bits, §2.1) and writes and persists the record: one flush and one fence.
//   - A partition lock guards only the allocation of a new tail page: the page comes from
//     the shared caching allocator (dptree's LogPageCache, freelists by validity flavor,
//     §2.1), its prev pointer is persisted, then the header slot is set and persisted (the
//     activation); a crash in between leaves an owned page that recovery's sweep caches.
//   - The size of the buffer is counted per page (line 13): approximate, no shared counter
//     on the hot path.
// Record format and validity bits are dptree's (plog.h RecordCodec). Records of one key stay
// in log order because the writer holds the OLC leaf lock of the key across its append.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/plog.h"
#include "format/layout.h"

namespace dptree::pm {
class Pool;
}

namespace dptree::cdp {

using detail::u64;

struct LogShared {
  pm::Pool& pool;
  const detail::RecordCodec& codec;
  detail::LogPageCache& cache;
  std::size_t partitions;
  std::size_t page_bytes;
};

class PartitionedLog {
 public:
  // `table` is the persistent array of `partitions` tail words of the log of version `ver`.
  PartitionedLog(const LogShared& sh, detail::LogPagePtr* table, int ver);
  PartitionedLog(const PartitionedLog&) = delete;
  PartitionedLog& operator=(const PartitionedLog&) = delete;

  int version() const { return ver_; }
  std::size_t partition_of(u64 k) const;
  // Algorithm 5. May throw Error(pool_full) when a page is needed; nothing is logged then.
  // The record's line is written back but not fenced: the caller calls fence_append() before
  // anyone can see the write (before it releases the key's leaf lock) and before it returns.
  void append(u64 k, u64 v);
  static void fence_append();
  // Records, counted per allocated page (Algorithm 5 line 13).
  std::size_t approx_size() const { return size_.load(std::memory_order_relaxed); }

  // Recovery: partition p's records in log order (head page first), fn(k, v). Torn or never
  // written slots are skipped (a concurrent log has holes; a key's records are ordered).
  // The pages are adopted as full: appends continue on a new page.
  template <class F>
  void replay_partition(std::size_t p, F&& fn) {
    auto chain = read_chain(p);
    const auto& G = sh_.codec.G;
    u64 vb = detail::log_valid_bit(ver_);
    for (u64 pg : chain) {
      std::size_t valid = 0;
      for (std::size_t r = 0; r < G.per_page; ++r) {
        u64 k, v;
        if (!sh_.codec.decode(record(pg, r), vb, k, v)) continue;
        ++valid;
        fn(k, v);
      }
      adopt(p, pg, valid == G.per_page);
    }
  }

  // After the merge of this log committed (no writer uses it): pages wholly written go to the
  // freelist of the next flavor, the others back to the allocator, and the header table is
  // cleared, persistently (flavors first, then the table).
  void release();
  // Recovery's re-run of an interrupted release of the table of version ver: pages not
  // flagged yet are discarded. Idempotent.
  static void release_table(pm::Pool& pool, detail::LogPagePtr* table, std::size_t partitions,
                            int ver, std::size_t max_pages);
  // Every page, in partition and chain order (check, sweep, stats).
  std::vector<u64> pages() const;
  // What check() verifies of each page of the log, in partition and chain order.
  struct PageState {
    u64 off;
    std::size_t claimed;  // slots handed to writers (all of an adopted page's)
    bool kept;            // release() gives it to the next flavor's freelist as it stands
  };
  // Needs quiesced writers (check): a claimed slot of a kept page then holds a whole record
  // of this log, and no unclaimed slot holds a word valid for it.
  std::vector<PageState> page_states() const;
  std::vector<u64> read_chain(std::size_t p) const;

 private:
  struct Page {
    explicit Page(u64 o, bool c) : off(o), clean(c) {}
    u64 off;
    std::atomic<u64> claim{0};
    bool clean;  // every slot written (new pages: once claimed full, writers quiesced)
  };
  struct Part {
    std::mutex mu;
    std::atomic<Page*> tail{nullptr};
    std::vector<std::unique_ptr<Page>> pages;
  };
  u64* record(u64 page, std::size_t r) const;
  // Every slot was claimed and written: release() may cache the page for the next flavor.
  bool kept(const Page& pg) const;
  void new_page(std::size_t p, Page* seen);
  void adopt(std::size_t p, u64 page, bool clean);

  const LogShared& sh_;
  detail::LogPagePtr* table_;
  int ver_;
  std::unique_ptr<Part[]> parts_;
  std::atomic<std::size_t> size_{0};
};

}  // namespace dptree::cdp
