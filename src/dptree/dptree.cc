// DPTree, single-threaded (§2). One Impl holds the buffer tree and its PM log (§2.1), the
// base tree (§2.2), the merge (§2.3, Algorithms 1-3) and recovery (§2.4, Algorithm 4).
#include "dptree/dptree.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "dptree/buffer_tree.h"
#include "dptree/error.h"
#include "dptree/layout.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"

namespace dptree {

using namespace detail;  // NOLINT: the layout vocabulary

namespace {

thread_local DPTreePhase g_phase = DPTreePhase::idle;

struct PhaseScope {
  DPTreePhase saved;
  explicit PhaseScope(DPTreePhase p) : saved(g_phase) { g_phase = p; }
  ~PhaseScope() { g_phase = saved; }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;
};

std::string num(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

}  // namespace

DPTreePhase dptree_current_phase() {
  return g_phase;
}

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
  }
  return "?";
}

void DPTreeOptions::validate() const {
  auto bad = [](const std::string& what) {
    throw Error(Errc::invalid_argument, "DPTree option " + what);
  };
  if (leaf_capacity < 4 || leaf_capacity > 4096)
    bad("leaf_capacity=" + std::to_string(leaf_capacity) + " is out of range: use 4..4096");
  if (!(merge_ratio > 0 && merge_ratio < 1))
    bad("merge_ratio (R)=" + num(merge_ratio) + " is out of range: use a value in (0, 1)");
  if (!(fill_rate > 0.5 && fill_rate <= 1))
    bad("fill_rate (FR)=" + num(fill_rate) + " is out of range: use a value in (0.5, 1]");
  if (!(consolidate_threshold > 0 && consolidate_threshold <= 0.5))
    bad("consolidate_threshold (CT)=" + num(consolidate_threshold) +
        " is out of range: use a value in (0, 0.5]");
  if (log_page_size < 1024 || log_page_size % 1024 != 0)
    bad("log_page_size=" + std::to_string(log_page_size) +
        " is out of range: use a multiple of 1024, at least 1024");
  if (!(bloom_error_rate > 0 && bloom_error_rate < 1))
    bad("bloom_error_rate=" + num(bloom_error_rate) + " is out of range: use a value in (0, 1)");
}

DPTreeOptions DPTreeOptions::from_map(const std::map<std::string, std::string>& m) {
  DPTreeOptions o;
  for (const auto& [k, v] : m) {
    auto as_size = [&] {
      try {
        std::size_t pos = 0;
        auto x = std::stoull(v, &pos);
        if (pos != v.size()) throw std::invalid_argument(v);
        return static_cast<std::size_t>(x);
      } catch (const std::exception&) {
        throw Error(Errc::invalid_argument,
                    "DPTree option " + k + "='" + v + "' is not a whole number: give one");
      }
    };
    auto as_double = [&] {
      try {
        std::size_t pos = 0;
        double x = std::stod(v, &pos);
        if (pos != v.size()) throw std::invalid_argument(v);
        return x;
      } catch (const std::exception&) {
        throw Error(Errc::invalid_argument,
                    "DPTree option " + k + "='" + v + "' is not a number: give one");
      }
    };
    if (k == "leaf_capacity")
      o.leaf_capacity = as_size();
    else if (k == "merge_ratio")
      o.merge_ratio = as_double();
    else if (k == "fill_rate")
      o.fill_rate = as_double();
    else if (k == "consolidate_threshold")
      o.consolidate_threshold = as_double();
    else if (k == "log_page_size")
      o.log_page_size = as_size();
    else if (k == "bloom_error_rate")
      o.bloom_error_rate = as_double();
    else if (k == "min_merge_records")
      o.min_merge_records = as_size();
    else
      throw Error(Errc::invalid_argument,
                  "unknown DPTree option '" + k +
                      "': use leaf_capacity, merge_ratio, fill_rate, consolidate_threshold, "
                      "log_page_size, bloom_error_rate or min_merge_records");
  }
  o.validate();
  return o;
}

struct DPTreeCore::Impl {
  pm::Pool& pool;
  pm::Allocator& alloc;
  DPTreeOptions opt;
  LeafLayout L;
  LogGeometry G;
  Root* root = nullptr;

  // Owner directory (layout.h): blocks and the zero slots ready for reuse.
  std::vector<u64> dir_blocks;
  std::vector<u64> dir_free;

  // Buffer tree (§2.1) and its bloom filter (§2).
  BufferTree buffer;
  Bloom bloom;

  // PLog (§2.1): persistent header root->log_head[gv]; volatile current page and offset.
  std::vector<u64> log_pages;  // the chain of the current log
  std::size_t log_page_idx = 0, log_pos = 0;
  std::vector<u64> freelist[2];  // free pages whose record words all carry validity bit b

  // DRAM inner index of the base tree (§2.2): max keys and leaves of version gv, in order.
  std::vector<u64> inner_max, inner_leaf;

  // pendingLeaves (§2.4) of the running merge.
  std::vector<u64> pending_blocks;
  std::size_t pending_pos = 0;

  // Counters for stats().
  std::size_t merges = 0, splits = 0, consolidations = 0, created = 0, freed = 0;
  mutable std::size_t lazy_rebuilds = 0;

  Impl(pm::Pool& p, const DPTreeOptions& o) : pool(p), alloc(p.allocator()), opt(o) {}

  int cv() const { return static_cast<int>(root->gv & 1); }
  Leaf leaf(u64 off) const { return Leaf{pool.at(off), &L}; }
  u64* word(u64 off) const { return pool.at<u64>(off); }
  u64 base_count() const { return root->base_count[cv()]; }

  // ---------------------------------------------------------------- create / open
  void create(std::size_t kb, std::size_t vb) {
    opt.validate();
    if (*pool.root_word() != 0)
      throw Error(Errc::already_exists, "pool '" + pool.name() +
                                            "' already holds an index: open it instead of "
                                            "creating a new one, or use a new pool");
    L.init(opt.leaf_capacity, kb, vb);
    G.init(L.ebytes, opt.log_page_size);
    pm::CategoryScope cat(pm::Category::alloc);
    u64 r = alloc.reserve(sizeof(Root));
    auto* rt = pool.at<Root>(r);
    std::memset(static_cast<void*>(rt), 0, sizeof(Root));
    rt->magic = kRootMagic;
    rt->leaf_capacity = opt.leaf_capacity;
    rt->key_bytes = kb;
    rt->value_bytes = vb;
    rt->log_page_size = opt.log_page_size;
    pm::flush(rt, sizeof(Root));
    alloc.activate(pool.root_word(), r);  // its first fence orders the root's contents
    root = rt;
    reset_bloom();
  }

