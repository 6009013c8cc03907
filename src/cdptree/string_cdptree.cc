// The concurrent DPTree over string keys (string_cdptree.h): creation, opening and this
// form's recovery hooks, reads (Algorithm 6), writes (Algorithm 7), scans, stats. Merge:
// merge_driver.cc (its start and end, shared with the integer form) and string_merge.cc;
// recovery: recovery.cc (Algorithm 4, shared with the integer form); check: string_check.cc
// (this folder).
#include "cdptree/string_cdptree.h"

#include <algorithm>

#include "cdptree/phase.h"
#include "cdptree/root_tables.h"
#include "dptree/error.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"
#include "engine/merge.h"
#include "engine/validate.h"
#include "format/verify.h"

namespace dptree::cdp {

using namespace detail;  // NOLINT: the layout vocabulary

namespace {
constexpr const char* kTree = "cdptree (string keys)";
constexpr const char* kName = "cdptree";
}  // namespace

StringCDPTree::StringCDPTree(pm::Pool& pool, const CDPTreeOptions& opt, bool create_new)
    : t_(pool, "concurrent DPTree (cdptree, string keys)"), opt_(opt) {
  if (opt_.merge_steps)
    throw Error(Errc::invalid_argument,
                "cdptree option merge_steps=1 is built for integer keys only: the string form "
                "merges on a background thread (background_merge=1) or in the writer, whole");
  try {
    if (create_new)
      create();
    else
      open();
  } catch (...) {
    release_dram();  // no destructor runs; no merge was posted (open merges inline)
    throw;
  }
}

StringCDPTree::~StringCDPTree() {
  wait_idle();
  release_dram();
}

void StringCDPTree::release_dram() {
  release_buffers();
  delete gp_b_.exchange(nullptr);
}

void StringCDPTree::attach() {
  // Log records are runs of one-word slots (format/string_leaf.h).
  t_.attach_parts(root_->base, opt_.leaf_capacity, 8, 8, opt_.log_page_size);
  t_.codec.G.init(1, opt_.log_page_size);
  t_.pages->take_any_flavor();
  L_.init(opt_.leaf_capacity);
  const auto cap = static_cast<double>(opt_.leaf_capacity);
  sizes_ = {opt_.leaf_capacity, static_cast<std::size_t>(opt_.fill_rate * cap),
            static_cast<std::size_t>(opt_.consolidate_threshold * cap)};
  workers = std::make_unique<MergePool>(pool_threads(opt_), opt_.merge_nice);
}

std::size_t StringCDPTree::threshold(u64 base_count) const {
  // The buffer's size is estimated from one shard (a shard's entries times the shard count),
  // so the floor is a few entries per shard.
  const std::size_t floor_n =
      opt_.min_merge_records ? opt_.min_merge_records : 16 * opt_.log_partitions;
  auto r = static_cast<std::size_t>(opt_.merge_ratio * static_cast<double>(base_count));
  return std::max(floor_n, r);
}

StringBuffer* StringCDPTree::new_buffer(int ver) const {
  // The buffer may outgrow the trigger while the previous merge runs: room for twice it.
  return new StringBuffer(t_.pool, t_.codec, *t_.pages, table(ver), ver, opt_.log_partitions,
                          2 * merge_thresh.load() + 1, opt_.bloom_error_rate);
}

// A new Front takes the pages the Front before it was given to go on in and did not take
// (PLog::inherit): with background merges a Front is often full by the time the merge before
// it releases its Middle's logs, and the new one starts empty.
StringBuffer* StringCDPTree::new_front(int ver) const {
  StringBuffer* f = new_buffer(ver);
  if (StringBuffer* old = gp_f.load(std::memory_order_seq_cst)) f->inherit(old->take_offers());
  return f;
}

StringBase* StringCDPTree::new_base() {
  auto* b = new StringBase;
  const int v = cv();
  b->build(t_.pool, L_, root_->base.head[v], v, root_->base.base_count[v]);
  b->serial = ++bases_made_;
  return b;
}

void StringCDPTree::create() {
  opt_.validate();
  // The most slots a leaf of leaf_bytes holds (about 16 bytes a slot: 492 in 8 KiB).
  if (opt_.leaf_capacity == 0) opt_.leaf_capacity = string_leaf_capacity(opt_.leaf_bytes);
  require_page_for_longest_key(opt_.log_page_size, kTree);
  t_.require_empty_pool();
  root_ = create_root(t_, kCStringRootMagic, opt_.leaf_capacity, opt_.log_page_size,
                      opt_.log_partitions);
  attach();
  ensure_log_tables(t_, *root_, opt_.log_partitions);
  merge_thresh.store(threshold(0));
  gp_b_.store(new_base());
  gp_f.store(new_buffer(cv()));
}

void StringCDPTree::open() {
  if (root_if_ours(t_.pool, kCStringRootMagicR6, sizeof(CRoot)))
    throw Error(Errc::version_mismatch,
                "pool '" + t_.pool.name() + "' holds a cdptree of string keys in format 7 with " +
                    "shard logs that start each page afresh (CDPStrR6); this build's shard " +
                    "logs go on in the last key page of the log before (CDPStrR7): reload the " +
                    "keys into a new pool (scan it with the build that wrote it)");
  auto* rt =
      static_cast<CRoot*>(open_string_root(t_, kCStringRootMagic, kCStringOlderMagics,
                                           sizeof(CRoot), kCRootMagic, kCDPTreeGvBits, "cdptree"));
  opt_.validate();  // the caller's options, before the stored ones replace three of them
  opt_.leaf_capacity = rt->base.leaf_capacity;
  opt_.log_page_size = rt->base.log_page_size;
  opt_.log_partitions = rt->partitions;
  t_.validate_stored([this] {
    opt_.validate();
    require_page_for_longest_key(opt_.log_page_size, kTree);
  });
  root_ = rt;
  attach();
  recover();  // the merge driver's (recovery.cc)
}

// ------------------------------------------------------------------ recovery's hooks

// validate.h's checks over string leaves, with the shards' log header tables and chains.
OpenedList StringCDPTree::validate_open() const {
  TreeShape shape = string_tree_shape(t_.pool, kTree, kCDPTreeGvBits,
                                      log_table_words(t_, *root_, opt_.log_partitions, kTree),
                                      opt_.leaf_capacity, opt_.log_page_size);
  shape.threads = recovery_workers(opt_);
  return validate_on_open(t_, root_->base, shape);
}

void StringCDPTree::finish_crashed_merge() {
  freed_ +=
      finish_interrupted_merge(t_.pool, &root_->base, *t_.dir, *t_.pending, string_next(t_.pool));
}

// Each shard's chain, but for the key pages the base names (a log release keeps them).
void StringCDPTree::finish_log_release(int v) {
  LogPagePtr* other = table(v);
  for (std::size_t p = 0; p < opt_.log_partitions; ++p)
    if (other[p])
      PLog::release_chain(t_.pool, &other[p], v,
                          [this](u64 page) { return key_pages_.named(page); });
}

// The inner index from the leaves (the list holds no max keys of string leaves), then the
// key pages counted from the records the leaves name. No restart count: the string leaves
// carry no lock bits (their writes go through the buffer; §3.4's are the integer form's).
void StringCDPTree::build_base(OpenedList&) {
  gp_b_.store(new_base());
  key_pages_.rebuild(*gp_b_.load());
}

void StringCDPTree::replay(StringBuffer& b, std::size_t p) const {
  b.replay(p, kTree);
}

// The key pages are live too, though no log holds them. This sweep reads every block the
// directory owns (a few ms of an open: docs/cdptree.md "One merge driver"); the integer
// form's reads only the log pages the open-time check listed.
void StringCDPTree::sweep_log_pages(std::unordered_set<u64> in_use, const OpenedList&) {
  for (u64 pg : key_pages_.pages()) in_use.insert(pg);
  t_.pages->sweep(in_use);
}

// ------------------------------------------------------------------ reads

std::optional<u64> StringCDPTree::below_front(std::string_view k, u64 h,
                                              const StringBuffer* writing, SyncManager::Slot& s,
                                              LeafHint hint) const {
  {
    Guard<StringBuffer> g(s, kMR, gp_m);
    // A writer holding a shard lock of the buffer that has just become the Middle searched it
    // already and must not wait for its own lock.
    if (g.get() && g.get() != writing)
      if (auto r = g.get()->find(k, h)) return r;
  }
  Guard<StringBase> g(s, kBR, gp_b_);
  const StringBase& b = *g.get();
  // The base the hint was found in: its leaf is not searched for again (a newer base may
  // have been published since, and a freed one's address reused: the serial tells them apart).
  if (hint.serial == b.serial && !b.empty()) return b.lookup_in(t_.pool, hint.leaf, k, h);
  return b.lookup(t_.pool, k, h);
}

// Redone when a Middle was retired meanwhile: its entries may have moved into the Front after
// the Front was read (a merge in parts, string_merge.cc).
std::optional<u64> StringCDPTree::lookup_raw(std::string_view k, u64 h) const {
  auto& s = sm.mine();
  // The base leaf's first lines requested before the buffers are probed, so that their misses
  // overlap (as DPTree's find): under a guard of its own, since the base read after the
  // buffers may be a newer one (then these lines were requested in vain and the leaf is
  // searched for in it).
  LeafHint hint;
  {
    Guard<StringBase> g(s, kBR, gp_b_);
    if (const StringBase* b = g.get()) hint = {b->serial, b->prefetch_leaf(t_.pool, k)};
  }
  for (;;) {
    const std::size_t retired = retired_.load(std::memory_order_seq_cst);
    {
      Guard<StringBuffer> g(s, kFR, gp_f);
      if (auto r = g.get()->find(k, h)) return r;
    }
    auto r = below_front(k, h, nullptr, s, hint);
    if (retired_.load(std::memory_order_seq_cst) == retired) return r;
  }
}

bool StringCDPTree::present_below(std::string_view k, u64 h, const StringBuffer* writing) const {
  auto r = below_front(k, h, writing, sm.mine());
  return r && !(*r & kTombstone);
}

template <class F>
void StringCDPTree::in_front(std::string_view k, F&& op) {
  const u64 h = hash_string(k);
  std::size_t entries = 0, shards = 1;
  {
    Guard<StringBuffer> g(sm.mine(), kFW, gp_f);
    op(*g.get(), h, entries);
    shards = g.get()->shards();
  }
  after_write(entries * shards);
}

template <class F>
std::optional<u64> StringCDPTree::write(std::string_view k, F&& decide) {
  std::optional<u64> out;
  in_front(k, [&](StringBuffer& f, u64 h, std::size_t& entries) {
    out = f.upsert_with(
        k, h, [&](const u64* cur) { return decide(&f, h, cur); }, entries);
  });
  return out;
}

std::optional<Value> StringCDPTree::lookup(std::string_view k) const {
  check_string_key(k, kStringTreeMaxKey, kName);
  auto r = lookup_raw(k, hash_string(k));
  if (!r || (*r & kTombstone)) return std::nullopt;
  return r;
}

// ------------------------------------------------------------------ writes

void StringCDPTree::upsert(std::string_view k, Value v) {
  check_string_key(k, kStringTreeMaxKey, kName);
  check_value(v, "CDPTree");
  refuse_values();
  in_front(k,
           [&](StringBuffer& f, u64 h, std::size_t& entries) { f.upsert_blind(k, h, v, entries); });
}

bool StringCDPTree::insert(std::string_view k, Value v) {
  check_string_key(k, kStringTreeMaxKey, kName);
  check_value(v, "CDPTree");
  refuse_values();
  bool done = false;
  write(k, [&](const StringBuffer* f, u64 h, const u64* cur) -> std::optional<u64> {
    const bool present = cur ? !(*cur & kTombstone) : present_below(k, h, f);
    if (present) return std::nullopt;
    done = true;
    return v;
  });
  return done;
}

bool StringCDPTree::replace(std::string_view k, u64 v) {
  bool done = false;
  write(k, [&](const StringBuffer* f, u64 h, const u64* cur) -> std::optional<u64> {
    const bool present = cur ? !(*cur & kTombstone) : present_below(k, h, f);
    if (!present) return std::nullopt;
    done = true;
    return v;
  });
  return done;
}

bool StringCDPTree::update(std::string_view k, Value v) {
  check_string_key(k, kStringTreeMaxKey, kName);
  check_value(v, "CDPTree");
  refuse_values();
  return replace(k, v);
}

bool StringCDPTree::remove(std::string_view k) {
  check_string_key(k, kStringTreeMaxKey, kName);
  const bool done = replace(k, kTombstone);
  if (done) note_remove();
  return done;
}

// ------------------------------------------------------------------ scans

namespace {
// Entries of the three components merged by key, the lowest index winning a tie (the newest:
// Front, Middle, base); tombstones hide older entries and are left out. Only keys up to
// `bound` (when `bounded`) are final. Returns false when `count` pairs are out.
bool merge_components(StringEntries (&a)[3], bool bounded, const std::string& bound,
                      std::size_t count, std::size_t& got, std::vector<StringKV>& out) {
  const StringKeyLess less;  // prefixes first: most pairs are one integer compare
  std::size_t pos[3] = {0, 0, 0};
  for (;;) {
    int who = -1;
    for (int i = 0; i < 3; ++i)
      if (pos[i] < a[i].size() && (!bounded || !less(bound, a[i][pos[i]].first)) &&
          (who < 0 || less(a[i][pos[i]].first, a[who][pos[who]].first)))
        who = i;
    if (who < 0) return true;
    auto& [key, v] = a[who][pos[who]];
    // The other components' entries of this key are older: skipped (no head is below it).
    for (int i = 0; i < 3; ++i)
      if (i != who && pos[i] < a[i].size() && !less(key, a[i][pos[i]].first)) ++pos[i];
    ++pos[who];
    if (v & kTombstone) continue;
    out.emplace_back(std::move(key), v);  // the batch is not read again
    if (++got == count) return false;
  }
}
}  // namespace

// Batches from Front, Middle and base, merged by key with that priority; a round is redone
// when a Middle was retired meanwhile (as in lookup_raw). Entries up to the smallest last key
// of a batch that stopped at its limit are final; the next round starts just above it (the
// key with a zero byte appended: the next string in this order).
std::size_t StringCDPTree::scan(std::string_view start, std::size_t count,
                                std::vector<StringKV>& out) const {
  check_string_key(start, kStringTreeMaxKey, kName);
  return scan_raw(std::string(start), count, out);
}

std::size_t StringCDPTree::scan_raw(std::string cur, std::size_t count,
                                    std::vector<StringKV>& out) const {
  std::size_t got = 0;
  auto& s = sm.mine();
  StringEntries a[3];
  while (got < count) {
    const std::size_t batch = std::max<std::size_t>(count - got, 16);
    const std::size_t retired = retired_.load(std::memory_order_seq_cst);
    bool complete[3] = {true, true, true};
    for (auto& x : a) x.clear();
    {
      Guard<StringBuffer> g(s, kFR, gp_f);
      complete[0] = g.get()->collect(cur, batch, a[0]);
    }
    {
      Guard<StringBuffer> g(s, kMR, gp_m);
      if (g.get()) complete[1] = g.get()->collect(cur, batch, a[1]);
    }
    {
      Guard<StringBase> g(s, kBR, gp_b_);
      complete[2] = g.get()->collect(t_.pool, cur, batch, a[2]);
    }
    if (retired_.load(std::memory_order_seq_cst) != retired) continue;  // as lookup_raw
    bool all = true;
    std::string bound;
    for (int i = 0; i < 3; ++i)
      if (!complete[i] && !a[i].empty() && (all || a[i].back().first < bound)) {
        all = false;
        bound = a[i].back().first;
      }
    if (!merge_components(a, !all, bound, count, got, out)) return got;
    // bound < cur only in a damaged base (keys out of order across leaves, which open does not
    // check key by key): stop rather than go round forever.
    if (all || bound < cur) break;
    cur = bound;
    cur.push_back('\0');
  }
  return got;
}

std::size_t StringCDPTree::count_live() const {
  std::size_t n = 0;
  std::string cur;
  std::vector<StringKV> tmp;
  for (;;) {
    tmp.clear();
    const std::size_t got = scan_raw(cur, 1 << 16, tmp);
    n += got;
    if (got < (1u << 16)) return n;
    cur = tmp.back().first;
    cur.push_back('\0');
  }
}

// ------------------------------------------------------------------ stats

IndexStats StringCDPTree::stats() const {
  IndexStats s;
  s.records = count_live();
  auto& sync = sm.mine();
  std::size_t front = 0, middle = 0, leaves = 0, log_pages = 0;
  {
    Guard<StringBuffer> g(sync, kFR, gp_f);
    front = g.get()->size();
    log_pages = g.get()->all_log_pages().size();
    s.dram_bytes += g.get()->dram_bytes();
  }
  {
    Guard<StringBuffer> g(sync, kMR, gp_m);
    if (g.get()) {
      middle = g.get()->size();
      s.dram_bytes += g.get()->dram_bytes();
    }
  }
  {
    Guard<StringBase> g(sync, kBR, gp_b_);
    leaves = g.get()->leaves.size();
    s.dram_bytes += g.get()->dram_bytes();
  }
  s.dram_bytes +=
      sizeof(*this) + t_.dir->dram_bytes() + t_.pages->dram_bytes() + key_pages_.dram_bytes();
  s.pm_bytes = t_.alloc.stats().live_bytes;  // the key bytes live in log records (key pages)
  auto d = [](std::size_t x) { return static_cast<double>(x); };
  s.extra = {{"front_entries", d(front)},
             {"middle_entries", d(middle)},
             {"leaves", d(leaves)},
             {"leaf_capacity", d(opt_.leaf_capacity)},
             {"merges", d(merges.load())},
             {"failed_merges", d(failed_merges.load())},
             {"merge_wait_max_ms", merge_wait.ms()},
             {"merge_retries", d(merge_retries.load())},
             {"merge_parts", d(parts_.load())},
             {"failed_merge_parts", d(failed_parts_.load())},
             {"merge_partitions", d(partitions_.load())},
             {"leaves_created", d(created_.load())},
             {"leaves_freed", d(freed_.load())},
             {"leaves_rewritten", d(rewritten_.load())},
             {"leaves_merged_in_place", d(in_place_.load())},
             {"log_pages", d(log_pages)},
             {"key_pages", d(key_pages_.size())},
             {"key_pages_freed", d(key_pages_freed_.load())},
             {"log_pages_inherited", d(pages_inherited_.load())},
             {"free_log_pages", d(t_.pages->size(0) + t_.pages->size(1))},
             {"recovery_seconds", recovery_times.total},
             {"recovery_check_seconds", recovery_times.check},
             {"recovery_index_seconds", recovery_times.index},
             {"recovery_replay_seconds", recovery_times.replay},
             {"recovery_sweep_seconds", recovery_times.sweep}};
  return s;
}

}  // namespace dptree::cdp
