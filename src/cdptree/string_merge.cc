// The merge body of the concurrent string form (string_cdptree.h) and its hooks for the merge
// driver (merge_driver.h, which starts, retires and parks the merge for both forms): the leaves
// of the Middle's key ranges merged in place or split (engine/string_base.h, as the
// single-threaded string form merges) in partitions of PSize base leaves pulled by the merge
// workers (§3.3, Algorithm 9), and the merge of a first part only when the whole does not fit
// the pool (the rest moved into the Front).
#include <algorithm>
#include <unordered_set>

#include "cdptree/overlay.h"
#include "cdptree/phase.h"
#include "cdptree/string_cdptree.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"
#include "engine/merge.h"

namespace dptree::cdp {

using namespace detail;  // NOLINT: the layout vocabulary

namespace {

using Span = BufferedSpan;

// The Middle's entries in key order; with `newer` (a retry after pool_full) the Front's laid
// over them, so its removes cancel the Middle's inserts and the retried merge needs fewer
// leaves. The Front keeps those entries and its log (reads and a replay find them first).
BufferedEntries entries_to_merge(const StringBuffer& m, const StringBuffer* newer) {
  BufferedEntries es = m.entries();
  if (!newer) return es;
  return overlay_sorted(std::move(es), newer->entries());
}

// Algorithm 9 line 1: partition i is the base leaves [i * ps, (i + 1) * ps) with the entries
// of its key range, es[at[i], at[i + 1]) (one partition, all entries, for an empty base).
std::vector<std::size_t> partition(const StringBase& base, std::size_t ps, Span es) {
  const std::size_t nl = base.leaves.size(), np = nl ? (nl + ps - 1) / ps : 1;
  std::vector<std::size_t> at(np + 1, es.size());
  at[0] = 0;
  for (std::size_t i = 1; i < np; ++i)
    at[i] = at[i - 1] + string_entries_above(es.subspan(at[i - 1]), base.last[i * ps - 1]);
  return at;
}

}  // namespace

// The merge of the Middle: the whole of it, or when that does not fit the pool (pool_full, the
// cycle undone) its first part, halved until one fits (docs/dptree.md "A merge that does not
// fit goes in parts"); the rest goes to the Front. Then the new inner index published after
// the old one's readers, the garbage collection and the Middle's logs released (the driver
// retires it). False when not even a part of one entry fits (undone).
bool StringCDPTree::run_merge(bool retry) {
  StringBuffer* m = gp_m.load(std::memory_order_seq_cst);
  const BufferedEntries es =
      entries_to_merge(*m, retry ? gp_f.load(std::memory_order_seq_cst) : nullptr);
  const int old = cv();
  std::size_t part = 0;
  try {
    part = merge_fitting_part(
        es.size(), [&](std::size_t n) { merge_cycle(es, n); }, [&] { failed_parts_.fetch_add(1); });
  } catch (const Error& e) {
    if (e.code() != Errc::pool_full) throw;
    return false;
  }
  parts_ += part < es.size();
  last_partial_.store(part < es.size());
  const InMergePart in_part(part < es.size());
  finish_merge(old);
  return true;
}

// One merge cycle over the first n of `es`: begin, the partitions' leaves on the workers, the
// entries after n moved to the Front, the partitions reconnected, the flip. pool_full undoes
// it (the created leaves reclaimed; entries moved to the Front stay there, the Middle's values
// above the Middle: harmless) and is rethrown.
void StringCDPTree::merge_cycle(const BufferedEntries& es, std::size_t n) {
  const Span part(es.data(), n), rest(es.data() + n, es.size() - n);
  const InMergePart in_part(!rest.empty());
  const int nv = 1 - cv();
  std::vector<StringMergeResult> res;
  try {
    {
      PhaseScope ph(CDPTreePhase::merge_start);
      begin_merge(t_.pool, &root_->base, *t_.pending);
    }
    merge_partitions(part, nv, res);
    if (!rest.empty()) move_to_front(rest);
    PhaseScope ph(CDPTreePhase::reconnect);
    reconnect(res, nv);
  } catch (const Error& e) {
    if (e.code() != Errc::pool_full) throw;
    for (const auto& r : res) created_ += r.created;
    reclaim_interrupted_merge(t_.pool, &root_->base, *t_.dir, *t_.pending);
    throw;
  }
  u64 count = 0, head = 0;
  for (const auto& r : res) {
    count += r.count;
    if (!head && !r.out.empty()) head = r.out.front();
    created_ += r.created;
    rewritten_ += r.rewritten;
    in_place_ += r.in_place;
  }
  partitions_ += res.size();
  {
    PhaseScope ph(CDPTreePhase::version_flip);
    commit_merge(&root_->base, nv, detail::LeafPtr(head), count);  // clears kTwoLogs
  }
  // Version nv is current: the records its new entries name are counted now, so that the
  // release of their logs keeps their pages; those of removed entries after the collection.
  for (const auto& r : res) {
    key_pages_.name(r.named);
    unnamed_.insert(unnamed_.end(), r.unnamed.begin(), r.unnamed.end());
  }
}

// Algorithm 9 lines 1-7 and 9-12 for string leaves: each partition's touched leaves merged in
// place (version nv's metadata, which readers of the base of version cv never read) or split
// into new ones (pendingLeaves before activation), linked within the partition through their
// version-nv next words and written back, then fenced by its worker before the flip.
void StringCDPTree::merge_partitions(Span es, int nv, std::vector<StringMergeResult>& res) {
  const StringBase& base = *gp_b_.load(std::memory_order_seq_cst);
  const std::size_t ps = opt_.psize, nl = base.leaves.size();
  const std::vector<std::size_t> at = partition(base, ps, es);
  res.resize(at.size() - 1);
  const bool in_part = dptree_string_merge_in_part();
  workers->run(res.size(), merge_workers(opt_), [&](std::size_t i) {
    const InMergePart ip(in_part);
    WorkerFence fe;
    StringMergeResult& r = res[i];
    {
      PhaseScope ph(CDPTreePhase::merge_range);
      merge_string_leaves(t_, sizes_, base, std::min(nl, i * ps), std::min(nl, (i + 1) * ps),
                          es.subspan(at[i], at[i + 1] - at[i]), r);
    }
    PhaseScope ph(CDPTreePhase::flush);
    if (!r.out.empty())
      link_string_leaves(t_.pool, std::span(r.out).first(r.out.size() - 1), nv, r.out.back());
  });
}

// Algorithm 9 line 8: each partition's last leaf linked to the next partition's first (the
// last one's to the end), on the merge thread, whose fence in commit_merge orders them.
void StringCDPTree::reconnect(const std::vector<StringMergeResult>& res, int nv) {
  const u64* tail = nullptr;
  for (const auto& r : res) {
    if (r.out.empty()) continue;
    if (tail) link_string_leaves(t_.pool, std::span(tail, 1), nv, r.out.front());
    tail = &r.out.back();
  }
  if (tail) link_string_leaves(t_.pool, std::span(tail, 1), nv, 0);
}

// The Middle's entries after a part that fit go to the Front, each logged in the Front's log
// under its shard's lock unless the Front holds the key already (its value is newer): before
// the flip retires the Middle's log, the Front's log holds every entry the merge leaves, as
// the single-threaded form logs them to the new version's log. The Front's log is of version
// nv, current after the flip; a crash before it replays the Middle's log and then the
// Front's, where a moved entry repeats the Middle's value.
void StringCDPTree::move_to_front(Span rest) {
  StringBuffer* f = gp_f.load(std::memory_order_seq_cst);
  std::size_t entries = 0;
  for (const auto& [k, s] : rest) {
    const u64 val = s.value;
    f->upsert_with(
        k, hash_string(k),
        [&](const u64* cur) { return cur ? std::nullopt : std::optional<u64>(val); }, entries);
  }
}

void StringCDPTree::finish_merge(int old) {
  StringBase* prev = gp_b_.load(std::memory_order_seq_cst);
  gp_b_.store(new_base(), std::memory_order_seq_cst);
  sm.spin_until_no_ref(kBR, prev);  // no reader is in a leaf the collection frees
  delete prev;
  {
    PhaseScope ph(CDPTreePhase::garbage_collection);
    freed_ += collect_garbage(t_.pool, &root_->base, *t_.dir, *t_.pending, string_next(t_.pool),
                              old, 1 - old);
  }
  {
    // The key pages no entry names any more are freed, unless a live log holds them.
    PhaseScope ph(CDPTreePhase::key_page_release);
    const std::unordered_set<u64> live = live_log_pages();
    for (u64 pg : key_pages_.unname(unnamed_))
      if (!live.contains(pg)) {
        key_pages_.free_page(*t_.dir, pg);
        key_pages_freed_.fetch_add(1);
      }
    unnamed_.clear();
  }
  // Before the driver retires the Middle (merge_driver.cc): a reader must not miss it.
  retired_.fetch_add(1, std::memory_order_seq_cst);
}

// The Middle's logs go only once its readers left (the driver calls this after lines 18-21):
// a lookup or scan in it (or in it as the Front, entered before the hand-over) compares keys
// in its records.
void StringCDPTree::release_middle(StringBuffer& m) {
  middle_log_pages_ = m.all_log_pages().size();
  pages_inherited_.fetch_add(m.offers_taken());
  const auto last = m.release_logs([this](u64 page) { return key_pages_.named(page); });
  // The Front's shards go on in the Middle's last key pages (PLog::inherit), so that a merge
  // leaves no page partly filled: the log pages may be as large as the paper's.
  if (StringBuffer* f = gp_f.load(std::memory_order_seq_cst)) f->inherit(last);
}

// Cache capacity C_size (§2.1): the pages the released logs took, as records differ in length.
void StringCDPTree::after_merge() {
  t_.pages->trim(middle_log_pages_ + 2 * opt_.log_partitions, cv());
  // MergeThresh from the base just merged, before the next Front is made (line 9, which comes
  // before line 14 and sizes the Front's filter from it).
  merge_thresh.store(next_threshold());
}

std::unordered_set<u64> StringCDPTree::live_log_pages() const {
  std::unordered_set<u64> live;
  for (const StringBuffer* b : {gp_f.load(), gp_m.load()})
    if (b)
      for (u64 pg : b->live_log_pages()) live.insert(pg);
  return live;
}

}  // namespace dptree::cdp