  void open(std::size_t kb, std::size_t vb) {
    auto* rt = pool.root<Root>();
    if (!rt || rt->magic != kRootMagic)
      throw Error(Errc::corrupt,
                  "pool '" + pool.name() + "' holds no DPTree: create one with DPTree::create");
    if (rt->key_bytes != kb || rt->value_bytes != vb)
      throw Error(Errc::invalid_argument,
                  "pool '" + pool.name() + "' holds a DPTree of " + std::to_string(rt->key_bytes) +
                      "-byte keys and " + std::to_string(rt->value_bytes) +
                      "-byte values: open it with DPTree<" + std::to_string(rt->key_bytes) + ", " +
                      std::to_string(rt->value_bytes) + ">");
    opt.leaf_capacity = rt->leaf_capacity;
    opt.log_page_size = rt->log_page_size;
    opt.validate();
    root = rt;
    L.init(opt.leaf_capacity, kb, vb);
    G.init(L.ebytes, opt.log_page_size);
    recover();
  }

  // ---------------------------------------------------------------- owner directory
  void load_dir() {
    dir_blocks.clear();
    dir_free.clear();
    for (u64 b = root->dir; b; b = *word(b)) {
      dir_blocks.push_back(b);
      for (std::size_t i = kDirSlots; i >= 1; --i)
        if (word(b)[i] == 0) dir_free.push_back(b + 8 * i);
    }
  }
  u64 dir_slot() {
    if (dir_free.empty()) {
      pm::CategoryScope cat(pm::Category::alloc);
      u64 b = alloc.reserve(kDirBlockBytes);
      std::memset(pool.at(b), 0, kDirBlockBytes);
      pm::flush(pool.at(b), kDirBlockBytes);
      alloc.activate(dir_blocks.empty() ? &root->dir : word(dir_blocks.back()), b);
      dir_blocks.push_back(b);
      for (std::size_t i = kDirSlots; i >= 1; --i) dir_free.push_back(b + 8 * i);
    }
    u64 s = dir_free.back();
    dir_free.pop_back();
    return s;
  }
  void free_owned(u64 slot) {
    if (*word(slot) == 0) return;
    pm::CategoryScope cat(pm::Category::alloc);
    alloc.free(word(slot));
    dir_free.push_back(slot);
  }

  // ---------------------------------------------------------------- PM log (§2.1)
  int log_version() const { return cv(); }
  u64 valid_bit() const { return static_cast<u64>(1 - log_version()); }

  void encode(u64 k, u64 v, u64* out) const {
    // The entry's bits (key field, then value field, padding zero) cut into 63-bit payloads,
    // each with the validity bit in bit 0.
    u64 e[16] = {};
    e[0] = k;
    e[L.kbytes / 8] = v;
    std::size_t n = L.ebytes / 8;
    for (std::size_t j = 0; j < G.words; ++j) {
      std::size_t b = 63 * j, wi = b / 64, sh = b % 64;
      u64 x = wi < n ? e[wi] >> sh : 0;
      if (sh > 1 && wi + 1 < n) x |= e[wi + 1] << (64 - sh);
      out[j] = (x << 1) | valid_bit();
    }
  }
  // Returns false for a torn or absent record (some word without the validity bit).
  bool decode(const u64* in, u64 vbit, u64& k, u64& v) const {
    u64 e[17] = {};
    std::size_t n = L.ebytes / 8;
    for (std::size_t j = 0; j < G.words; ++j) {
      if ((in[j] & 1) != vbit) return false;
      u64 x = in[j] >> 1;
      std::size_t b = 63 * j, wi = b / 64, sh = b % 64;
      e[wi] |= x << sh;
      if (sh > 1) e[wi + 1] |= x >> (64 - sh);
    }
    (void)n;
    k = e[0];
    v = e[L.kbytes / 8];
    return true;
  }

  // A page for the log of version `ver`: from freelist_ver, else a new one initialised with
  // validity bit `ver` in every word (§2.1 caching allocation).
  u64 take_page(int ver) {
    if (!freelist[ver].empty()) {
      u64 pg = freelist[ver].back();
      freelist[ver].pop_back();
      word(pg)[2] = 0;  // the old link must not reach PM after the new one
      pm::persist(&word(pg)[2], 8);
      return pg;
    }
    u64 slot = dir_slot();
    u64 pg;
    {
      pm::CategoryScope cat(pm::Category::alloc);
      pg = alloc.reserve(opt.log_page_size);
    }
    u64* w = word(pg);
    std::fill(w, w + opt.log_page_size / 8, static_cast<u64>(ver));
    w[0] = slot;
    w[1] = kPageType;
    w[2] = 0;
    w[3] = static_cast<u64>(ver);
    pm::flush(w, opt.log_page_size);
    pm::CategoryScope cat(pm::Category::alloc);
    alloc.activate(word(slot), pg);
    return pg;
  }

  void log_append(u64 k, u64 v) {
    PhaseScope ph(DPTreePhase::log_append);
    pm::CategoryScope cat(pm::Category::log);
    if (log_pages.empty() || log_pos == G.per_page) {
      if (!log_pages.empty() && log_page_idx + 1 < log_pages.size()) {
        ++log_page_idx;  // a page linked before a crash, still empty
      } else {
        u64 pg = take_page(log_version());
        u64* link = log_pages.empty() ? &root->log_head[log_version()] : &word(log_pages.back())[2];
        *link = pg;
        pm::persist(link, 8);
        log_pages.push_back(pg);
        log_page_idx = log_pages.size() - 1;
      }
      log_pos = 0;
    }
    u64 rec[16];
    encode(k, v, rec);
    auto* dst = pool.at<u64>(log_pages[log_page_idx] + G.offset(log_pos));
    std::memcpy(dst, rec, G.words * 8);
    pm::persist(dst, G.words * 8);  // one line, one fence (layout.h)
    ++log_pos;
  }

  // Replays the log of version gv into a new buffer tree; the first torn or absent record
  // ends it (§2.1) and is where appending continues.
  void replay_log() {
    buffer.clear();
    log_pages.clear();
    for (u64 pg = root->log_head[log_version()]; pg; pg = word(pg)[2]) log_pages.push_back(pg);
    log_page_idx = 0;
    log_pos = 0;
    u64 vb = valid_bit();
    for (std::size_t i = 0; i < log_pages.size(); ++i) {
      log_page_idx = i;
      for (log_pos = 0; log_pos < G.per_page; ++log_pos) {
        u64 k, v;
        u64* rec = pool.at<u64>(log_pages[i] + G.offset(log_pos));
        if (!decode(rec, vb, k, v)) {
          // A torn record: some of its words may carry the validity bit. Appending over it
          // could then mix them with a new record torn by a later crash into a "valid"
          // record, so invalidate every word first.
          bool any = false;
          for (std::size_t j = 0; j < G.words; ++j) any |= (rec[j] & 1) == vb;
          if (any) {
            pm::CategoryScope cat(pm::Category::log);
            for (std::size_t j = 0; j < G.words; ++j) rec[j] = 1 - vb;
            pm::persist(rec, G.words * 8);
          }
          return;
        }
        buffer.upsert(k, v);
        bloom.add(k);
      }
    }
  }

