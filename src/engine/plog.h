// The write-optimized adaptive PM log of the buffer tree (§2.1, Figure 2).
//
//   The page and record format (LogPageHeader, LogGeometry, RecordCodec) is in
//     format/log_page.h.
//   LogPageCache: the two page freelists (freelist_0 / freelist_1) of §2.1, chosen by the
//     global version; thread-safe so several partition logs (§3.1) can share it.
//   PLog: one persistent list of pages (its head word is persistent; the current page and
//     offset are volatile): append, replay, hand-over of its pages after a merge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/owner_dir.h"
#include "format/layout.h"
#include "format/log_page.h"

namespace dptree::pm {
class Pool;
}

namespace dptree::detail {

class LogPageCache {
 public:
  LogPageCache(pm::Pool& pool, OwnerDir& dir, std::size_t page_bytes);
  // A page for the log of version `ver`: from freelist_ver, else a new one from the allocator
  // whose record words all carry `ver` (§2.1 caching allocation). Its next word is 0 and
  // durable. May throw pool_full (nothing changed then).
  LogPagePtr take(int ver);
  // A full page of the released log of the other version goes to freelist_ver.
  void give(int ver, u64 page);
  // take(ver) may take a page of either freelist (the string form's logs, whose records carry
  // checksums instead of validity bits).
  void take_any_flavor() { any_flavor_ = true; }
  bool any_flavor() const { return any_flavor_; }
  // Throws pool_full unless two pages can be taken (from the freelists or the allocator;
  // those it takes are cached): a log write of a value leaves one page for removes, which
  // make room (the string form, whose pool fills with its logs' key pages).
  void require_spare(int ver);
  // Returns a page to the allocator.
  void discard(u64 page);
  // Rebuilds both freelists from the directory: every page not in `in_use` goes to the list
  // of its flavor or back to the allocator when marked kDiscardFlavor (recovery).
  void sweep(const std::unordered_set<u64>& in_use);
  // The same over `pages` (slot, page): every log page the directory owned when the open-time
  // check listed them (validate.h; recovery takes no new page before its sweep), so that the
  // sweep reads no leaf. A page its slot no longer holds is skipped.
  void sweep(const std::unordered_set<u64>& in_use, const std::vector<std::pair<u64, u64>>& pages);
  // Keeps at most `want` pages cached (C_size, §2.1), dropping from the list `cv` does not use
  // first.
  void trim(std::size_t want, int cv);
  std::size_t size(int ver) const;
  std::vector<u64> pages(int ver) const;
  std::size_t dram_bytes() const;

 private:
  // sweep()'s step for the block `blk` owned by `slot` (mu_ held).
  void sweep_block(u64 slot, u64 blk, const std::unordered_set<u64>& in_use,
                   std::vector<u64>& drop);

