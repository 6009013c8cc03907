// The merge of DPTree's string form (string_tree.h): its buffer merged into the leaves in
// key-ordered parts, each a whole merge cycle (begin, the string leaf merge both string forms
// share, engine/string_merge.cc, flip, garbage collection), and the key pages a flip leaves
// unnamed freed.
#include <algorithm>
#include <memory>
#include <span>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/testing/phases.h"
#include "engine/merge.h"
#include "engine/phase.h"
#include "engine/string_base.h"
#include "st/string_tree.h"

namespace dptree::detail {

namespace {
using Span = BufferedSpan;

// Appends a record of each of `es` to the log at `head` of version `ver`; `recs` gets their
// offsets. May throw pool_full.
void log_entries(PLog& log, LogPagePtr* head, int ver, Span es, std::vector<u64>& recs) {
  PhaseScope ph(DPTreePhase::log_append);
  for (const auto& [k, s] : es) recs.push_back(append_string_record(log, head, ver, k, s.value));
}
}  // namespace

// §2.3 over the buffer. A merge writes the new leaves of its splits before the flip frees the
// leaves they replace, so it needs room for them. When it does not fit, the
// buffer is merged in key-ordered parts, each a whole merge cycle (merge_part), halving the
// part until one fits: in a pool too full for one merge the tree keeps merging instead of
// refusing writes, and a pool holds about as many string keys as it has room for. Only when
// a part of one entry does not fit is the merge undone and writes refused (MergeBlock).
void StringDPTree::merge() {
  if (buffer_.empty()) return;
  BufferedEntries es;
  es.reserve(buffer_.size());
  for (auto it = buffer_.begin(); it.valid(); ++it) es.emplace_back(it.key().view(), it.value());
  // The arenas the parts replace (keep_in_buffer) are freed when the merge ends, however it
  // ends (a part that does not fit throws).
  struct Spent {
    std::vector<KeyArena>& arenas;
    ~Spent() { arenas.clear(); }
  } spent{spent_keys_};
  std::size_t part = es.size();
  for (std::size_t from = 0; from < es.size(); from += part) {
    try {
      part = merge_fitting_part(
          std::min(part, es.size() - from), [&](std::size_t n) { merge_part(es, from, from + n); },
          [&] { ++failed_merges_; });
    } catch (const Error& e) {
      if (e.code() != Errc::pool_full) throw;
      ++failed_merges_;
      merge_block_.fail(e);
    }
  }
  merge_block_.clear();
}

// One merge cycle over es[from, to): begin, the leaves of those entries, flip, garbage
// collection. The entries after `to` stay in the buffer: before the flip they are written to
// the log of the new version (empty until then: the last merge's collection released it), so
// the flip that makes the merged leaves current makes a log of exactly the entries left the
// current log too. A crash before the flip finds the old log whole (the new one is released
// by recovery as the other version's); after it, the new one. pool_full undoes the cycle:
// leaves reclaimed, the new log's pages back in the cache, nothing else changed.
void StringDPTree::merge_part(BufferedEntries& es, std::size_t from, std::size_t to) {
  const int cv = static_cast<int>(root_->gv & kVersionBit), nv = 1 - cv;
  const Span part(es.data() + from, to - from), rest(es.data() + to, es.size() - to);
  StringMergeResult m;
  std::vector<u64> rest_recs;
  auto next = std::make_unique<PLog>(t_.pool, t_.codec, *t_.pages);
  const InMergePart in_part(!rest.empty() || from > 0);
  try {
    {
      PhaseScope ph(DPTreePhase::merge_start);
      begin_merge(t_.pool, root_, *t_.pending);
    }
    {
      PhaseScope ph(DPTreePhase::upsert_merge);
      merge_string_leaves(t_, merge_sizes(), base_, part, m);
    }
    if (!rest.empty()) log_entries(*next, &root_->log_head[nv], nv, rest, rest_recs);
    created_ += m.created;
    rewritten_ += m.rewritten;
    in_place_ += m.in_place;
    PhaseScope fl(DPTreePhase::flush);
    link_string_leaves(t_.pool, m.out, nv);
  } catch (const Error& e) {
    if (e.code() != Errc::pool_full) throw;
    created_ += m.created;
    reclaim_interrupted_merge(t_.pool, root_, *t_.dir, *t_.pending);
    PLog::release_chain(t_.pool, &root_->log_head[nv], nv);
    next->hand_over(nv);
    throw;
  }
  {
    PhaseScope ph(DPTreePhase::version_flip);
    commit_merge(root_, nv, LeafPtr(m.out.empty() ? 0 : m.out.front()), m.count);
  }
  rebuild_inner();
  ++merges_;
  parts_ += !rest.empty() || from > 0;
  {
    PhaseScope ph(DPTreePhase::garbage_collection);
    freed_ += collect_garbage(t_.pool, root_, *t_.dir, *t_.pending, string_next(t_.pool), cv, nv);
    const std::size_t used = log_->pages().size();
    key_pages_.name(m.named);
    release_key_pages(m.unnamed);
    const auto keep = [this](u64 page) { return key_pages_.named(page); };
    PLog::release_chain(t_.pool, &root_->log_head[cv], cv, keep);
    log_->hand_over(cv, keep);
    log_ = std::move(next);
    // Cache capacity C_size (§2.1): the pages this log took, as records differ in length.
    t_.pages->trim(used + 2, nv);
  }
  // The entries left now name their records in the new log (the old one's pages are reused).
  for (std::size_t i = 0; i < rest_recs.size(); ++i) es[to + i].second.rec = rest_recs[i];
  keep_in_buffer(rest);
}

// After the flip's garbage collection (no entry of version cv is reachable): the key pages no
// entry names any more are freed. Only key pages of released logs can be unnamed here; one of
// the log being released (none of its records named) goes with that log.
void StringDPTree::release_key_pages(std::span<const u64> unnamed) {
  PhaseScope ph(DPTreePhase::key_page_release);
  const std::vector<u64> free = key_pages_.unname(unnamed);
  const std::unordered_set<u64> live(log_->pages().begin(), log_->pages().end());
  for (u64 pg : free)
    if (!live.contains(pg)) {
      key_pages_.free_page(*t_.dir, pg);
      ++key_pages_freed_;
    }
}

// The buffer and its filter hold exactly `rest` (the entries a merge part left). Their keys
// are views of the arena being replaced, which merge() reads for the parts after this one:
// it is kept until the merge ends.
void StringDPTree::keep_in_buffer(Span rest) {
  spent_keys_.push_back(std::exchange(keys_, KeyArena{}));
  clear_buffer();
  reset_bloom();
  for (const auto& [k, s] : rest) {
    buffer_put(k, s);
    bloom_.add_hashed(hash_string(k));
  }
}

}  // namespace dptree::detail