  // After a merge: the full pages of the old log go to the other freelist, the last page is
  // given back (its words mix both validity bits), and the old log header is cleared.
  // Idempotent: recovery re-runs it while root->log_head[old] is set.
  void release_log(int old) {
    pm::CategoryScope cat(pm::Category::log);
    std::vector<u64> pages;
    for (u64 pg = root->log_head[old]; pg; pg = word(pg)[2]) pages.push_back(pg);
    if (pages.empty()) return;
    for (std::size_t i = 0; i < pages.size(); ++i) {
      word(pages[i])[3] = i + 1 < pages.size() ? static_cast<u64>(1 - old) : kDiscardFlavor;
      pm::flush(&word(pages[i])[3], 8);
    }
    pm::fence();
    root->log_head[old] = 0;
    pm::persist(&root->log_head[old], 8);
  }

  // Pages owned by the directory but not in the current log are free: to the freelist of
  // their flavor, or back to the allocator when marked for discard.
  void sweep_pages() {
    std::unordered_set<u64> in_log(log_pages.begin(), log_pages.end());
    freelist[0].clear();
    freelist[1].clear();
    for (u64 b : dir_blocks)
      for (std::size_t i = 1; i <= kDirSlots; ++i) {
        u64 blk = word(b)[i];
        if (!blk || word(blk)[1] != kPageType || in_log.contains(blk)) continue;
        u64 fl = word(blk)[3];
        if (fl <= 1)
          freelist[fl].push_back(blk);
        else
          free_owned(b + 8 * i);
      }
  }

  // Cache capacity C_size (§2.1): about the buffer size that triggers the next merge.
  void trim_freelists() {
    std::size_t want = merge_threshold() / G.per_page + 2;
    int spare = 1 - cv();  // the list the next log does not use goes first
    for (int l : {spare, 1 - spare})
      while (freelist[0].size() + freelist[1].size() > want && !freelist[l].empty()) {
        free_owned(word(freelist[l].back())[0]);
        freelist[l].pop_back();
      }
  }

  // ---------------------------------------------------------------- base tree (§2.2)
  // Rebuilds count, order and fingerprints of version v from the bitmap and the key-value
  // pool when the leaf's restart counter lags the global one (partial persistence, §2.2).
  void ensure_meta(u64 off, int v) const {
    Leaf lf = leaf(off);
    if (lf.rc(v) == root->restart_count) return;
    rebuild_meta(lf, v);
    lf.rc(v) = root->restart_count;
    pm::CategoryScope cat(pm::Category::node);
    pm::persist(&lf.rc(v), 8);
    ++lazy_rebuilds;
  }
  void rebuild_meta(Leaf lf, int v) const {
    std::size_t n = 0;
    for (std::size_t s = 0; s < L.cap; ++s) {
      if (lf.state(v, s) != kOccupied) continue;
      lf.order(v)[n++] = static_cast<std::uint16_t>(s);
      lf.fp(v)[s] = static_cast<std::uint8_t>(hash_key(lf.key(s)) >> 56);
    }
    std::sort(lf.order(v), lf.order(v) + n,
              [&](std::uint16_t a, std::uint16_t b) { return lf.key(a) < lf.key(b); });
    lf.count(v) = n;
  }
  // Hash probe with fingerprints (§2.2): slot of k in version v, or -1.
  long probe(Leaf lf, int v, u64 k) const {
    u64 h = hash_key(k);
    auto f = static_cast<std::uint8_t>(h >> 56);
    std::size_t s = h % L.cap;
    for (std::size_t n = 0; n < L.cap; ++n, s = (s + 1 == L.cap ? 0 : s + 1)) {
      unsigned st = lf.state(v, s);
      if (st == kEmpty) return -1;
      if (st == kOccupied && lf.fp(v)[s] == f && lf.key(s) == k) return static_cast<long>(s);
    }
    return -1;
  }
  std::size_t leaf_index(u64 k) const {
    return static_cast<std::size_t>(std::lower_bound(inner_max.begin(), inner_max.end(), k) -
                                    inner_max.begin());
  }
  std::optional<u64> base_lookup(u64 k) const {
    std::size_t i = leaf_index(k);
    if (i == inner_max.size()) return std::nullopt;
    ensure_meta(inner_leaf[i], cv());
    Leaf lf = leaf(inner_leaf[i]);
    long s = probe(lf, cv(), k);
    if (s < 0) return std::nullopt;
    return lf.value(static_cast<std::size_t>(s));
  }
  // Phase 5: the inner index from the leaves' max keys.
  void rebuild_inner() {
    inner_max.clear();
    inner_leaf.clear();
    int v = cv();
    for (u64 l = root->head[v]; l; l = leaf(l).next(v)) {
      inner_max.push_back(leaf(l).max_key(v));
      inner_leaf.push_back(l);
    }
  }

  // ---------------------------------------------------------------- operations
  std::size_t merge_threshold() const {
    std::size_t floor_n = opt.min_merge_records ? opt.min_merge_records : opt.leaf_capacity;
    auto r = static_cast<std::size_t>(opt.merge_ratio * static_cast<double>(base_count()));
    return std::max(floor_n, r);
  }
  void reset_bloom() { bloom.reset(merge_threshold() + 1, opt.bloom_error_rate); }

  void upsert_raw(u64 k, u64 v) {
    log_append(k, v);  // durable first: the record is the acknowledgement
    buffer.upsert(k, v);
    bloom.add(k);
    if (buffer.size() >= merge_threshold()) merge();
  }
  static void check_value(Value v) {
    if (v > DPTreeCore::kMaxValue)
      throw Error(Errc::invalid_argument,
                  "DPTree value " + std::to_string(v) +
                      " is out of range: the top bit is the tombstone bit (§2), use values "
                      "up to 2^63-1");
  }
  std::optional<u64> lookup(u64 k) const {
    if (bloom.may_contain(k))
      if (const u64* p = buffer.find(k)) {
        if (*p & kTombstone) return std::nullopt;
        return *p;
      }
    return base_lookup(k);
  }

