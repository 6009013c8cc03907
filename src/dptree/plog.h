// The write-optimized adaptive PM log of the buffer tree (§2.1, Figure 2).
//
//   LogGeometry / RecordCodec: the record format. An entry is cut into 63-bit payloads, one
//     per 64-bit word, each word carrying the validity bit in bit 0; a record never straddles
//     a cache line when it fits one, so an append costs one flush and one fence. A record
//     with any word lacking the validity bit is torn or absent.
//   LogPageCache: the two page freelists (freelist_0 / freelist_1) of §2.1, chosen by the
//     global version; thread-safe so several partition logs (§3.1) can share it.
//   PLog: one persistent list of pages (its head word is persistent; the current page and
//     offset are volatile): append, replay, hand-over of its pages after a merge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "dptree/layout.h"
#include "dptree/owner_dir.h"

namespace dptree::pm {
class Pool;
}

namespace dptree::detail {

// Page layout: a header line [0] owner slot, [1] type, [2] next page, [3] flavor (the
// validity bit every record word of a free page carries, or kDiscardFlavor), then records.
struct LogGeometry {
  std::size_t words = 0, per_line = 0, lines_per_record = 0, per_page = 0;
  void init(std::size_t entry_bytes, std::size_t page_bytes) {
    words = (entry_bytes * 8 + 62) / 63;
    std::size_t lines = (page_bytes - 64) / 64;
    if (words <= 8) {
      per_line = 8 / words;
      lines_per_record = 1;
      per_page = lines * per_line;
    } else {
      per_line = 1;
      lines_per_record = (words + 7) / 8;
      per_page = lines / lines_per_record;
    }
  }
  // Byte offset of record r inside its page.
  std::size_t offset(std::size_t r) const {
    if (lines_per_record == 1) return 64 + (r / per_line) * 64 + (r % per_line) * words * 8;
    return 64 + r * lines_per_record * 64;
  }
};

// Serialises entries of key_bytes + value_bytes (key and value in the first 8 bytes of their
// fields, zero padding) into G.words validity-bit words and back.
struct RecordCodec {
  LogGeometry G;
  std::size_t kbytes = 8, ebytes = 16;
  void init(std::size_t key_bytes, std::size_t value_bytes, std::size_t page_bytes) {
    kbytes = key_bytes;
    ebytes = key_bytes + value_bytes;
    G.init(ebytes, page_bytes);
  }
  void encode(u64 k, u64 v, u64 vbit, u64* out) const;
  // False for a torn or absent record (some word without validity bit `vbit`).
  bool decode(const u64* in, u64 vbit, u64& k, u64& v) const;
  // Whether any word of the record carries `vbit` (a torn record must be invalidated before
  // it is appended over, see PLog::replay).
  bool any_word_valid(const u64* in, u64 vbit) const;
};

// The validity bit records of the log of version `ver` carry (pages of freelist_ver hold the
// opposite bit, `ver`, in every word).
inline u64 log_valid_bit(int ver) {
  return static_cast<u64>(1 - ver);
}

class LogPageCache {
 public:
  LogPageCache(pm::Pool& pool, OwnerDir& dir, std::size_t page_bytes);
  // A page for the log of version `ver`: from freelist_ver, else a new one from the allocator
  // whose record words all carry `ver` (§2.1 caching allocation). Its next word is 0 and
  // durable. May throw pool_full (nothing changed then).
  u64 take(int ver);
  // A full page of the released log of the other version goes to freelist_ver.
  void give(int ver, u64 page);
  // Returns a page to the allocator.
  void discard(u64 page);
  // Rebuilds both freelists from the directory: every page not in `in_use` goes to the list
  // of its flavor or back to the allocator when marked kDiscardFlavor (recovery).
  void sweep(const std::unordered_set<u64>& in_use);
  // Keeps at most `want` pages cached (C_size, §2.1), dropping from the list `cv` does not use
  // first.
  void trim(std::size_t want, int cv);
  std::size_t size(int ver) const;
  std::vector<u64> pages(int ver) const;
  std::size_t dram_bytes() const;

 private:
  pm::Pool& pool_;
  OwnerDir& dir_;
  std::size_t page_bytes_;
  mutable std::mutex mu_;
  std::vector<u64> free_[2];
};

class PLog {
 public:
  // `head` is the persistent first-page word of this log (Root::log_head[ver]).
  PLog(pm::Pool& pool, const RecordCodec& codec, LogPageCache& cache);
  // Appends one record to the log whose head word is `head`, of version `ver`: one flush and
  // one fence when the record fits a line (layout above). May throw pool_full when a new
  // page is needed; the log is unchanged then.
  void append(u64* head, int ver, u64 k, u64 v);
  // Reads the log at `head` of version `ver` into fn(k, v) in order; the first torn or absent
  // record ends it and is where appending continues (it is invalidated first when torn).
  template <class F>
  void replay(u64* head, int ver, F&& fn) {
    attach(head);
    u64 vb = log_valid_bit(ver);
    for (std::size_t i = 0; i < pages_.size(); ++i) {
      page_idx_ = i;
      for (pos_ = 0; pos_ < codec_.G.per_page; ++pos_) {
        u64 k, v;
        u64* rec = record(pages_[i], pos_);
        if (!codec_.decode(rec, vb, k, v)) {
          invalidate_if_torn(rec, vb);
          return;
        }
        fn(k, v);
      }
    }
  }
  // After the merge of this log's version `old` committed: every page but the last is full
  // and goes to freelist_{1-old}; the last, mixing both bits, is made one flavor again by
  // rewriting its smaller part and goes to that flavor's freelist. The log is empty
  // afterwards. Call release_chain first.
  void hand_over(int old);
  // Marks the pages of the chain at `head` with their next flavor (or discard for the last)
  // and clears `head`, persistently. Idempotent: recovery re-runs it while *head != 0.
  static void release_chain(pm::Pool& pool, u64* head, int old);
  const std::vector<u64>& pages() const { return pages_; }
  std::size_t records() const;

 private:
  void attach(u64* head);
  u64* record(u64 page, std::size_t r) const;
  void invalidate_if_torn(u64* rec, u64 vb);
  void reuse_last_page(u64 page, std::size_t written, int old);
  pm::Pool& pool_;
  const RecordCodec& codec_;
  LogPageCache& cache_;
  std::vector<u64> pages_;  // the chain of the current log
  std::size_t page_idx_ = 0, pos_ = 0;
};

}  // namespace dptree::detail
