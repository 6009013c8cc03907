// The write-optimized adaptive PM log (§2.1); see plog.h.
#include "engine/plog.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"

namespace dptree::detail {

// ------------------------------------------------------------------ LogPageCache
LogPageCache::LogPageCache(pm::Pool& pool, OwnerDir& dir, std::size_t page_bytes)
    : pool_(pool), dir_(dir), page_bytes_(page_bytes) {}

LogPagePtr LogPageCache::take(int ver) {
  {
    std::lock_guard g(mu_);
    // A string log's records are told apart by checksums, not by the words' validity bits, so
    // it takes a page of either flavor.
    const int from = !free_[ver].empty() || !any_flavor_ ? ver : 1 - ver;
    if (!free_[from].empty()) {
      LogPagePtr pg(free_[from].back());
      free_[from].pop_back();
      auto* h = pool_.get(pg);
      pm::store(&h->next, LogPagePtr::null());  // the old link must not reach PM after the new one
      pm::store(&h->flavor, static_cast<u64>(ver));
      u64* epoch = pool_.at<u64>(pg.off + kPageEpochOffset);
      pm::store(epoch, *epoch + 1);  // same line: one write-back
      pm::persist(&h->next, kPageEpochOffset + 8 - offsetof(LogPageHeader, next));
      return pg;
    }
  }
  u64 slot = dir_.take_slot();
  u64 pg;
  try {
    pm::CategoryScope cat(pm::Category::alloc);
    pg = pool_.allocator().reserve(page_bytes_);
  } catch (...) {
    dir_.return_slot(slot);
    throw;
  }
  u64* w = pool_.at<u64>(pg);
  const LogPageHeader h{OwnerSlotPtr(slot), kPageType, LogPagePtr::null(), static_cast<u64>(ver)};
  if (any_flavor_) {
    // A string log's page needs its header line only: a random epoch makes every record an
    // earlier life of this block left there fail its checksum (format/string_leaf.h).
    thread_local std::mt19937_64 rng{std::random_device{}()};
    u64 line[8] = {};
    std::memcpy(line, &h, sizeof h);
    line[kPageEpochOffset / 8] = rng();
    pm::store_bytes(w, line, sizeof line);
    pm::flush(w, sizeof line);
  } else {
    std::vector<u64> init(page_bytes_ / 8, static_cast<u64>(ver));
    std::memcpy(init.data(), &h, sizeof h);
    pm::store_bytes(w, init.data(), page_bytes_);
    pm::flush(w, page_bytes_);
  }
  pm::CategoryScope cat(pm::Category::alloc);
  pool_.allocator().activate(pool_.get(OwnerSlotPtr(slot))->word(), pg);
  return LogPagePtr(pg);
}

void LogPageCache::require_spare(int ver) {
  {
    std::lock_guard g(mu_);
    if (free_[ver].size() + (any_flavor_ ? free_[1 - ver].size() : 0) >= 2) return;
  }
  // Two pages must be at hand: the one the caller takes next and one more. Taking them both
  // from the allocator (or the cache) and caching them again changes nothing the log reads.
  std::vector<LogPagePtr> got;
  try {
    while (got.size() < 2) got.push_back(take(ver));
  } catch (...) {
    for (LogPagePtr pg : got) give(ver, pg.off);
    throw;
  }
  for (LogPagePtr pg : got) give(ver, pg.off);
}

void LogPageCache::give(int ver, u64 page) {
  std::lock_guard g(mu_);
  free_[ver].push_back(page);
}

void LogPageCache::discard(u64 page) {
  dir_.free_owned(pool_.at<LogPageHeader>(page)->owner_slot.off);
}

void LogPageCache::sweep_block(u64 slot, u64 blk, const std::unordered_set<u64>& in_use,
                               std::vector<u64>& drop) {
  const auto* h = pool_.at<LogPageHeader>(blk);
  if (h->type != kPageType || in_use.contains(blk)) return;
  u64 fl = h->flavor;
  if (fl <= 1)
    free_[fl].push_back(blk);
  else
    drop.push_back(slot);
}

void LogPageCache::sweep(const std::unordered_set<u64>& in_use) {
  std::vector<u64> drop;
  {
    std::lock_guard g(mu_);
    free_[0].clear();
    free_[1].clear();
    dir_.for_each_owned([&](u64 slot, u64 blk) { sweep_block(slot, blk, in_use, drop); });
  }
  for (u64 s : drop) dir_.free_owned(s);
}

void LogPageCache::sweep(const std::unordered_set<u64>& in_use,
                         const std::vector<std::pair<u64, u64>>& pages) {
  std::vector<u64> drop;
  {
    std::lock_guard g(mu_);
    free_[0].clear();
    free_[1].clear();
    for (auto [slot, blk] : pages)
      if (pool_.get(OwnerSlotPtr(slot))->off == blk) sweep_block(slot, blk, in_use, drop);
  }
  for (u64 s : drop) dir_.free_owned(s);
}

void LogPageCache::trim(std::size_t want, int cv) {
  std::vector<u64> drop;
  {
    std::lock_guard g(mu_);
    int spare = 1 - cv;  // the list the next log does not use goes first
    for (int l : {spare, 1 - spare})
      while (free_[0].size() + free_[1].size() > want && !free_[l].empty()) {
        drop.push_back(free_[l].back());
        free_[l].pop_back();
      }
  }
  for (u64 pg : drop) discard(pg);
}

std::size_t LogPageCache::size(int ver) const {
  std::lock_guard g(mu_);
  return free_[ver].size();
}

std::vector<u64> LogPageCache::pages(int ver) const {
  std::lock_guard g(mu_);
  return free_[ver];
}

std::size_t LogPageCache::dram_bytes() const {
  std::lock_guard g(mu_);
  return 8 * (free_[0].capacity() + free_[1].capacity());
}

// ------------------------------------------------------------------ PLog
PLog::PLog(pm::Pool& pool, const RecordCodec& codec, LogPageCache& cache)
    : pool_(pool), codec_(codec), cache_(cache) {}

u64* PLog::record(u64 page, std::size_t r) const {
  return pool_.at<u64>(page + codec_.G.offset(r));
}

void PLog::attach(const LogPagePtr* head) {
  pages_.clear();
  // Recovery's walk: the open-time validation vouched for ownership and no cycle.
  for (LogPagePtr pg = *head; pg; pg = pool_.resolve(pg, "a log page link")->next)
    pages_.push_back(pg.off);
  page_idx_ = 0;
  pos_ = 0;
}

void PLog::invalidate_if_torn(u64* rec, u64 vb) {
  // Some words of a torn record may carry the validity bit. Appending over it could then mix
  // them with a new record torn by a later crash into a "valid" record: invalidate them all.
  if (!codec_.any_word_valid(rec, vb)) return;
  pm::CategoryScope cat(pm::Category::log);
  u64 invalid[16];
  std::fill(invalid, invalid + codec_.G.words, 1 - vb);
  pm::store_bytes(rec, invalid, codec_.G.words * 8);
  pm::persist(rec, codec_.G.words * 8);
}

void PLog::append_unfenced(LogPagePtr* head, int ver, u64 k, u64 v) {
  pm::CategoryScope cat(pm::Category::log);
  if (pages_.empty() || pos_ == codec_.G.per_page) next_page(head, ver);
  u64 rec[16];
  codec_.encode(k, v, log_valid_bit(ver), rec);
  u64* dst = record(pages_[page_idx_], pos_);
  pm::store_bytes(dst, rec, codec_.G.words * 8);
  pm::flush(dst, codec_.G.words * 8);  // one line (LogGeometry); the caller fences
  ++pos_;
}

void PLog::next_page(LogPagePtr* head, int ver, std::size_t words) {
  if (!pages_.empty() && page_idx_ + 1 < pages_.size()) {
    ++page_idx_;  // a page linked before a crash, still empty
  } else if (words && take_offer(head, ver, words)) {
    return;
  } else {
    LogPagePtr pg = cache_.take(ver);
    LogPagePtr* link = pages_.empty() ? head : &pool_.get(LogPagePtr(pages_.back()))->next;
    pm::store(link, pg);
    pm::persist(link, 8);
    pages_.push_back(pg.off);
    page_idx_ = pages_.size() - 1;
  }
  pos_ = 0;
}

// Goes on in the inherited page with the most room, if its mark and a record of `words` fit:
// the mark made durable first (a log's records there begin after its mark), then the link.
// No page taken or initialised: the header stays as the first log left it (next null, the
// epoch the records there were written under).
bool PLog::take_offer(LogPagePtr* head, int ver, std::size_t words) {
  const std::size_t per = codec_.G.per_page;
  auto best =
      std::min_element(offers_.begin(), offers_.end(),
                       [](const Inherited& a, const Inherited& b) { return a.pos < b.pos; });
  if (!mark_ || best == offers_.end() || best->pos + kInheritMarkWords + words > per) return false;
  const Inherited pg = *best;
  offers_.erase(best);
  u64* m = record(pg.page, pg.pos);
  pm::store(
      m, mark_(log_valid_bit(ver), pool_.offset_of(m), *pool_.at<u64>(pg.page + kPageEpochOffset)));
  pm::store(m + 1, u64{0});
  pm::persist(m, 8 * kInheritMarkWords);
  LogPagePtr* link = pages_.empty() ? head : &pool_.get(LogPagePtr(pages_.back()))->next;
  pm::store(link, LogPagePtr(pg.page));
  pm::persist(link, 8);
  pages_.push_back(pg.page);
  ++offers_taken_;
  page_idx_ = pages_.size() - 1;
  pos_ = pg.pos + kInheritMarkWords;
  return true;
}

void PLog::fence_append() {
  pm::CategoryScope cat(pm::Category::log);
  pm::fence();
}

u64* PLog::place_words(LogPagePtr* head, int ver, std::size_t n, u64& epoch, bool spare) {
  pm::CategoryScope cat(pm::Category::log);
  if (pages_.empty() || pos_ + n > codec_.G.per_page) {
    if (spare && !(page_idx_ + 1 < pages_.size())) cache_.require_spare(ver);
    if (!pages_.empty()) pad_rest(log_valid_bit(ver));  // durable with the next fence
    next_page(head, ver, n);
  }
  epoch = *pool_.at<u64>(pages_[page_idx_] + kPageEpochOffset);
  return record(pages_[page_idx_], pos_);
}

void PLog::write_words(u64* dst, const u64* rec, std::size_t n) {
  pm::CategoryScope cat(pm::Category::log);
  pm::store_bytes(dst, rec, n * 8);
  pm::flush(dst, n * 8);
  pos_ += n;
}

// Pad words from pos_ to the end of the current page (flushed, no fence).
void PLog::pad_rest(u64 vb) {
  const std::size_t per = codec_.G.per_page;
  if (pos_ >= per) return;
  u64* from = record(pages_[page_idx_], pos_);
  for (std::size_t r = pos_; r < per; ++r) pm::store(record(pages_[page_idx_], r), vb);
  pm::flush(from, (per - pos_) * 8);
  pos_ = per;
}

// The log ends at (page_idx_, pos_). The words after it need no clearing: a string record's
// checksum binds its header to its bytes, its offset and its page's epoch, so a later record
// torn over them cannot pass for a whole one (docs/dptree.md "String keys"). When pages follow
// (linked before a crash, still empty), this page is padded to its end and appending goes on
// in the next one (after its inherited records: next_pos), so that every page but the last
// stays full.
void PLog::end_words_replay(u64 vb, std::size_t next_pos) {
  if (page_idx_ + 1 >= pages_.size()) return;
  pm::CategoryScope cat(pm::Category::log);
  pad_rest(vb);
  pm::fence();
  ++page_idx_;
  pos_ = next_pos;
}

void PLog::release_chain(pm::Pool& pool, LogPagePtr* head, int old, const KeepPage& keep) {
  pm::CategoryScope cat(pm::Category::log);
  std::vector<LogPageHeader*> pages;
  for (LogPagePtr pg = *head; pg; pg = pages.back()->next)
    pages.push_back(pool.resolve(pg, "a released log page link"));
  if (pages.empty()) return;
  for (std::size_t i = 0; i < pages.size(); ++i) {
    LogPageHeader* h = pages[i];
    const u64 next = i + 1 < pages.size() ? static_cast<u64>(1 - old) : kDiscardFlavor;
    pm::store(&h->flavor, keep && keep(pool.offset_of(h)) ? kKeyFlavor : next);
    pm::flush(&h->flavor, 8);
  }
  pm::fence();
  pm::store(head, LogPagePtr::null());
  pm::persist(head, 8);
}

std::vector<PLog::Inherited> PLog::hand_over(int old, const KeepPage& keep) {
  std::vector<u64> pages = std::move(pages_);
  std::size_t written = page_idx_ + 1 == pages.size() ? pos_ : 0;  // words used in the last page
  auto kept = [&](u64 pg) { return keep && keep(pg); };
  // Offers not taken go on to the next log while a slot names them; one no slot names any
  // more is garbage.
  std::vector<Inherited> next;
  for (const Inherited& o : offers_)
    if (kept(o.page))
      next.push_back(o);
    else
      cache_.discard(o.page);
  pages_.clear();
  offers_.clear();
  page_idx_ = pos_ = 0;
  for (std::size_t i = 0; i + 1 < pages.size(); ++i)
    if (!kept(pages[i])) cache_.give(1 - old, pages[i]);
  if (!pages.empty() && !kept(pages.back())) reuse_last_page(pages.back(), written, old);
  // Room for a mark and the shortest record (3 words: format/string_leaf.h).
  else if (mark_ && !pages.empty() && written > 0 &&
           written + kInheritMarkWords + 3 <= codec_.G.per_page)
    next.push_back(Inherited{pages.back(), written});
  // The pages with the most room, a few: the rest stay key pages as they are.
  std::sort(next.begin(), next.end(),
            [](const Inherited& a, const Inherited& b) { return a.pos < b.pos; });
  if (next.size() > kMaxOffers) next.resize(kMaxOffers);
  return next;
}

// The last page mixes records of the released log (bit 1 - old) with unwritten words (bit
// old). Rather than give it back and initialise a new page (a whole page of flushes), make
// it one flavor again by rewriting the cheaper part: the unwritten records with 1 - old (for
// freelist_{1-old}) or the written ones with old (for freelist_old). Its flavor word says
// "discard" (release_chain) until the rewrite is durable, so a crash in between frees it.
void PLog::reuse_last_page(u64 page, std::size_t written, int old) {
  pm::CategoryScope cat(pm::Category::log);
  if (cache_.any_flavor()) {  // a string log's page is taken as it is (checksums, epochs)
    auto* h = pool_.at<LogPageHeader>(page);
    pm::store(&h->flavor, static_cast<u64>(1 - old));
    pm::persist(&h->flavor, 8);
    cache_.give(1 - old, page);
    return;
  }
  const LogGeometry& G = codec_.G;
  auto line_of = [&](std::size_t r) { return G.offset(r) / 64; };
  std::size_t lines_written = written ? line_of(written - 1) + G.lines_per_record : 0;
  std::size_t first_free_line =
      written < G.per_page ? line_of(written) : line_of(G.per_page - 1) + 1;
  std::size_t lines_total = line_of(G.per_page - 1) + G.lines_per_record;
  bool fill_rest = lines_total - first_free_line <= lines_written;
  u64 bit = fill_rest ? static_cast<u64>(1 - old) : static_cast<u64>(old);
  std::size_t from = fill_rest ? written : 0, to = fill_rest ? G.per_page : written;
  u64 filler[16];
  std::fill(filler, filler + G.words, bit);
  for (std::size_t r = from; r < to; ++r) pm::store_bytes(record(page, r), filler, G.words * 8);
  if (from < to) {
    const std::byte* a = pool_.at(page + G.offset(from));
    const std::byte* b = pool_.at(page + G.offset(to - 1)) + G.words * 8;
    pm::flush(a, static_cast<std::size_t>(b - a));
    pm::fence();
  }
  auto* h = pool_.at<LogPageHeader>(page);
  pm::store(&h->flavor, bit);
  pm::persist(&h->flavor, 8);
  cache_.give(static_cast<int>(bit), page);
}

std::size_t PLog::records() const {
  if (pages_.empty()) return 0;
  return page_idx_ * codec_.G.per_page + pos_;
}

}  // namespace dptree::detail