  std::size_t scan(u64 start, std::size_t count, std::vector<KV>& out) const {
    std::size_t got = 0;
    auto bi = buffer.lower_bound(start);
    int v = cv();
    std::size_t li = leaf_index(start), pos = 0;
    auto settle = [&] {  // base cursor to the next existing entry
      while (li < inner_leaf.size()) {
        ensure_meta(inner_leaf[li], v);
        Leaf lf = leaf(inner_leaf[li]);
        if (pos < lf.count(v)) return;
        ++li;
        pos = 0;
      }
    };
    if (li < inner_leaf.size()) {
      ensure_meta(inner_leaf[li], v);
      Leaf lf = leaf(inner_leaf[li]);
      auto* o = lf.order(v);
      pos = static_cast<std::size_t>(
          std::lower_bound(o, o + lf.count(v), start,
                           [&](std::uint16_t s, u64 key) { return lf.key(s) < key; }) -
          o);
    }
    settle();
    while (got < count) {
      bool have_base = li < inner_leaf.size();
      u64 bk = 0, bv = 0;
      if (have_base) {
        Leaf lf = leaf(inner_leaf[li]);
        std::size_t s = lf.order(v)[pos];
        bk = lf.key(s);
        bv = lf.value(s);
      }
      if (!bi.valid() && !have_base) break;
      if (bi.valid() && (!have_base || bi.key() <= bk)) {
        if (have_base && bi.key() == bk) {
          ++pos;
          settle();
        }
        if (!(bi.value() & kTombstone)) {
          out.emplace_back(bi.key(), bi.value());
          ++got;
        }
        bi.next();
      } else {
        out.emplace_back(bk, bv);
        ++got;
        ++pos;
        settle();
      }
    }
    return got;
  }

  std::size_t size() const {
    long long n = static_cast<long long>(base_count());
    for (auto it = buffer.begin(); it.valid(); it.next()) {
      bool in_base = base_lookup(it.key()).has_value();
      if (it.value() & kTombstone)
        n -= in_base;
      else
        n += !in_base;
    }
    return static_cast<std::size_t>(n);
  }

  // ---------------------------------------------------------------- merge (§2.3)
  // What phase 4 must flush per leaf. Phases 2 and 3 flush what they finish right away (no
  // fence either, so it is the same write-back, only earlier) and say so here.
  struct Dirty {
    bool whole = false;
    std::vector<u64> durable;  // meta_p[nv] as PM holds it (empty: unknown, flush all)
    std::vector<std::uint16_t> slots;
  };
  std::unordered_map<u64, Dirty> dirty;
  std::vector<u64> pending_leaves;  // offsets of leaves created by this merge

  u64* next_word(u64 prev, int v) { return prev ? &leaf(prev).next(v) : &root->head[v]; }

  // The pendingLeaves list exists from the start of a merge (after in_merge is set) to the end
  // of its garbage collection, so recovery finds in it the marker of an unfinished GC even
  // when the merge created no leaf (a consolidation alone makes garbage).
  void pending_add(u64 slot) {
    pm::CategoryScope cat(pm::Category::alloc);
    new_pending_block_if_full();
    u64* e = word(pending_blocks.back()) + 1 + pending_pos++;
    *e = slot;
    pm::persist(e, 8);
  }
  void new_pending_block_if_full() {
    pm::CategoryScope cat(pm::Category::alloc);
    if (pending_blocks.empty() || pending_pos == kPendingSlots) {
      u64 b = alloc.reserve(kPendingBlockBytes);
      std::memset(pool.at(b), 0, kPendingBlockBytes);
      pm::flush(pool.at(b), kPendingBlockBytes);
      alloc.activate(pending_blocks.empty() ? &root->pending : word(pending_blocks.back()), b);
      pending_blocks.push_back(b);
      pending_pos = 0;
    }
  }
  std::vector<u64> pending_slots() const {
    std::vector<u64> out;
    for (u64 b = root->pending; b; b = *word(b))
      for (std::size_t i = 1; i <= kPendingSlots; ++i)
        if (word(b)[i]) out.push_back(word(b)[i]);
    return out;
  }
  // Destroys pendingLeaves persistently, last block first (idempotent).
  void destroy_pending() {
    pm::CategoryScope cat(pm::Category::alloc);
    std::vector<u64*> owners;
    for (u64* w = &root->pending; *w; w = word(*w)) owners.push_back(w);
    for (auto it = owners.rbegin(); it != owners.rend(); ++it) alloc.free(*it);
    pending_blocks.clear();
    pending_pos = 0;
  }

