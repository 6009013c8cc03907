// The merge of the concurrent string form (string_cdptree.h): Algorithm 7's start (the Front
// becomes the Middle, two logs live until the flip) and its end (the Middle retired after its
// readers), with the leaves of the Middle's key ranges merged in place or split
// (engine/string_base.h, as the single-threaded string form merges) in partitions of PSize base
// leaves pulled by the merge workers (§3.3, Algorithm 9), the merge of a first part only when the
// whole does not fit the pool (the rest moved into the Front), and the parking of a merge that does
// not fit at all.
#include <algorithm>
#include <thread>
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

// Algorithm 7 lines 6-16: one writer wins nomerge -> premerge, persists kTwoLogs, turns the
// Front into the Middle, installs a new Front, waits for the old Front's writers, and runs or
// posts the merge.
void StringCDPTree::maybe_start_merge() {
  int expect = kNoMerge;
  if (!state_.compare_exchange_strong(expect, kPreMerge)) return;
  StringBuffer* f = gp_f_.load(std::memory_order_seq_cst);
  if (f->size() == 0) {
    std::lock_guard g(done_mu_);
    last_partial_.store(false);  // nothing left of a merge in parts
    state_.store(kNoMerge);
    done_cv_.notify_all();
    return;
  }
  {
    // Two logs are live from the first write to the new Front until the version flip.
    PhaseScope ph(CDPTreePhase::merge_start);
    pm::CategoryScope cat(pm::Category::node);
    pm::store(&root_->base.gv, root_->base.gv | kTwoLogs);
    pm::persist(&root_->base.gv, 8);
  }
  StringBuffer* f2 = new_buffer(1 - cv());
  gp_m_.store(f, std::memory_order_seq_cst);
  gp_f_.store(f2, std::memory_order_seq_cst);
  sm_.spin_until_no_ref(kFW, f);
  state_.store(kMerging, std::memory_order_seq_cst);
  if (opt_.background_merge)
    workers_->post([this] { merge_task(false); });
  else
    merge_task(false);
}

// The Middle merged (run_merge); on pool_full the merge was undone and is parked: the Middle
// stays readable and durable (two logs stay live), new values are refused until removes retry
// it (note_remove, refuse_values) or merge() does.
void StringCDPTree::merge_task(bool retry) {
  if (run_merge(retry)) return;
  failed_merges_.fetch_add(1);
  std::lock_guard g(done_mu_);
  // Back-off: a leaf's worth of removes before the first retry, twice as many before each
  // next one, at most a merge trigger's worth.
  const std::size_t next = std::max<std::size_t>(opt_.leaf_capacity, 2 * retry_after_.load());
  retry_after_.store(std::min(next, threshold(gp_b_.load()->count)));
  removes_since_fail_.store(0);
  broken_.store(true);
  done_cv_.notify_all();
}

// The merge of the Middle: the whole of it, or when that does not fit the pool (pool_full, the
// cycle undone) its first part, halved until one fits (docs/dptree.md "A merge that does not
// fit goes in parts"); the rest goes to the Front. Then the new inner index published after
// the old one's readers, the garbage collection, and the Middle retired. False when not even
// a part of one entry fits (undone).
bool StringCDPTree::run_merge(bool retry) {
  StringBuffer* m = gp_m_.load(std::memory_order_seq_cst);
  const BufferedEntries es =
      entries_to_merge(*m, retry ? gp_f_.load(std::memory_order_seq_cst) : nullptr);
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
  workers_->run(res.size(), merge_workers(opt_), [&](std::size_t i) {
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
  StringBuffer* f = gp_f_.load(std::memory_order_seq_cst);
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
  sm_.spin_until_no_ref(kBR, prev);  // no reader is in a leaf the collection frees
  delete prev;
  {
    PhaseScope ph(CDPTreePhase::garbage_collection);
    freed_ += collect_garbage(t_.pool, &root_->base, *t_.dir, *t_.pending, string_next(t_.pool),
                              old, 1 - old);
  }
  StringBuffer* m = gp_m_.load(std::memory_order_seq_cst);
  const std::size_t pages = m->all_log_pages().size();
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
  m->release_logs([this](u64 page) { return key_pages_.named(page); });
  retired_.fetch_add(1, std::memory_order_seq_cst);  // before a reader can miss the Middle
  gp_m_.store(nullptr, std::memory_order_seq_cst);
  sm_.spin_until_no_ref(kFR, m);
  sm_.spin_until_no_ref(kMR, m);
  delete m;
  // Cache capacity C_size (§2.1): the pages the released logs took, as records differ in
  // length.
  t_.pages->trim(pages + 2 * opt_.log_partitions, 1 - old);
  thresh_.store(threshold(gp_b_.load()->count));
  merges_.fetch_add(1);
  std::lock_guard g(done_mu_);
  retry_after_.store(0);
  broken_.store(false);
  state_.store(kNoMerge, std::memory_order_seq_cst);
  done_cv_.notify_all();
}

// Values are refused while a merge is parked, unless a leaf's worth of removes came since it
// failed and a retry fits (inline: this write goes ahead; background: the writes after it).
void StringCDPTree::refuse_values() {
  if (!broken_.load(std::memory_order_relaxed)) return;
  if (removes_since_fail_.load() >= opt_.leaf_capacity && retry_merge() && !broken_.load()) return;
  throw_merge_blocked(t_.pool);
}

void StringCDPTree::note_remove() {
  if (!broken_.load(std::memory_order_relaxed)) return;
  if (removes_since_fail_.fetch_add(1) + 1 >= retry_after_.load()) retry_merge();
}

// Runs the parked merge again (one retry at a time); returns whether one ran.
bool StringCDPTree::retry_merge() {
  std::lock_guard rl(retry_mu_);
  {
    std::lock_guard g(done_mu_);
    if (!broken_.load() || state_.load() != kMerging) return false;
    broken_.store(false);
    merge_retries_.fetch_add(1);
  }
  merge_task(true);
  return true;
}

// A merge that went in parts left entries in the Front: merged too, until a merge is whole.
void StringCDPTree::merge() {
  wait_idle();  // a merge another writer started may not hold the latest writes
  if (!retry_merge()) maybe_start_merge();
  wait_idle();
  while (!broken_.load() && last_partial_.load()) {
    maybe_start_merge();
    wait_idle();
  }
  if (broken_.load())
    throw Error(Errc::pool_full, "pool '" + t_.pool.name() +
                                     "' is full: the cdptree merge did not fit and was undone "
                                     "(every write is still in the buffers and their logs); "
                                     "remove keys or use a bigger pool");
}

std::unordered_set<u64> StringCDPTree::live_log_pages() const {
  std::unordered_set<u64> live;
  for (const StringBuffer* b : {gp_f_.load(), gp_m_.load()})
    if (b)
      for (u64 pg : b->all_log_pages()) live.insert(pg);
  return live;
}

void StringCDPTree::wait_idle() const {
  std::unique_lock lk(done_mu_);
  done_cv_.wait(lk, [&] { return state_.load() == kNoMerge || broken_.load(); });
}

}  // namespace dptree::cdp