  pm::Pool& pool_;
  OwnerDir& dir_;
  std::size_t page_bytes_;
  bool any_flavor_ = false;
  mutable std::mutex mu_;
  std::vector<u64> free_[2];
};

class PLog {
 public:
  // `head` is the persistent first-page word of this log (Root::log_head[ver]).
  PLog(pm::Pool& pool, const RecordCodec& codec, LogPageCache& cache);
  // Appends one record to the log whose head word is `head`, of version `ver`: one flush when
  // the record fits a line (layout above), and no fence: the caller calls fence_append() before
  // it acknowledges the write, so that its other work overlaps the write-back. May throw
  // pool_full when a new page is needed; the log is unchanged then.
  void append_unfenced(LogPagePtr* head, int ver, u64 k, u64 v);
  // The fence that makes the records appended without one durable, counted as the log's.
  static void fence_append();
  // Reads the log at `head` of version `ver` into fn(k, v) in order; the first torn or absent
  // record ends it and is where appending continues (it is invalidated first when torn).
  template <class F>
  void replay(LogPagePtr* head, int ver, F&& fn) {
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
  // Word records (the string form, format/string_leaf.h), in a log whose codec has one-word
  // slots (G.words == 1): one record is `n` consecutive slots of one page. place_words gives
  // where the next record of n words goes and its page's epoch (a record that does not fit the
  // rest of its page goes to the next page, the rest of this one filled with pad words: valid,
  // payload 0, so every page but the last is full, as hand_over expects); write_words stores
  // and flushes it there, without a fence: the caller calls fence_append() before it
  // acknowledges the write. place_words may throw pool_full (nothing written then); with
  // `spare` it does unless a page is left for later writes (LogPageCache::require_spare).
  u64* place_words(LogPagePtr* head, int ver, std::size_t n, u64& epoch, bool spare);
  void write_words(u64* dst, const u64* rec, std::size_t n);
  // Reads such a log: fn(first word, n) per record, `words_of(page, first word, words left)`
  // giving a record's length in words: 0 for a pad word (the rest of the page must be pads
  // too, else the log ends at the first of them), kLogEnd for a record that is not whole (the
  // log ends there). `start_of(page)` gives the word where this log's records begin in a page
  // (0 but in one it inherited: inherit()). Nothing after the end can be a whole record
  // (appends stop at the first one not acknowledged): `stray(word)` is called for one that
  // is, a damaged pool. When pages follow the end (linked before a crash, still empty), the
  // rest of its page is padded and appending goes on in the next one.
  static constexpr std::size_t kLogEnd = ~std::size_t{0};
  template <class Len, class F, class Stray, class Start>
  void replay_words(LogPagePtr* head, int ver, Len&& words_of, F&& fn, Stray&& stray,
                    Start&& start_of) {
    attach(head);
    const u64 vb = log_valid_bit(ver);
    const std::size_t per = codec_.G.per_page;
    auto end = [&] {
      for (std::size_t i = page_idx_; i < pages_.size(); ++i)
        for (std::size_t j = i == page_idx_ ? pos_ + 1 : start_of(pages_[i]); j < per; ++j) {
          const u64* w = record(pages_[i], j);
          const std::size_t n = words_of(pages_[i], w, per - j);
          if (n != 0 && n != kLogEnd) stray(w);
        }
      end_words_replay(vb, page_idx_ + 1 < pages_.size() ? start_of(pages_[page_idx_ + 1]) : 0);
    };
    for (std::size_t i = 0; i < pages_.size(); ++i) {
      page_idx_ = i;
      for (pos_ = start_of(pages_[i]); pos_ < per;) {
        const u64* w = record(pages_[i], pos_);
        const std::size_t n = words_of(pages_[i], w, per - pos_);
        if (n == kLogEnd) return end();
        if (n == 0) {
          // Pads are flushed without a fence of their own: a crash may keep some of them. Only
          // a whole pad ends the page; the rest of a partial one was never fenced, so neither
          // was anything after it, and the log ends there.
          for (std::size_t j = pos_; j < per; ++j)
            if (*record(pages_[i], j) != vb) return end();
          pos_ = per;
          break;
        }
        fn(w, n);
        pos_ += n;
      }
    }
  }
  // A key page that a released log ended in, with room after its records (`pos`: the first
  // free word): when this log needs a page for a record that fits there, it goes on in it
  // rather than in a new page, so that a merge leaves no key page partly empty for as long as
  // a slot names a record in it. This log's records there begin
  // after a mark (format/string_leaf.h: `mark(validity bit, pool offset, page epoch)` and a
  // zero word), made durable before the page is linked. The page stays of the key flavor in the
  // log; release_chain flags it as any other, and the log may hand it on in turn (hand_over).
  struct Inherited {
    u64 page = 0;
    std::size_t pos = 0;
  };
  // The mark's words: two, so that the records after it keep the alignment to cache lines they
  // would have had had the first log gone on (a 10-word record touches two lines at an even
  // word and a quarter of the time three at an odd one).
  static constexpr std::size_t kInheritMarkWords = 2;
  using Mark = std::function<u64(u64 vbit, u64 off, u64 epoch)>;
  void inherit_with(Mark mark) { mark_ = std::move(mark); }
  void inherit(const std::vector<Inherited>& pages) {
    offers_.insert(offers_.end(), pages.begin(), pages.end());
  }
  std::size_t offers_taken() const { return offers_taken_; }
  // The pages given to inherit() and not taken yet, given up.
  std::vector<Inherited> take_offers() { return std::exchange(offers_, {}); }
  // The pages given to inherit() and not taken yet.
  std::vector<u64> offered() const {
    std::vector<u64> out;
    for (const Inherited& o : offers_) out.push_back(o.page);
    return out;
  }
  // After the merge of this log's version `old` committed: every page but the last is full
  // and goes to freelist_{1-old}; the last, mixing both bits, is made one flavor again by
  // rewriting its smaller part and goes to that flavor's freelist. A page `keep` names (a
  // string form's key page) goes to neither. The log is empty afterwards. Call release_chain
  // first.
  // With inherit_with(), returns the pages the next log may inherit (inherit()): the last page
  // when `keep` names it and it has room, and the pages given to this log that it did not
  // take and `keep` still names (one `keep` no longer names is freed), at most kMaxOffers,
  // those with the most room (the others stay key pages as they are). When merges take as
  // long as the writers take to fill the Front, as with two writers on two cores, a Front is
  // full before its offers come, and the next one takes them.
  using KeepPage = std::function<bool(u64 page)>;
  static constexpr std::size_t kMaxOffers = 4;
  std::vector<Inherited> hand_over(int old, const KeepPage& keep = {});
  // Marks the pages of the chain at `head` with their next flavor (or discard for the last;
  // kKeyFlavor for a page `keep` names) and clears `head`, persistently. Idempotent: recovery
  // re-runs it while *head is not null.
  static void release_chain(pm::Pool& pool, LogPagePtr* head, int old, const KeepPage& keep = {});
  const std::vector<u64>& pages() const { return pages_; }
  std::size_t records() const;
  pm::Pool& pool() const { return pool_; }

 private:
  void attach(const LogPagePtr* head);
  void next_page(LogPagePtr* head, int ver, std::size_t words = 0);
  bool take_offer(LogPagePtr* head, int ver, std::size_t words);
  void pad_rest(u64 vb);
  void end_words_replay(u64 vb, std::size_t next_pos);
  u64* record(u64 page, std::size_t r) const;
  void invalidate_if_torn(u64* rec, u64 vb);
  void reuse_last_page(u64 page, std::size_t written, int old);
  pm::Pool& pool_;
  const RecordCodec& codec_;
  LogPageCache& cache_;
  std::vector<u64> pages_;  // the chain of the current log (offsets of its pages)
  std::size_t page_idx_ = 0, pos_ = 0;
  Mark mark_;                      // set: this log inherits pages (inherit_with())
  std::vector<Inherited> offers_;  // pages this log may go on in (inherit())
  std::size_t offers_taken_ = 0;   // inherit()'s pages this log went on in
};

}  // namespace dptree::detail