  // A new leaf holding the sorted entries es in version nv, recorded in pendingLeaves
  // before it is activated and linked (§2.4).
  u64 new_leaf(const std::vector<std::pair<u64, u64>>& es, std::size_t from, std::size_t to,
               u64 max_key, int nv) {
    u64 slot = dir_slot();
    u64 off;
    {
      pm::CategoryScope cat(pm::Category::alloc);
      off = alloc.reserve(L.bytes);
    }
    std::memset(pool.at(off), 0, L.bytes);
    Leaf lf = leaf(off);
    lf.owner_slot() = slot;
    lf.type() = kLeafType;
    std::size_t n = 0;
    for (std::size_t i = from; i < to; ++i) {
      u64 h = hash_key(es[i].first);
      std::size_t s = h % L.cap;
      while (lf.state(nv, s) != kEmpty) s = s + 1 == L.cap ? 0 : s + 1;
      lf.set_entry(s, es[i].first, es[i].second);
      lf.set_state(nv, s, kOccupied);
      lf.fp(nv)[s] = static_cast<std::uint8_t>(h >> 56);
      lf.order(nv)[n++] = static_cast<std::uint16_t>(s);
    }
    lf.count(nv) = n;
    lf.max_key(nv) = max_key;
    lf.rc(nv) = root->restart_count;
    pending_add(slot);
    {
      pm::CategoryScope cat(pm::Category::node);
      pm::flush(pool.at(off), 64);  // header, ordered by activate's first fence
    }
    {
      pm::CategoryScope cat(pm::Category::alloc);
      alloc.activate(word(slot), off);
    }
    dirty[off].whole = true;
    pending_leaves.push_back(off);
    ++created;
    return off;
  }
  // Leaves filled at rate FR with es[from, to) (§2.3, Algorithm 2 line 10); the last gets
  // max_key. Returns them in order, linked in version nv (the last's next left to the caller).
  std::vector<u64> build_leaves(const std::vector<std::pair<u64, u64>>& es, u64 max_key, int nv,
                                std::size_t nleaves = 0) {
    std::size_t n = es.size();
    auto per = std::max<std::size_t>(
        1, static_cast<std::size_t>(opt.fill_rate * static_cast<double>(L.cap)));
    if (!nleaves) nleaves = std::max<std::size_t>(1, (n + per - 1) / per);
    std::vector<u64> out;
    for (std::size_t i = 0; i < nleaves; ++i) {
      std::size_t a = i * n / nleaves, b = (i + 1) * n / nleaves;
      u64 mk = i + 1 == nleaves ? max_key : es[b - 1].first;
      out.push_back(new_leaf(es, a, b, mk, nv));
      if (i) leaf(out[i - 1]).next(nv) = out[i];
    }
    return out;
  }
  std::vector<std::pair<u64, u64>> leaf_entries(u64 off, int v) const {
    Leaf lf = leaf(off);
    std::vector<std::pair<u64, u64>> out;
    for (std::size_t i = 0; i < lf.count(v); ++i) {
      std::size_t s = lf.order(v)[i];
      out.emplace_back(lf.key(s), lf.value(s));
    }
    return out;
  }
  // Slots free for new entries in version nv: free in nv and not holding a current entry.
  std::size_t free_slots(Leaf lf, int nv) const {
    std::size_t n = 0;
    for (std::size_t s = 0; s < L.cap; ++s)
      n += lf.state(nv, s) != kOccupied && lf.state(1 - nv, s) != kOccupied;
    return n;
  }
  // Upserts sorted entries into the leaf's version nv out of place: each goes into a slot
  // that neither version uses, an old slot of the same key is marked deleted in nv, and the
  // order array is merged (Figure 5). The caller checked there is room.
  void upsert_in_place(u64 off, const std::vector<std::pair<u64, u64>>& es, std::size_t from,
                       std::size_t to, int nv, bool flush_now = false) {
    Leaf lf = leaf(off);
    int cvv = 1 - nv;
    auto& d = dirty[off];
    std::vector<std::pair<u64, std::uint16_t>> added;
    for (std::size_t i = from; i < to; ++i) {
      u64 k = es[i].first;
      long old = probe(lf, nv, k);
      u64 h = hash_key(k);
      std::size_t s = h % L.cap;
      while (lf.state(nv, s) == kOccupied || lf.state(cvv, s) == kOccupied)
        s = s + 1 == L.cap ? 0 : s + 1;
      lf.set_entry(s, k, es[i].second);
      lf.fp(nv)[s] = static_cast<std::uint8_t>(h >> 56);
      lf.set_state(nv, s, kOccupied);
      if (old >= 0) lf.set_state(nv, static_cast<std::size_t>(old), kDeleted);
      if (flush_now)
        pm::flush(lf.entry(s), L.ebytes);
      else
        d.slots.push_back(static_cast<std::uint16_t>(s));
      added.emplace_back(k, static_cast<std::uint16_t>(s));
    }
    // Merge the surviving old order with the added slots (both sorted by key).
    std::vector<std::uint16_t> ord;
    ord.reserve(lf.count(nv) + added.size());
    std::size_t j = 0;
    for (std::size_t i = 0; i < lf.count(nv); ++i) {
      std::uint16_t s = lf.order(nv)[i];
      if (lf.state(nv, s) != kOccupied) continue;
      while (j < added.size() && added[j].first < lf.key(s)) ord.push_back(added[j++].second);
      ord.push_back(s);
    }
    while (j < added.size()) ord.push_back(added[j++].second);
    std::copy(ord.begin(), ord.end(), lf.order(nv));
    lf.count(nv) = ord.size();
  }

  // Algorithm 2: LeafUpsertMerge.
  u64 leaf_upsert_merge(u64 prev, u64 cur, const std::vector<std::pair<u64, u64>>& es, int cvv,
                        int nv) {
    Leaf lf = leaf(cur);
    // A copy identical to what version nv already holds is durable already (every write of
    // it was flushed before the flip that ended its merge): phase 4 need not flush it.
    auto& d = dirty[cur];
    d.durable.resize(L.meta_p_bytes / 8);
    std::memcpy(d.durable.data(), lf.meta(nv), L.meta_p_bytes);
    lf.copy_meta(cvv, nv);  // line 1 (rc matches: ensure_meta ran on version cv)
    std::size_t freeslots = L.cap - lf.count(nv);
    if (es.size() < freeslots) {
      if (!es.empty()) upsert_in_place(cur, es, 0, es.size(), nv);
      return cur;
    }
    // Split (Figure 4): merge the leaf's entries with es (es wins) into new leaves.
    auto old = leaf_entries(cur, cvv);
    std::vector<std::pair<u64, u64>> all;
    all.reserve(old.size() + es.size());
    std::size_t i = 0, j = 0;
    while (i < old.size() || j < es.size()) {
      if (j == es.size() || (i < old.size() && old[i].first < es[j].first))
        all.push_back(old[i++]);
      else {
        if (i < old.size() && old[i].first == es[j].first) ++i;
        all.push_back(es[j++]);
      }
    }
    auto nl = build_leaves(all, lf.max_key(cvv), nv);
    *next_word(prev, nv) = nl.front();
    leaf(nl.back()).next(nv) = lf.next(cvv);
    ++splits;
    return nl.back();
  }

  // Algorithm 3: LeafDeleteMerge.
  void leaf_delete_merge(u64 off, const std::vector<u64>& ks, int nv) {
    Leaf lf = leaf(off);
    std::size_t i = 0, j = 0, n = lf.count(nv);
    bool any = false;
    while (i < n && j < ks.size()) {
      std::uint16_t s = lf.order(nv)[i];
      u64 k = lf.key(s);
      if (k < ks[j]) {
        ++i;
      } else if (k == ks[j]) {
        lf.set_state(nv, s, kDeleted);
        any = true;
        ++i;
        ++j;
      } else {
        ++j;
      }
    }
    if (!any) return;
    std::size_t m = 0;  // line 13: order and count of version nv
    for (std::size_t x = 0; x < n; ++x)
      if (lf.state(nv, lf.order(nv)[x]) == kOccupied) lf.order(nv)[m++] = lf.order(nv)[x];
    lf.count(nv) = m;
    // A delete needs only the bitmap written back (§2.3 phase 4); do it now, no fence.
    flush_meta(off, nv);
  }

