// DPTree, single-threaded (§2): the public class. The parts live in files named after what
// they hold: in src/engine, the parts the concurrent DPTree shares, plog (§2.1 log), bloom (§2.1
// filter over the buffer tree, which is btree.h's B+-tree: dptree_impl.h), base_leaf (§2.2) and
// merge (§2.3, Algorithms 1-3); here base_tree (§2.2), recovery (Algorithm 4), check.
#include "dptree/dptree.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "dptree/error.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"
#include "engine/phase.h"
#include "engine/validate.h"
#include "st/dptree_impl.h"

namespace dptree {

using namespace detail;  // NOLINT: the layout vocabulary

const char* to_string(DPTreePhase p) {
  switch (p) {
    case DPTreePhase::idle:
      return "idle";
    case DPTreePhase::log_append:
      return "log_append";
    case DPTreePhase::merge_start:
      return "merge_start";
    case DPTreePhase::upsert_merge:
      return "upsert_merge";
    case DPTreePhase::delete_merge:
      return "delete_merge";
    case DPTreePhase::consolidation:
      return "consolidation";
    case DPTreePhase::flush:
      return "flush";
    case DPTreePhase::version_flip:
      return "version_flip";
    case DPTreePhase::garbage_collection:
      return "garbage_collection";
    case DPTreePhase::recovery:
      return "recovery";
    case DPTreePhase::key_page_release:
      return "key_page_release";
  }
  return "?";
}

// ------------------------------------------------------------------ create / open
DPTreeCore::Impl::Impl(pm::Pool& p, const DPTreeOptions& o) : TreeParts(p, "DPTree"), opt(o) {}

void DPTreeCore::Impl::attach(std::size_t kb, std::size_t vb) {
  attach_parts(*root, opt.leaf_capacity, kb, vb, opt.log_page_size);
  log = std::make_unique<PLog>(pool, codec, *pages);
  base = std::make_unique<BaseTree>(pool, root, L);
}

void DPTreeCore::Impl::create(std::size_t kb, std::size_t vb) {
  opt.validate();
  require_empty_pool();
  pm::CategoryScope cat(pm::Category::alloc);
  u64 r = alloc.reserve(sizeof(Root));
  auto* rt = pool.at<Root>(r);
  Root init{};
  init.magic = kRootMagic;
  init.leaf_capacity = opt.leaf_capacity;
  init.key_bytes = kb;
  init.value_bytes = vb;
  init.log_page_size = opt.log_page_size;
  pm::store(rt, init);
  pm::flush(rt, sizeof(Root));
  alloc.activate(pool.root_word(), r);  // its first fence orders the root's contents
  root = rt;
  attach(kb, vb);
  reset_bloom();
}

void DPTreeCore::Impl::open(std::size_t kb, std::size_t vb) {
  auto* rt = static_cast<Root*>(existing_root(kRootMagic, sizeof(Root), "DPTree"));
  // The stored format words first, entry widths included: a damaged width is the pool's fault,
  // not a mismatch with the caller's (1 stands for 0, which validate() takes as "unset").
  DPTreeOptions format;
  format.leaf_capacity = rt->leaf_capacity;
  format.log_page_size = rt->log_page_size;
  format.key_bytes = rt->key_bytes ? rt->key_bytes : 1;
  format.value_bytes = rt->value_bytes ? rt->value_bytes : 1;
  validate_stored([&format] { format.validate(); });
  if (rt->key_bytes != kb || rt->value_bytes != vb)
    throw Error(Errc::wrong_index,
                "pool '" + pool.name() + "' holds a DPTree of " + std::to_string(rt->key_bytes) +
                    "-byte keys and " + std::to_string(rt->value_bytes) +
                    "-byte values: open it with DPTree<" + std::to_string(rt->key_bytes) + ", " +
                    std::to_string(rt->value_bytes) +
                    "> (or key_bytes=" + std::to_string(rt->key_bytes) +
                    " value_bytes=" + std::to_string(rt->value_bytes) + ")");
  opt.validate();  // the caller's options, before the stored ones replace two of them
  opt.leaf_capacity = rt->leaf_capacity;
  opt.log_page_size = rt->log_page_size;
  validate_stored([this] { opt.validate(); });
  root = rt;
  attach(kb, vb);
  OpenedList list = validate_on_open(
      *this, *root,
      TreeShape{"DPTree",
                kDPTreeGvBits,
                ~u64{0},
                {pool.offset_of(&root->log_head[0]), pool.offset_of(&root->log_head[1])}});
  recover(std::move(list));
}

// ------------------------------------------------------------------ operations
std::size_t DPTreeCore::Impl::merge_threshold() const {
  std::size_t floor_n = opt.min_merge_records ? opt.min_merge_records : opt.leaf_capacity;
  auto r = static_cast<std::size_t>(opt.merge_ratio * static_cast<double>(base->base_count()));
  return std::max(floor_n, r);
}

void DPTreeCore::Impl::reset_bloom() {
  bloom.reset(merge_threshold() + 1, opt.bloom_error_rate);
}

// Upserts of values (not removes) while a merge is blocked by a full pool: refused before
// anything is logged, unless removes since made a retry of the merge worth it.
void DPTreeCore::Impl::write_allowed() {
  merge_block.before_value([this] { merge(); });
}

void DPTreeCore::Impl::upsert_raw(u64 k, u64 v) {
  const u64 h = hash_key(k);
  bloom.prefetch(h);  // its miss overlaps the log append's write-back
  {
    PhaseScope ph(DPTreePhase::log_append);
    log->append_unfenced(&root->log_head[cv()], cv(), k, v);
  }
  buffer.insert_or_assign(k, v);
  bloom.add_hashed(h);
  {
    // The record's fence: the buffer's insert above overlapped its write-back. The write is
    // durable before it is acknowledged and before a merge reads the buffer.
    PhaseScope ph(DPTreePhase::log_append);
    PLog::fence_append();
  }
  merge_block.after_write((v & kTombstone) != 0,
                          [this] { return buffer.size() >= merge_threshold(); },
                          [this] { merge(); });
}

// The filter's block and the leaf's first lines are requested before either is needed, so
// their misses overlap with each other and with the inner index search.
std::optional<u64> DPTreeCore::Impl::lookup(u64 k) const {
  const u64 h = hash_key(k);
  bloom.prefetch(h);
  const std::size_t leaf = base->leaf_index(k);  // searched once, for the prefetch and the probe
  base->prefetch(leaf, h, opt.probe);
  if (bloom.may_contain_hashed(h))
    if (const u64* p = buffer.find(k)) {
      if (*p & kTombstone) return std::nullopt;
      return *p;
    }
  return base->lookup_at(leaf, k, h, opt.probe);
}

// The base tree's entries come in batches of what is still wanted, collected in one tight
// loop per leaf (BaseTree::collect); the buffer's are merged in as they come, the buffer's
// entry hiding the base's of the same key. A batch that stopped at its limit makes its last
// key the bound: the buffer's entries above it wait for the next batch. The first batch asks
// for exactly the count, which is all a scan with no removed key in its range needs (each
// entry past it is a miss in a hashed slot); later ones, after removes hid entries, for at
// least kScanBatchFloor, so a run of removes costs few rounds.
std::size_t DPTreeCore::Impl::scan(u64 start, std::size_t count, std::vector<KV>& out) const {
  std::size_t got = 0;
  auto bi = buffer.lower_bound(start);
  std::vector<KVPair>& b = scan_batch;
  for (u64 cur = start; got < count;) {
    b.clear();
    const std::size_t want = cur == start ? count : std::max(count - got, kScanBatchFloor);
    const bool complete = base->collect(cur, want, b);
    const u64 bound = complete ? ~u64{0} : b.back().first;
    std::size_t i = 0;
    while (got < count) {
      const bool from_buffer = bi.valid() && bi.key() <= bound;
      if (!from_buffer && i == b.size()) break;
      if (from_buffer && (i == b.size() || bi.key() <= b[i].first)) {
        if (i < b.size() && bi.key() == b[i].first) ++i;  // the buffer's entry is newer
        if (!(bi.value() & kTombstone)) {
          out.emplace_back(bi.key(), bi.value());
          ++got;
        }
        ++bi;
      } else {
        out.emplace_back(b[i].first, b[i].second);
        ++got;
        ++i;
      }
    }
    if (complete || bound == ~u64{0}) break;
    cur = bound + 1;
  }
  return got;
}

std::size_t DPTreeCore::Impl::size() const {
  long long n = static_cast<long long>(base->base_count());
  for (auto it = buffer.begin(); it.valid(); ++it) {
    bool in_base = base->lookup(it.key(), ProbeMode::both).has_value();
    if (it.value() & kTombstone)
      n -= in_base;
    else
      n += !in_base;
  }
  return static_cast<std::size_t>(n);
}

// Algorithm 1 over the whole buffer tree: the base tree is one range (merge.h).
void DPTreeCore::Impl::merge() {
  if (buffer.empty()) return;
  KeptSplitScope kept;
  const int cvv = cv(), nv = 1 - cvv;
  std::vector<KVPair>& ents = merge_entries;  // reused: no fresh pages for 16 bytes an entry
  ents.clear();
  ents.reserve(buffer.size());
  for (auto it = buffer.begin(); it.valid(); ++it) ents.emplace_back(it.key(), it.value());
  MergeContext cx{pool, *dir, *pending, L};
  cx.fill_rate = opt.fill_rate;
  cx.consolidate_threshold = opt.consolidate_threshold;
  cx.mode = opt.merge_mode;
  cx.split = opt.split;
  cx.split_early = !merge_block.blocked();  // after pool_full, no split a leaf does not need yet
  cx.restart_count = root->restart_count;
  cx.cv = cvv;
  cx.nv = nv;
  RangeMerge r;
  r.first_cv = root->head[cvv].off;
  r.nleaves = base->leaves().size();
  try {
    begin_merge(pool, root, *pending);
    merge_range(cx, r, ents);
    flush_range(cx, r);
  } catch (const Error& e) {
    if (e.code() != Errc::pool_full) throw;
    // Out of PM in the middle of the merge: undo it online (version cv was never touched,
    // the buffer and its log still hold every write) and report it.
    RangeMerge* rs[] = {&r};
    abort_merge(cx, root, rs);
    ++failed_merges;
    undone_leaves += r.counters.created;
    merge_block.fail(e);
  }
  commit_merge(root, nv, r.head, r.count);
  // The inner index lists the leaves of version cv in order; kept for the collection below.
  std::vector<u64>& old_leaves = merge_old_leaves;
  old_leaves.assign(base->leaves().begin(), base->leaves().end());
  base->rebuild_inner();  // phase 5 (after the flip: nothing reads the tree in between)
  ++merges;
  counters += r.counters;
  {
    PhaseScope ph(DPTreePhase::garbage_collection);
    freed += collect_garbage(pool, root, *dir, *pending, old_leaves, base->leaves());
    PLog::release_chain(pool, &root->log_head[cvv], cvv);
    log->hand_over(cvv);  // the next log (version nv) starts empty, from freelist_nv
    buffer.clear();
    // Cache capacity C_size (§2.1): about the buffer size that triggers the next merge.
    pages->trim(merge_threshold() / codec.G.per_page + 2, nv);
  }
  merge_block.clear();
  reset_bloom();
}

std::size_t DPTreeCore::Impl::pm_bytes() const {
  std::size_t n = alloc.block_size(*pool.root_word());
  for (DirBlockPtr b : dir->blocks()) n += alloc.block_size(b.off);
  dir->for_each_owned([&](u64, u64 blk) { n += alloc.block_size(blk); });
  return n;
}

// ------------------------------------------------------------------ DPTreeCore
DPTreeCore::DPTreeCore(pm::Pool& pool, const DPTreeOptions& opt, std::size_t kb, std::size_t vb,
                       bool create)
    : impl_(std::make_unique<Impl>(pool, opt)) {
  auto width_clash = [&](std::size_t want, std::size_t have, const char* what) {
    if (want && want != have)
      throw Error(Errc::invalid_argument, std::string("DPTree option ") + what + "=" +
                                              std::to_string(want) + " differs from the tree's " +
                                              std::to_string(have) +
                                              "-byte field: leave it 0 or use DPTree<" +
                                              "KeyBytes, ValueBytes> with that width");
  };
  width_clash(opt.key_bytes, kb, "key_bytes");
  width_clash(opt.value_bytes, vb, "value_bytes");
  impl_->opt.key_bytes = kb;
  impl_->opt.value_bytes = vb;
  if (create)
    impl_->create(kb, vb);
  else
    impl_->open(kb, vb);
}
DPTreeCore::~DPTreeCore() = default;

namespace {
void check_value(Value v) {
  detail::check_value(v, "DPTree");
}
}  // namespace

void DPTreeCore::upsert(Key k, Value v) {
  check_value(v);
  impl_->write_allowed();
  impl_->upsert_raw(k, v);
}
bool DPTreeCore::insert(Key k, Value v) {
  check_value(v);
  if (impl_->lookup(k)) return false;
  impl_->write_allowed();
  impl_->upsert_raw(k, v);
  return true;
}
bool DPTreeCore::update(Key k, Value v) {
  check_value(v);
  if (!impl_->lookup(k)) return false;
  impl_->write_allowed();
  impl_->upsert_raw(k, v);
  return true;
}
bool DPTreeCore::remove(Key k) {
  if (!impl_->lookup(k)) return false;
  impl_->upsert_raw(k, kTombstone);
  return true;
}
std::optional<Value> DPTreeCore::lookup(Key k) const {
  return impl_->lookup(k);
}
std::size_t DPTreeCore::scan(Key start, std::size_t count, std::vector<KV>& out) const {
  return impl_->scan(start, count, out);
}
std::size_t DPTreeCore::size() const {
  return impl_->size();
}
void DPTreeCore::merge() {
  impl_->merge();
}
const DPTreeOptions& DPTreeCore::options() const {
  return impl_->opt;
}

std::vector<std::pair<std::string, double>> named_figures(const DPTreeStats& s) {
  auto d = [](std::size_t x) { return static_cast<double>(x); };
  return {{"buffer_entries", d(s.buffer_entries)},
          {"failed_merges", d(s.failed_merges)},
          {"undone_leaves", d(s.undone_leaves)},
          {"base_records", d(s.base_records)},
          {"leaves", d(s.leaves)},
          {"merges", d(s.merges)},
          {"splits", d(s.splits)},
          {"kept_splits", d(s.kept_splits)},
          {"pair_splits", d(s.pair_splits)},
          {"pair_leaves_kept", d(s.pair_leaves_kept)},
          {"consolidations", d(s.consolidations)},
          {"leaves_created", d(s.leaves_created)},
          {"leaves_freed", d(s.leaves_freed)},
          {"lazy_rebuilds", d(s.lazy_rebuilds)},
          {"log_pages", d(s.log_pages)},
          {"free_log_pages", d(s.free_log_pages)},
          {"restart_count", d(s.restart_count)},
          {"merge_wait_max_ms", s.merge_wait_max_ms}};
}

DPTreeStats DPTreeCore::stats() const {
  const Impl& m = *impl_;
  DPTreeStats s;
  s.records = m.size();
  s.buffer_entries = m.buffer.size();
  s.base_records = m.base->base_count();
  s.leaves = m.base->leaves().size();
  s.merges = m.merges;
  s.failed_merges = m.failed_merges;
  s.merge_wait_max_ms = m.merge_block.longest_wait_ms();
  s.undone_leaves = m.undone_leaves;
  s.splits = m.counters.splits;
  s.kept_splits = m.counters.kept_splits;
  s.pair_splits = m.counters.pair_splits;
  s.pair_leaves_kept = m.counters.pair_leaves_kept;
  s.consolidations = m.counters.consolidations;
  s.leaves_created = m.counters.created;
  s.leaves_freed = m.freed;
  s.lazy_rebuilds = m.base->lazy_rebuilds() + m.counters.lazy_rebuilds;
  s.log_pages = m.log->pages().size();
  s.free_log_pages = m.pages->size(0) + m.pages->size(1);
  s.restart_count = m.root->restart_count;
  s.pm_bytes = m.pm_bytes();
  s.dram_bytes = sizeof(Impl) + m.buffer.nodes().held_bytes() + m.bloom.dram_bytes() +
                 m.base->dram_bytes() + m.dir->dram_bytes() + m.pages->dram_bytes() +
                 8 * m.log->pages().capacity() + m.merge_entries.capacity() * sizeof(KVPair) +
                 m.merge_old_leaves.capacity() * sizeof(u64);
  return s;
}

CheckReport DPTreeCore::check() const {
  CheckReport r;
  impl_->check(r);
  return r;
}

}  // namespace dptree
