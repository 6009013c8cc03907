// The sharded buffer of the concurrent string form (string_buffer.h).
#include "cdptree/string_buffer.h"

#include <algorithm>

#include "cdptree/loser_tree.h"
#include "cdptree/phase.h"
#include "dptree/pm/pool.h"

namespace dptree::cdp {

using namespace detail;  // NOLINT: the layout vocabulary

namespace {
// The order of a shard run's entries: their BufferKeys' (prefixes decide most compares).
struct ByKey {
  template <class Entry>
  bool operator()(const Entry& a, const Entry& b) const {
    return BufferKeyLess{}(a.first, b.first);
  }
};
}  // namespace

StringBuffer::StringBuffer(pm::Pool& pool, const RecordCodec& codec, LogPageCache& cache,
                           detail::LogPagePtr* table, int ver, std::size_t shards,
                           std::size_t expected, double bloom_error)
    : pool_(pool),
      codec_(codec),
      table_(table),
      ver_(ver),
      n_(shards),
      shards_(std::make_unique<Shard[]>(shards)),
      bloom_(shards, expected, bloom_error) {
  for (std::size_t p = 0; p < n_; ++p) {
    shards_[p].log = std::make_unique<PLog>(pool, codec, cache);
    shards_[p].log->inherit_with(encode_inherit_mark);
  }
}

u64 StringBuffer::append(Shard& s, std::size_t p, std::string_view k, u64 v) {
  PhaseScope ph(CDPTreePhase::log_append);
  return append_string_record(*s.log, &table_[p], ver_, k, v);
}

u64 StringBuffer::append_unfenced(Shard& s, std::size_t p, std::string_view k, u64 v) {
  PhaseScope ph(CDPTreePhase::log_append);
  return append_string_record_unfenced(*s.log, &table_[p], ver_, k, v);
}

void StringBuffer::replay(std::size_t p, const char* tree) {
  Shard& s = shards_[p];
  auto words_of = [&](u64 page, const u64* w, std::size_t room) {
    return replayed_record_words(pool_, page, w, room, ver_);
  };
  const std::size_t per = codec_.G.per_page;
  auto start_of = [&](u64 page) {
    return inherited_start(pool_, page, pool_.at<u64>(page + codec_.G.offset(0)), per);
  };
  std::unique_lock lk(s.mu);
  s.log->replay_words(
      &table_[p], ver_, words_of,
      [&](const u64* w, std::size_t) {
        const std::string_view k = string_record_key(w);
        bloom_.add_hashed(p, hash_string(k));
        *detail::find_or_add(s.tree, s.keys, k).first =
            StringSlot{string_record_value(w), pool_.offset_of(w)};
      },
      [&](const u64* w) { throw_record_after_end(pool_, tree, w); }, start_of);
}

// Each shard gives its first `per` entries >= start (one lock at a time), copied as BufferKeys:
// their bytes stay in the shard's arena while the buffer lives, so nothing is allocated for
// the entries that are not returned. Hashing spreads every key range over the shards evenly,
// so about n / shards of a shard's entries are among the n smallest, and `per` takes four
// times that. The runs are merged (a loser tree) up to n entries, but not past `bound`, the
// lowest last entry of a shard that has more: that shard's later keys were not read.
bool StringBuffer::collect(std::string_view start, std::size_t n, StringEntries& out) const {
  using Entry = std::pair<BufferKey, u64>;
  const std::size_t per = std::min(n, 4 * n / n_ + 4);
  const BufferKeyLess less;
  const BufferKey from = BufferKey::of(start);
  std::vector<Entry> got;
  got.reserve(n_ * per);  // not reallocated: the runs point into it
  std::vector<std::pair<const Entry*, const Entry*>> runs;
  std::optional<BufferKey> bound;
  for (std::size_t p = 0; p < n_; ++p) {
    const Shard& s = shards_[p];
    const std::size_t b = got.size();
    std::shared_lock lk(s.mu);
    auto it = s.tree.lower_bound(from);
    for (; it.valid() && got.size() - b < per; ++it) got.emplace_back(it.key(), it.value().value);
    if (it.valid() && (!bound || less(got.back().first, *bound))) bound = got.back().first;
    if (got.size() > b) runs.emplace_back(got.data() + b, got.data() + got.size());
  }
  LoserTree<Entry, ByKey> merged(std::move(runs), ByKey{});
  for (std::size_t taken = 0; !merged.empty(); merged.pop(), ++taken) {
    const Entry& e = merged.top();
    if (taken == n || (bound && less(*bound, e.first))) return false;
    out.emplace_back(std::string(e.first.view()), e.second);
  }
  return !bound;
}

// Each shard's entries in key order (read under its lock), then merged on a loser tree of the
// shards' next keys: log2(shards) compares an entry instead of a sort's log2(entries). The
// keys are BufferKeys, whose prefixes decide most compares; the entries name their bytes in
// the shards' arenas, which live as long as this buffer (no key's bytes move or are freed
// before).
BufferedEntries StringBuffer::entries() const {
  using Entry = std::pair<BufferKey, StringSlot>;
  std::vector<std::vector<Entry>> runs(n_);
  std::vector<std::pair<const Entry*, const Entry*>> spans;
  std::size_t total = 0;
  for (std::size_t p = 0; p < n_; ++p) {
    std::shared_lock lk(shards_[p].mu);
    const ShardTree& t = shards_[p].tree;
    runs[p].reserve(t.size());
    for (auto it = t.begin(); it.valid(); ++it) runs[p].emplace_back(it.key(), it.value());
    spans.emplace_back(runs[p].data(), runs[p].data() + runs[p].size());
    total += runs[p].size();
  }
  BufferedEntries all;
  all.reserve(total);
  for (LoserTree<Entry, ByKey> merged(std::move(spans), ByKey{}); !merged.empty(); merged.pop())
    all.emplace_back(merged.top().first.view(), merged.top().second);
  return all;
}

std::size_t StringBuffer::size() const {
  std::size_t n = 0;
  for (std::size_t p = 0; p < n_; ++p) {
    std::shared_lock lk(shards_[p].mu);
    n += shards_[p].tree.size();
  }
  return n;
}

std::vector<u64> StringBuffer::all_log_pages() const {
  std::vector<u64> out;
  for (std::size_t p = 0; p < n_; ++p) {
    std::shared_lock lk(shards_[p].mu);  // a writer may be linking a page
    out.insert(out.end(), shards_[p].log->pages().begin(), shards_[p].log->pages().end());
  }
  return out;
}

std::vector<u64> StringBuffer::live_log_pages() const {
  std::vector<u64> out;
  for (std::size_t p = 0; p < n_; ++p) {
    std::shared_lock lk(shards_[p].mu);
    const PLog& log = *shards_[p].log;
    out.insert(out.end(), log.pages().begin(), log.pages().end());
    for (u64 pg : log.offered()) out.push_back(pg);
  }
  return out;
}

std::vector<std::vector<PLog::Inherited>> StringBuffer::take_offers() {
  std::vector<std::vector<PLog::Inherited>> out(n_);
  for (std::size_t p = 0; p < n_; ++p) {
    std::unique_lock lk(shards_[p].mu);
    out[p] = shards_[p].log->take_offers();
  }
  return out;
}

std::vector<u64> StringBuffer::offered_pages() const {
  std::vector<u64> out;
  for (std::size_t p = 0; p < n_; ++p)
    for (u64 pg : shards_[p].log->offered()) out.push_back(pg);
  return out;
}

std::size_t StringBuffer::offers_taken() const {
  std::size_t n = 0;
  for (std::size_t p = 0; p < n_; ++p) n += shards_[p].log->offers_taken();
  return n;
}

std::vector<std::vector<PLog::Inherited>> StringBuffer::release_logs(const PLog::KeepPage& keep) {
  PhaseScope ph(CDPTreePhase::log_release);
  std::vector<std::vector<PLog::Inherited>> last(n_);
  for (std::size_t p = 0; p < n_; ++p) {
    if (table_[p]) PLog::release_chain(pool_, &table_[p], ver_, keep);
    last[p] = shards_[p].log->hand_over(ver_, keep);
  }
  return last;
}

void StringBuffer::inherit(const std::vector<std::vector<PLog::Inherited>>& pages) {
  for (std::size_t p = 0; p < n_ && p < pages.size(); ++p) {
    if (pages[p].empty()) continue;
    std::unique_lock lk(shards_[p].mu);
    shards_[p].log->inherit(pages[p]);
  }
}

std::size_t StringBuffer::dram_bytes() const {
  std::size_t b = bloom_.dram_bytes() + n_ * sizeof(Shard);
  for (std::size_t p = 0; p < n_; ++p) {
    std::shared_lock lk(shards_[p].mu);
    const ShardTree& t = shards_[p].tree;
    b += t.memory_bytes() - sizeof(t);  // the nodes (the tree object is in the Shard)
    b += shards_[p].keys.bytes();
  }
  return b;
}

}  // namespace dptree::cdp