  // Algorithm 1: BaseTreeMerge of the whole buffer tree.
  void merge() {
    if (buffer.empty()) return;
    const int cvv = cv(), nv = 1 - cvv;
    std::vector<std::pair<u64, u64>> ents;
    ents.reserve(buffer.size());
    for (auto it = buffer.begin(); it.valid(); it.next()) ents.emplace_back(it.key(), it.value());
    dirty.clear();
    pending_leaves.clear();
    {
      PhaseScope ph(DPTreePhase::merge_start);
      pm::CategoryScope cat(pm::Category::node);
      root->gv |= kInMerge;  // line 2: recovery reclaims what an interrupted merge created
      pm::persist(&root->gv, 8);
      new_pending_block_if_full();
    }
    {
      PhaseScope ph(DPTreePhase::upsert_merge);
      pm::CategoryScope cat(pm::Category::node);
      root->head[nv] = root->head[cvv];
      u64 prev = 0;
      std::size_t it = 0;
      std::vector<std::pair<u64, u64>> es;
      for (u64 cur = root->head[cvv]; cur; cur = leaf(cur).next(cvv)) {
        ensure_meta(cur, cvv);
        es.clear();
        u64 mk = leaf(cur).max_key(cvv);
        for (; it < ents.size() && ents[it].first <= mk; ++it)
          if (!(ents[it].second & kTombstone)) es.push_back(ents[it]);
        prev = leaf_upsert_merge(prev, cur, es, cvv, nv);
      }
      // line 11: entries beyond every leaf (only when the base tree is empty).
      es.clear();
      for (; it < ents.size(); ++it)
        if (!(ents[it].second & kTombstone)) es.push_back(ents[it]);
      if (!es.empty()) {
        auto nl = build_leaves(es, ~u64{0}, nv);
        *next_word(prev, nv) = nl.front();
        leaf(nl.back()).next(nv) = 0;
      }
    }
    {
      PhaseScope ph(DPTreePhase::delete_merge);
      pm::CategoryScope cat(pm::Category::node);
      std::size_t it = 0;
      std::vector<u64> ks;
      for (u64 cur = root->head[nv]; cur && it < ents.size(); cur = leaf(cur).next(nv)) {
        ks.clear();
        u64 mk = leaf(cur).max_key(nv);
        for (; it < ents.size() && ents[it].first <= mk; ++it)
          if (ents[it].second & kTombstone) ks.push_back(ents[it].first);
        if (!ks.empty()) leaf_delete_merge(cur, ks, nv);
      }
    }
    {
      PhaseScope ph(DPTreePhase::consolidation);
      pm::CategoryScope cat(pm::Category::node);
      consolidate(nv);
    }
    u64 total = 0;
    for (u64 l = root->head[nv]; l; l = leaf(l).next(nv)) total += leaf(l).count(nv);
    {
      // Phase 4: flush new entries and the crash-consistent metadata, no fence (§2.3).
      PhaseScope ph(DPTreePhase::flush);
      pm::CategoryScope cat(pm::Category::node);
      for (u64 l = root->head[nv]; l; l = leaf(l).next(nv)) {
        Leaf lf = leaf(l);
        auto d = dirty.find(l);
        if (d != dirty.end() && d->second.whole) {
          // A new leaf: its crash-consistent metadata and occupied slots; not the count /
          // order / fingerprints (partial persistence, §2.2) nor its empty slots.
          pm::flush(lf.meta(nv), L.meta_p_bytes);
          pm::flush(lf.meta(1 - nv), L.meta_p_bytes);  // zeroed: no stale bitmap codes
          std::vector<std::uint16_t> occ;
          for (std::size_t x = 0; x < L.cap; ++x)
            if (lf.state(nv, x) == kOccupied) occ.push_back(static_cast<std::uint16_t>(x));
          flush_slots(lf, occ);
          continue;
        }
        flush_meta(l, nv);
        if (d != dirty.end()) {
          std::sort(d->second.slots.begin(), d->second.slots.end());
          flush_slots(lf, d->second.slots);
        }
      }
      root->base_count[nv] = total;
      pm::flush(&root->head[nv], 8);
      pm::flush(&root->base_count[nv], 8);
    }
    {
      // Phase 6: the version flip. The fence first: no flushed line may trail the new gv.
      PhaseScope ph(DPTreePhase::version_flip);
      pm::CategoryScope cat(pm::Category::node);
      pm::fence();
      root->gv = static_cast<u64>(nv);
      pm::persist(&root->gv, 8);
    }
    rebuild_inner();  // phase 5 (after the flip: nothing reads the tree in between)
    ++merges;
    {
      PhaseScope ph(DPTreePhase::garbage_collection);
      collect_garbage(cvv, nv);
      release_log(cvv);
      // The next log (version nv) starts empty; its pages come from freelist_nv.
      std::vector<u64> old = std::move(log_pages);
      log_pages.clear();
      log_page_idx = log_pos = 0;
      for (std::size_t i = 0; i < old.size(); ++i) {
        if (i + 1 < old.size())
          freelist[nv].push_back(old[i]);
        else
          free_owned(word(old[i])[0]);
      }
      buffer.clear();
      trim_freelists();
    }
    reset_bloom();
    dirty.clear();
    pending_leaves.clear();
  }

  // Writes back the lines of the leaf's crash-consistent metadata of version nv that differ
  // from what PM holds (phase 4 needs no more: an unchanged line is durable already: every
  // earlier write of it was flushed before the flip that ended its merge, §2.3).
  void flush_meta(u64 off, int nv) {
    Leaf lf = leaf(off);
    auto& d = dirty[off];
    const std::size_t words = L.meta_p_bytes / 8;
    const auto* cur = reinterpret_cast<const u64*>(lf.meta(nv));
    for (std::size_t w = 0; w < words; w += 8) {
      std::size_t n = std::min<std::size_t>(8, words - w);
      if (d.durable.size() == words && std::memcmp(cur + w, d.durable.data() + w, n * 8) == 0)
        continue;
      pm::flush(cur + w, n * 8);
    }
    d.durable.assign(cur, cur + words);
  }

  // Writes back the cache lines holding the given slots (sorted), each line once.
  void flush_slots(Leaf lf, const std::vector<std::uint16_t>& slots) {
    const std::byte* last = nullptr;
    for (auto s : slots) {
      auto a = reinterpret_cast<std::uintptr_t>(lf.entry(s));
      const std::byte* first_line = reinterpret_cast<const std::byte*>(a & ~std::uintptr_t{63});
      const std::byte* end = lf.entry(s) + L.ebytes;
      const std::byte* from = first_line == last ? first_line + 64 : first_line;
      if (from < end) pm::flush(from, static_cast<std::size_t>(end - from));
      last = reinterpret_cast<const std::byte*>((reinterpret_cast<std::uintptr_t>(end) - 1) &
                                                ~std::uintptr_t{63});
    }
  }

