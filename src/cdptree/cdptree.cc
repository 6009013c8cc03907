// The concurrent DPTree (§3): creation, opening, reads (Algorithm 6), writes (Algorithm 7,
// §3.4), scans, stats. Merge: merge_driver.cc (shared with the string form) and
// parallel_merge.cc; recovery: recovery.cc (shared, with this form's hooks); check: check.cc.
#include "dptree/cdptree.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <unordered_set>

#include "cdptree/cdptree_impl.h"
#include "cdptree/phase.h"
#include "cdptree/root_tables.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"
#include "engine/validate.h"

namespace dptree {

using namespace detail;  // NOLINT: the layout vocabulary
using cdp::Guard;

namespace cdp {

CDPTreePhase& current_phase() {
  thread_local CDPTreePhase p = CDPTreePhase::idle;
  return p;
}

}  // namespace cdp

CDPTreePhase cdptree_current_phase() {
  return cdp::current_phase();
}

const char* to_string(CDPTreePhase p) {
  switch (p) {
    case CDPTreePhase::idle:
      return "idle";
    case CDPTreePhase::log_append:
      return "log_append";
    case CDPTreePhase::log_page:
      return "log_page";
    case CDPTreePhase::merge_start:
      return "merge_start";
    case CDPTreePhase::merge_range:
      return "merge_range";
    case CDPTreePhase::flush:
      return "flush";
    case CDPTreePhase::reconnect:
      return "reconnect";
    case CDPTreePhase::version_flip:
      return "version_flip";
    case CDPTreePhase::garbage_collection:
      return "garbage_collection";
    case CDPTreePhase::log_release:
      return "log_release";
    case CDPTreePhase::inplace_update:
      return "inplace_update";
    case CDPTreePhase::inplace_delete:
      return "inplace_delete";
    case CDPTreePhase::recovery:
      return "recovery";
    case CDPTreePhase::key_page_release:
      return "key_page_release";
  }
  return "?";
}

// ------------------------------------------------------------------ Impl: setup

CDPTree::Impl::Impl(pm::Pool& p, const CDPTreeOptions& o)
    : TreeParts(p, "concurrent DPTree (cdptree)"), opt(o) {}

CDPTree::Impl::~Impl() {
  wait_idle();
  release_buffers();
  delete gp_b.load();
}

unsigned CDPTree::Impl::merge_workers() const {
  return cdp::merge_workers(opt);
}

unsigned CDPTree::Impl::recovery_workers() const {
  return cdp::recovery_workers(opt);
}

unsigned CDPTree::Impl::pool_threads() const {
  return cdp::pool_threads(opt);
}

std::size_t CDPTree::Impl::threshold(std::size_t base_count) const {
  // The size counts a page when it is allocated (Algorithm 5 line 13): a new Front counts N
  // pages after its first N appends. The default floor is 2N pages, so a merge needs about
  // N pages of real records.
  std::size_t floor_n =
      opt.min_merge_records ? opt.min_merge_records : 2 * opt.log_partitions * codec.G.per_page;
  auto r = static_cast<std::size_t>(opt.merge_ratio * static_cast<double>(base_count));
  return std::max(floor_n, r);
}

cdp::Cpbt* CDPTree::Impl::new_cpbt(int ver) const {
  // The buffer may outgrow the trigger while the previous merge runs: room for twice it.
  std::size_t expected = 2 * merge_thresh.load() + opt.log_partitions * codec.G.per_page;
  return new cdp::Cpbt(*shared, table(ver), ver, expected, opt.bloom_error_rate, node_chunks);
}

namespace {

// The largest leaf capacity whose layout fits `bytes` (§4.4: 8 KB base leaves).
std::size_t capacity_for(std::size_t bytes) {
  std::size_t cap = 4;
  for (std::size_t c = 4; c <= 4096; ++c) {
    LeafLayout L;
    L.init(c, 8, 8);
    if (L.bytes > bytes) break;
    cap = c;
  }
  return cap;
}

}  // namespace

void CDPTree::Impl::attach() {
  attach_parts(root->base, opt.leaf_capacity, 8, 8, opt.log_page_size);
  shared = std::make_unique<cdp::LogShared>(
      cdp::LogShared{pool, codec, *pages, opt.log_partitions, opt.log_page_size});
  workers = std::make_unique<cdp::MergePool>(pool_threads(), opt.merge_nice);
}

void CDPTree::Impl::ensure_tables() {
  cdp::ensure_log_tables(*this, *root, opt.log_partitions);
}

void CDPTree::Impl::create() {
  opt.validate();  // leaf_bytes is checked before a capacity is derived from it
  if (opt.leaf_capacity == 0) opt.leaf_capacity = capacity_for(opt.leaf_bytes);
  opt.validate();
  require_empty_pool();
  root = cdp::create_root(*this, cdp::kCRootMagic, opt.leaf_capacity, opt.log_page_size,
                          opt.log_partitions);
  attach();
  ensure_tables();
  merge_thresh.store(threshold(0));
  gp_b.store(cdp::snapshot_of(base_ctx(), {}, cv(), 0));
  gp_f.store(new_cpbt(cv()));
}

// validate.h's checks, with the log header tables: each owned by its root word and as long
// as the partition count, each tail word starting a page chain.
detail::OpenedList CDPTree::Impl::validate_open() const {
  TreeShape shape{"cdptree", kCDPTreeGvBits, ~cdp::kRcLock,
                  cdp::log_table_words(*this, *root, opt.log_partitions, "cdptree")};
  shape.threads = recovery_workers();
  return validate_on_open(*this, root->base, shape);
}

void CDPTree::Impl::open() {
  auto* rt = static_cast<cdp::CRoot*>(
      existing_root(cdp::kCRootMagic, sizeof(cdp::CRoot), "concurrent DPTree (cdptree)"));
  if (rt->base.key_bytes != 8 || rt->base.value_bytes != 8)
    throw Error(Errc::corrupt, "pool '" + pool.name() +
                                   "' holds a cdptree root with an impossible format: the "
                                   "pool is damaged; restore it or use a new pool");
  // The format is the pool's; the other options are the caller's.
  opt.validate();  // the caller's options, before the stored ones replace three of them
  opt.leaf_capacity = rt->base.leaf_capacity;
  opt.log_page_size = rt->base.log_page_size;
  opt.log_partitions = rt->partitions;
  validate_stored([this] { opt.validate(); });
  root = rt;
  attach();
  recover();  // the merge driver's (recovery.cc)
}

// ------------------------------------------------------------------ Impl: reads

std::optional<u64> CDPTree::Impl::below_front(u64 k, const cdp::Cpbt* writing,
                                              cdp::SyncManager::Slot& s) const {
  {
    Guard<cdp::Cpbt> g(s, cdp::kMR, gp_m);  // Algorithm 6 lines 6-10
    // A writer that still holds a leaf lock in the buffer that has just become the Middle
    // (GP_M = its Front) has searched it already, and must not wait for its own lock.
    if (g.get() && g.get() != writing)
      if (auto r = g.get()->find(k)) return r;
  }
  Guard<cdp::BaseSnapshot> g(s, cdp::kBR, gp_b);  // lines 11-15
  return cdp::base_lookup(base_ctx(), *g.get(), k);
}

std::optional<u64> CDPTree::Impl::lookup_raw(u64 k) const {
  auto& s = sm.mine();
  {
    Guard<cdp::Cpbt> g(s, cdp::kFR, gp_f);  // Algorithm 6 lines 1-5
    if (auto r = g.get()->find(k)) return r;
  }
  return below_front(k, nullptr, s);
}

bool CDPTree::Impl::present_below(u64 k, const cdp::Cpbt* writing) const {
  auto r = below_front(k, writing, sm.mine());
  return r && !(*r & kTombstone);
}

// Algorithm 7 lines 1-5 around a decision taken under k's leaf lock in the Front, then the
// merge trigger (lines 6-16).
template <class F>
std::optional<u64> CDPTree::Impl::write(u64 k, F&& decide) {
  std::optional<u64> out;
  std::size_t size;
  {
    Guard<cdp::Cpbt> g(sm.mine(), cdp::kFW, gp_f);
    cdp::Cpbt* f = g.get();
    out = f->upsert_with(k, [&](const u64* cur) { return decide(f, cur); });
    size = g.get()->log.approx_size();
  }
  after_write(size);
  return out;
}

namespace {

// Up to n entries in [start, limit] of an OLC tree; true when it has no more there.
bool collect_tree(const btree::OlcBTree& t, u64 start, u64 limit, std::size_t n,
                  std::vector<KVPair>& out) {
  bool more = false;
  t.scan(start, [&](u64 k, u64 v) {
    if (k > limit) return false;
    out.emplace_back(k, v);
    more = out.size() == n;
    return !more;
  });
  return !more;
}

// The last key a component's batch vouches for: all of it when the batch is complete, else
// up to its last entry.
u64 batch_bound(bool complete, const std::vector<KVPair>& a) {
  return complete ? ~u64{0} : a.back().first;
}

// Merges the three batches' entries up to `bound` into `out` (Front, Middle, base: a newer
// component's entry, tombstone or not, hides an older one) until `got` reaches `count`;
// true when it did. The base's entries below both buffers' next key are copied in a tight
// run: the buffers hold about a tenth of the records.
bool merge_batches(const std::vector<KVPair> (&a)[3], u64 bound, std::size_t count,
                   std::size_t& got, std::vector<KV>& out) {
  std::size_t pos[3] = {0, 0, 0};
  auto head = [&](int i) { return pos[i] < a[i].size() ? a[i][pos[i]].first : ~u64{0}; };
  auto emit = [&](u64 k, u64 v) {
    if (v & kTombstone) return false;
    out.emplace_back(k, v);
    return ++got == count;
  };
  for (;;) {
    const u64 below = std::min(head(0), head(1));
    for (; pos[2] < a[2].size() && a[2][pos[2]].first < below && a[2][pos[2]].first <= bound;
         ++pos[2])
      if (emit(a[2][pos[2]].first, a[2][pos[2]].second)) return true;
    int who = -1;
    u64 best = 0;
    for (int i = 0; i < 3; ++i)
      if (pos[i] < a[i].size() && head(i) <= bound && (who < 0 || head(i) < best)) {
        best = head(i);
        who = i;
      }
    if (who < 0) return false;
    const u64 v = a[who][pos[who]].second;  // the lowest index with this key: the newest
    for (int i = 0; i < 3; ++i)
      if (pos[i] < a[i].size() && head(i) == best) ++pos[i];
    if (emit(best, v)) return true;
  }
}

}  // namespace

// Range scan: batches from Front, Middle and base, merged by key with that priority (a
// newer component's entry, tombstone or not, hides an older one). Entries up to the
// smallest last key of a batch that stopped at its limit are final; the next round starts
// above it. The three pointers are taken in the order Front, Middle, base, so an entry that
// a switch or a merge moves between two of them is in one the round holds; the base is then
// read first, and the buffers only up to its batch's last key: with a buffer about a tenth
// of the base, its entries past that key would be copied only to be dropped. The first
// round's batches ask for exactly the count (every base entry past it is a miss in a hashed
// slot); later rounds, after newer entries hid some, for at least kScanBatchFloor.
std::size_t CDPTree::Impl::scan(u64 start, std::size_t count, std::vector<KV>& out) const {
  std::size_t got = 0;
  u64 cur = start;
  auto& s = sm.mine();
  thread_local std::vector<KVPair> a[3];  // reused: a scan allocates nothing in steady state
  while (got < count) {
    const std::size_t batch = cur == start ? count : std::max(count - got, kScanBatchFloor);
    for (auto& x : a) x.clear();
    Guard<cdp::Cpbt> gf(s, cdp::kFR, gp_f);
    Guard<cdp::Cpbt> gm(s, cdp::kMR, gp_m);
    Guard<cdp::BaseSnapshot> gb(s, cdp::kBR, gp_b);
    const bool base_all = cdp::base_collect(base_ctx(), *gb.get(), cur, batch, a[2]);
    u64 bound = batch_bound(base_all, a[2]);
    bool all = base_all;
    const bool front_all = collect_tree(gf.get()->tree, cur, bound, batch, a[0]);
    bound = std::min(bound, batch_bound(front_all, a[0]));
    all = all && front_all;
    if (gm.get()) {
      const bool middle_all = collect_tree(gm.get()->tree, cur, bound, batch, a[1]);
      bound = std::min(bound, batch_bound(middle_all, a[1]));
      all = all && middle_all;
    }
    if (merge_batches(a, bound, count, got, out)) return got;
    // bound < cur only in a damaged base (keys outside their leaves' ranges, which open does
    // not check key by key): stop rather than go round forever.
    if (all || bound == ~u64{0} || bound < cur) break;
    cur = bound + 1;
  }
  return got;
}

std::size_t CDPTree::Impl::count_live() const {
  std::size_t n = 0;
  u64 cur = 0;
  std::vector<KV> tmp;
  for (;;) {
    tmp.clear();
    std::size_t got = scan(cur, 1 << 16, tmp);
    n += got;
    if (got < (1u << 16) || tmp.back().first == ~u64{0}) return n;
    cur = tmp.back().first + 1;
  }
}

// ------------------------------------------------------------------ public API

CDPTree::CDPTree() = default;
CDPTree::~CDPTree() = default;

std::unique_ptr<CDPTree> CDPTree::create(pm::Pool& pool, const CDPTreeOptions& opt) {
  std::unique_ptr<CDPTree> t(new CDPTree);
  t->impl_ = std::make_unique<Impl>(pool, opt);
  t->impl_->create();
  return t;
}

std::unique_ptr<CDPTree> CDPTree::open(pm::Pool& pool, const CDPTreeOptions& opt) {
  std::unique_ptr<CDPTree> t(new CDPTree);
  t->impl_ = std::make_unique<Impl>(pool, opt);
  t->impl_->open();
  return t;
}

namespace {

void check_value(Value v) {
  detail::check_value(v, "CDPTree");
}

}  // namespace

// §3.4: with no merge running (the caller holds W_FW on the Front, so none can start before
// this returns), a key that is in neither buffer is updated, or deleted (v = kTombstone), in
// the base tree in place. The caller holds k's leaf lock in the Front and found no entry.
//
// Why the log cannot resurrect a key deleted here (nor undo an update) after a crash:
//  1. MergeState = nomerge was read after W_FW was published (seq_cst), so every earlier
//     merge has flipped, released its log and cleared kTwoLogs (merge_task sets nomerge
//     last; a failed merge leaves it merging; recovery finishes an interrupted merge before
//     any operation), and no Middle exists: the only live log is the Front's.
//  2. Every record of the Front's log has its key in the Front tree: a writer appends under
//     the key's leaf lock and changes the tree before releasing it, and recovery rebuilds
//     the tree from the log. We hold k's leaf lock and found no entry, so the log holds no
//     record of k, older or newer; a later record of k is a later write and rightly wins.
//  3. No merge can start before we drop W_FW (Algorithm 7 line 13 waits for W_FW on the
//     Front), so the merge that drops the tombstone reads it, and the leaf marked in the
//     snapshot (base.h), after the 8-byte store is persisted.
// The crash test checks this on images taken inside the store (phase inplace_delete).
bool CDPTree::Impl::try_inplace(u64 k, u64 v) {
  const bool del = v == kTombstone;
  if (!(del ? opt.inplace_delete : opt.inplace_update) ||
      merge_state.load(std::memory_order_seq_cst) != cdp::kNoMerge)
    return false;
  cdp::PhaseScope ph(del ? CDPTreePhase::inplace_delete : CDPTreePhase::inplace_update);
  Guard<cdp::BaseSnapshot> g(sm.mine(), cdp::kBR, gp_b);
  if (!cdp::base_update_in_place(base_ctx(), *g.get(), k, v)) return false;
  (del ? inplace_deletes : inplace_updates).fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::function<bool(u64)> CDPTree::Impl::tombstone_filter(const cdp::BaseSnapshot& old) {
  // Cleared before the merge builds its snapshot: the merge drops every tombstone of the
  // leaves it scans, and a merge that fails keeps `old` (still marked) for the next one.
  restarted.store(false);
  if (old.any_leaf_tombstoned) return [](u64) { return true; };
  if (old.tombstones.load() == 0) return {};
  auto marked = std::make_shared<std::unordered_set<u64>>();
  for (std::size_t i = 0; i < old.leaf.size(); ++i)
    if (cdp::may_hold_tombstone(old, i)) marked->insert(old.leaf[i]);
  return [marked](u64 leaf) { return marked->contains(leaf); };
}

void CDPTree::upsert(Key k, Value v) {
  check_value(v);
  Impl& m = *impl_;
  m.refuse_values();
  m.write(k, [&](const cdp::Cpbt*, const u64*) -> std::optional<u64> { return v; });
}

void CDPTree::overwrite(Key k, Value v) {
  check_value(v);
  Impl& m = *impl_;
  m.refuse_values();
  m.write(k, [&](const cdp::Cpbt*, const u64* cur) -> std::optional<u64> {
    if (!cur && m.try_inplace(k, v)) return std::nullopt;
    return v;
  });
}

bool CDPTree::insert(Key k, Value v) {
  check_value(v);
  Impl& m = *impl_;
  m.refuse_values();
  bool done = false;
  m.write(k, [&](const cdp::Cpbt* f, const u64* cur) -> std::optional<u64> {
    bool present = cur ? !(*cur & kTombstone) : m.present_below(k, f);
    if (present) return std::nullopt;
    done = true;
    return v;
  });
  return done;
}

// update and remove (v = kTombstone): k's value becomes v only if k is present.
bool CDPTree::Impl::replace(u64 k, u64 v) {
  bool done = false;
  write(k, [&](const cdp::Cpbt* f, const u64* cur) -> std::optional<u64> {
    if (cur) {
      if (*cur & kTombstone) return std::nullopt;
      done = true;
      return v;
    }
    if (try_inplace(k, v)) {
      done = true;
      return std::nullopt;
    }
    if (!present_below(k, f)) return std::nullopt;
    done = true;
    return v;
  });
  return done;
}

bool CDPTree::update(Key k, Value v) {
  check_value(v);
  Impl& m = *impl_;
  m.refuse_values();
  return m.replace(k, v);
}

bool CDPTree::remove(Key k) {
  Impl& m = *impl_;
  bool done = m.replace(k, kTombstone);
  if (done) m.note_remove();
  return done;
}

std::optional<Value> CDPTree::lookup(Key k) const {
  auto r = impl_->lookup_raw(k);
  if (!r || (*r & kTombstone)) return std::nullopt;
  return r;
}

std::size_t CDPTree::scan(Key start, std::size_t count, std::vector<KV>& out) const {
  return impl_->scan(start, count, out);
}

void CDPTree::merge(bool wait) {
  impl_->merge_now(wait);
}

void CDPTree::wait_for_merge() const {
  impl_->wait_idle();
}

const CDPTreeOptions& CDPTree::options() const {
  return impl_->opt;
}

std::vector<std::pair<std::string, double>> named_figures(const CDPTreeStats& s) {
  auto d = [](std::size_t x) { return static_cast<double>(x); };
  return {{"front_entries", d(s.front_entries)},
          {"middle_entries", d(s.middle_entries)},
          {"base_records", d(s.base_records)},
          {"leaves", d(s.leaves)},
          {"leaf_capacity", d(s.leaf_capacity)},
          {"merges", d(s.merges)},
          {"merge_partitions", d(s.merge_partitions)},
          {"splits", d(s.splits)},
          {"consolidations", d(s.consolidations)},
          {"leaves_created", d(s.leaves_created)},
          {"leaves_freed", d(s.leaves_freed)},
          {"lazy_rebuilds", d(s.lazy_rebuilds)},
          {"inplace_updates", d(s.inplace_updates)},
          {"log_pages", d(s.log_pages)},
          {"free_log_pages", d(s.free_log_pages)},
          {"restart_count", d(s.restart_count)},
          {"merge_wait_max_ms", s.merge_wait_max_ms},
          {"merge_steps_run", d(s.merge_steps_run)},
          {"recovery_seconds", s.last_recovery_seconds},
          {"inplace_deletes", d(s.inplace_deletes)},
          {"recovery_check_seconds", s.recovery_check_seconds},
          {"recovery_index_seconds", s.recovery_index_seconds},
          {"recovery_replay_seconds", s.recovery_replay_seconds},
          {"recovery_sweep_seconds", s.recovery_sweep_seconds}};
}

CDPTreeStats CDPTree::stats() const {
  const Impl& m = *impl_;
  CDPTreeStats s;
  s.records = m.count_live();
  auto& sync = m.sm.mine();
  {
    Guard<cdp::Cpbt> g(sync, cdp::kFR, m.gp_f);
    s.front_entries = g.get()->tree.size();
    s.log_pages = g.get()->log.pages().size();
    s.dram_bytes += g.get()->tree.dram_bytes() + g.get()->bloom.dram_bytes();
  }
  {
    Guard<cdp::Cpbt> g(sync, cdp::kMR, m.gp_m);
    if (g.get()) {
      s.middle_entries = g.get()->tree.size();
      s.dram_bytes += g.get()->tree.dram_bytes() + g.get()->bloom.dram_bytes();
    }
  }
  {
    Guard<cdp::BaseSnapshot> g(sync, cdp::kBR, m.gp_b);
    s.leaves = g.get()->leaf.size();
    s.base_records = g.get()->live();
    s.dram_bytes += 16 * g.get()->leaf.capacity() + g.get()->search.dram_bytes();
  }
  s.leaf_capacity = m.L.cap;
  s.merges = m.merges.load();
  s.merge_partitions = m.merge_partitions.load();
  s.splits = m.splits.load();
  s.consolidations = m.consolidations.load();
  s.leaves_created = m.created.load();
  s.leaves_freed = m.freed.load();
  s.lazy_rebuilds = m.lazy_rebuilds.load();
  s.inplace_updates = m.inplace_updates.load();
  s.inplace_deletes = m.inplace_deletes.load();
  s.failed_merges = m.failed_merges.load();
  s.merge_retries = m.merge_retries.load();
  s.merge_steps_run = m.steps_run.load();
  s.merge_wait_max_ms = m.merge_wait.ms();
  s.free_log_pages = m.pages->size(0) + m.pages->size(1);
  s.restart_count = m.root->base.restart_count;
  s.last_recovery_seconds = m.recovery_times.total;
  s.recovery_check_seconds = m.recovery_times.check;
  s.recovery_index_seconds = m.recovery_times.index;
  s.recovery_replay_seconds = m.recovery_times.replay;
  s.recovery_sweep_seconds = m.recovery_times.sweep;
  s.pm_bytes = m.pm_bytes();
  s.dram_bytes +=
      sizeof(Impl) + m.dir->dram_bytes() + m.pages->dram_bytes() + m.node_chunks.spare_bytes();
  return s;
}

CheckReport CDPTree::check() const {
  CheckReport r;
  impl_->wait_idle();
  impl_->check(r);
  return r;
}

// Every live block of the pool (the tree is the pool's only user; check() proves that every
// live block is the tree's). Read under the allocator's lock: safe while others write.
std::size_t CDPTree::Impl::pm_bytes() const {
  return alloc.stats().live_bytes;
}

}  // namespace dptree