  // Phase 3: leaves of version nv below CT are merged into the next leaf when it has room,
  // otherwise the two are rebuilt as two leaves of about equal occupancy (§2.3).
  void consolidate(int nv) {
    auto ct = static_cast<std::size_t>(opt.consolidate_threshold * static_cast<double>(L.cap));
    u64 prev = 0;
    u64 cur = root->head[nv];
    while (cur) {
      Leaf lf = leaf(cur);
      u64 nxt = lf.next(nv);
      std::size_t c = lf.count(nv);
      if (c >= ct) {
        prev = cur;
        cur = nxt;
        continue;
      }
      if (!nxt) {
        if (c == 0) {  // an empty last leaf: drop it, its predecessor takes the key range
          *next_word(prev, nv) = 0;
          if (prev) leaf(prev).max_key(nv) = lf.max_key(nv);
          ++consolidations;
        }
        break;
      }
      auto es = leaf_entries(cur, nv);
      if (c == 0 || c < free_slots(leaf(nxt), nv)) {
        if (c) upsert_in_place(nxt, es, 0, es.size(), nv, true);
        *next_word(prev, nv) = nxt;
        ++consolidations;
        cur = nxt;
        continue;
      }
      auto more = leaf_entries(nxt, nv);
      es.insert(es.end(), more.begin(), more.end());
      auto nl = build_leaves(es, leaf(nxt).max_key(nv), nv, std::min<std::size_t>(2, es.size()));
      if (nl.size() < 2) {  // cannot happen (nxt had no room), but never index past the end
        *next_word(prev, nv) = nl[0];
        leaf(nl[0]).next(nv) = leaf(nxt).next(nv);
        prev = nl[0];
        cur = leaf(nl[0]).next(nv);
        continue;
      }
      *next_word(prev, nv) = nl[0];
      leaf(nl[1]).next(nv) = leaf(nxt).next(nv);
      ++consolidations;
      prev = nl[1];
      cur = leaf(nl[1]).next(nv);
    }
  }

  // Phase 7: free L_old - L_cur, walking L_old backwards so a re-run after a crash finds
  // what is left (§2.3), and the leaves this merge created but did not keep; then destroy
  // pendingLeaves. Idempotent: recovery re-runs it while root->pending is set.
  void collect_garbage(int old, int cur) {
    std::unordered_set<u64> keep;
    for (u64 l = root->head[cur]; l; l = leaf(l).next(cur)) keep.insert(l);
    std::vector<u64> lold;
    for (u64 l = root->head[old]; l; l = leaf(l).next(old)) {
      u64 slot = leaf(l).owner_slot();
      if (*word(slot) != l) break;  // freed by an interrupted run: the rest is done too
      lold.push_back(l);
    }
    for (auto it = lold.rbegin(); it != lold.rend(); ++it)
      if (!keep.contains(*it)) {
        free_owned(leaf(*it).owner_slot());
        ++freed;
      }
    for (u64 slot : pending_slots()) {
      u64 l = *word(slot);
      if (l && !keep.contains(l)) {
        free_owned(slot);
        ++freed;
      }
    }
    destroy_pending();
  }

  // ---------------------------------------------------------------- recovery (Algorithm 4)
  void recover() {
    PhaseScope ph(DPTreePhase::recovery);
    load_dir();
    if (root->gv & kInMerge) {
      // Lines 2-4: reclaim the leaves the interrupted merge created.
      for (u64 slot : pending_slots()) free_owned(slot);
      destroy_pending();
      root->gv &= ~kInMerge;
      pm::CategoryScope cat(pm::Category::node);
      pm::persist(&root->gv, 8);
    } else if (root->pending) {
      collect_garbage(1 - cv(), cv());  // line 5: finish garbage collection
    }
    if (root->log_head[1 - cv()]) release_log(1 - cv());
    load_dir();
    reset_bloom();
    replay_log();  // line 6
    sweep_pages();
    rebuild_inner();
    root->restart_count += 1;  // line 7
    {
      pm::CategoryScope cat(pm::Category::node);
      pm::persist(&root->restart_count, 8);
    }
  }

  // ---------------------------------------------------------------- check
  void check(CheckReport& r) const {
    auto fail = [&](const std::string& s) { r.fail(s); };
    if (root->magic != kRootMagic) return fail("root magic is wrong");
    if (root->gv & kInMerge) fail("in_merge is set outside a merge");
    if (root->pending) fail("pendingLeaves exists outside a merge");
    const int v = cv(), nv = 1 - v;
    if (root->log_head[nv]) fail("the log of the previous version was not released");
    std::set<u64> reach{*pool.root_word()};
    std::unordered_set<u64> owned;  // blocks owned by the directory
    for (u64 b = root->dir; b; b = *word(b)) {
      if (!reach.insert(b).second) return fail("owner directory has a cycle");
      for (std::size_t i = 1; i <= kDirSlots; ++i)
        if (word(b)[i]) owned.insert(word(b)[i]);
    }
    // Leaves of version gv.
    std::size_t leaves = 0, total = 0;
    u64 prev_max = 0;
    bool first = true;
    std::vector<u64> chain;
    for (u64 l = root->head[v]; l; l = leaf(l).next(v)) {
      if (++leaves > owned.size() + 1) return fail("leaf list has a cycle");
      chain.push_back(l);
      std::string at = "leaf " + std::to_string(leaves - 1) + " (offset " + std::to_string(l) + ")";
      if (!owned.contains(l)) fail(at + " is not owned by the directory");
      if (!alloc.is_live(l)) fail(at + " is not a live block");
      reach.insert(l);
      Leaf lf = leaf(l);
      if (lf.type() != kLeafType) fail(at + " has a wrong type word");
      if (*word(lf.owner_slot()) != l) fail(at + ": its owner slot does not point to it");
      u64 mk = lf.max_key(v);
      if (!first && mk <= prev_max) fail(at + ": max keys not increasing");
      std::vector<std::pair<u64, std::size_t>> keys;
      for (std::size_t s = 0; s < L.cap; ++s) {
        for (int x = 0; x < 2; ++x)
          if (lf.state(x, s) == 3) fail(at + ": bitmap code 11 in version " + std::to_string(x));
        if (lf.state(v, s) != kOccupied) continue;
        u64 k = lf.key(s);
        keys.emplace_back(k, s);
        if (k > mk || (!first && k <= prev_max))
          fail(at + ": key " + std::to_string(k) + " outside its range");
        if (lf.value(s) & kTombstone) fail(at + ": a tombstone in the base tree");
        // The probe from the key's hash must reach it before an empty slot.
        std::size_t p = hash_key(k) % L.cap, n = 0;
        while (p != s && lf.state(v, p) != kEmpty && n < L.cap) {
          p = p + 1 == L.cap ? 0 : p + 1;
          ++n;
        }
        if (p != s) fail(at + ": key " + std::to_string(k) + " unreachable by probing");
      }
      std::sort(keys.begin(), keys.end());
      for (std::size_t i = 1; i < keys.size(); ++i)
        if (keys[i].first == keys[i - 1].first)
          fail(at + ": duplicate key " + std::to_string(keys[i].first));
      if (lf.rc(v) == root->restart_count) {
        if (lf.count(v) != keys.size())
          fail(at + ": count differs from the bitmap");
        else
          for (std::size_t i = 0; i < keys.size(); ++i) {
            if (lf.order(v)[i] != keys[i].second) {
              fail(at + ": order array wrong at " + std::to_string(i));
              break;
            }
            if (lf.fp(v)[keys[i].second] !=
                static_cast<std::uint8_t>(hash_key(keys[i].first) >> 56))
              fail(at + ": fingerprint wrong");
          }
      } else if (lf.rc(v) > root->restart_count) {
        fail(at + ": restart counter ahead of the global one");
      }
      total += keys.size();
      prev_max = mk;
      first = false;
    }
    if (!chain.empty() && leaf(chain.back()).max_key(v) != ~u64{0})
      fail("the last leaf's max key is not the largest key");
    if (total != root->base_count[v])
      fail("base_count " + std::to_string(root->base_count[v]) + " != " + std::to_string(total) +
           " keys in the leaves");
    if (chain != inner_leaf) fail("inner index does not match the leaf list");
    for (std::size_t i = 0; i < chain.size() && i < inner_max.size(); ++i)
      if (inner_max[i] != leaf(chain[i]).max_key(v)) fail("inner index max key differs");
    // The log: pages of version v, replaying to exactly the buffer tree.
    std::size_t pages = 0;
    std::map<u64, u64> replay;
    bool ended = false;
    std::size_t records = 0;
    for (u64 pg = root->log_head[v]; pg; pg = word(pg)[2]) {
      if (++pages > owned.size() + 1) return fail("log page list has a cycle");
      reach.insert(pg);
      if (!owned.contains(pg)) fail("log page not owned by the directory");
      if (word(pg)[1] != kPageType) fail("log page has a wrong type word");
      if (word(pg)[3] != static_cast<u64>(v)) fail("log page of the wrong flavor in the log");
      for (std::size_t rr = 0; rr < G.per_page && !ended; ++rr) {
        u64 k, val;
        if (!decode(pool.at<u64>(pg + G.offset(rr)), valid_bit(), k, val)) {
          ended = true;
          break;
        }
        replay[k] = val;
        ++records;
      }
    }
    if (pages != log_pages.size()) fail("log page count differs from the volatile PLog state");
    std::map<u64, u64> buf;
    for (auto it = buffer.begin(); it.valid(); it.next()) {
      buf[it.key()] = it.value();
      if (!bloom.may_contain(it.key()))
        fail("bloom filter misses buffer key " + std::to_string(it.key()));
    }
    if (replay != buf) fail("replaying the log does not give the buffer tree");
    for (int fl = 0; fl < 2; ++fl)
      for (u64 pg : freelist[fl]) {
        if (!reach.insert(pg).second) fail("free log page also in use");
        if (word(pg)[3] != static_cast<u64>(fl)) fail("free log page in the wrong freelist");
        if (!owned.contains(pg)) fail("free log page not owned");
      }
    std::unordered_set<u64> other;
    std::size_t steps = 0;
    for (u64 l = root->head[nv]; l && owned.contains(l) && ++steps <= owned.size();
         l = leaf(l).next(nv))
      other.insert(l);
    for (u64 o : owned)
      if (!reach.contains(o))
        fail("directory owns unreachable " +
             std::string(word(o)[1] == kPageType   ? "log page"
                         : word(o)[1] == kLeafType ? "leaf"
                                                   : "block") +
             " at " + std::to_string(o) +
             (other.contains(o) ? " (in the other version's list)" : "") + " rc " +
             std::to_string(word(o)[1] == kLeafType ? leaf(o).rc(nv) : 0) + "/" +
             std::to_string(word(o)[1] == kLeafType ? leaf(o).rc(v) : 0) + " restart " +
             std::to_string(root->restart_count));
    std::size_t live = 0;
    alloc.for_each_live_block([&](u64 off, std::size_t) {
      ++live;
      if (!reach.contains(off)) fail("leaked PM block at offset " + std::to_string(off));
    });
    for (u64 b : reach)
      if (!alloc.is_live(b)) fail("reachable block " + std::to_string(b) + " is not live");
    r.facts.emplace_back("leaves", static_cast<double>(leaves));
    r.facts.emplace_back("base_records", static_cast<double>(total));
    r.facts.emplace_back("buffer_entries", static_cast<double>(buffer.size()));
    r.facts.emplace_back("log_records", static_cast<double>(records));
    r.facts.emplace_back("log_pages", static_cast<double>(pages));
    r.facts.emplace_back("live_blocks", static_cast<double>(live));
    r.facts.emplace_back("restart_count", static_cast<double>(root->restart_count));
  }

  std::size_t pm_bytes() const {
    std::size_t n = alloc.block_size(*pool.root_word());
    for (u64 b = root->dir; b; b = *word(b)) {
      n += alloc.block_size(b);
      for (std::size_t i = 1; i <= kDirSlots; ++i)
        if (word(b)[i]) n += alloc.block_size(word(b)[i]);
    }
    return n;
  }
};

DPTreeCore::DPTreeCore(pm::Pool& pool, const DPTreeOptions& opt, std::size_t kb, std::size_t vb,
                       bool create)
    : impl_(std::make_unique<Impl>(pool, opt)) {
  if (create)
    impl_->create(kb, vb);
  else
    impl_->open(kb, vb);
}
DPTreeCore::~DPTreeCore() = default;

void DPTreeCore::upsert(Key k, Value v) {
  Impl::check_value(v);
  impl_->upsert_raw(k, v);
}
bool DPTreeCore::insert(Key k, Value v) {
  Impl::check_value(v);
  if (impl_->lookup(k)) return false;
  impl_->upsert_raw(k, v);
  return true;
}
bool DPTreeCore::update(Key k, Value v) {
  Impl::check_value(v);
  if (!impl_->lookup(k)) return false;
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

DPTreeStats DPTreeCore::stats() const {
  const Impl& m = *impl_;
  DPTreeStats s;
  s.records = m.size();
  s.buffer_entries = m.buffer.size();
  s.base_records = m.base_count();
  s.leaves = m.inner_leaf.size();
  s.merges = m.merges;
  s.splits = m.splits;
  s.consolidations = m.consolidations;
  s.leaves_created = m.created;
  s.leaves_freed = m.freed;
  s.lazy_rebuilds = m.lazy_rebuilds;
  s.log_pages = m.log_pages.size();
  s.free_log_pages = m.freelist[0].size() + m.freelist[1].size();
  s.restart_count = m.root->restart_count;
  s.pm_bytes = m.pm_bytes();
  s.dram_bytes = sizeof(Impl) + m.buffer.dram_bytes() + m.bloom.dram_bytes() +
                 16 * m.inner_leaf.capacity() +
                 8 * (m.dir_free.capacity() + m.dir_blocks.capacity() + m.log_pages.capacity() +
                      m.freelist[0].capacity() + m.freelist[1].capacity());
  return s;
}

CheckReport DPTreeCore::check() const {
  CheckReport r;
  impl_->check(r);
  return r;
}

}  // namespace dptree
