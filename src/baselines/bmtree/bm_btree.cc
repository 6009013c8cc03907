// 2-Tier-BM, the DPTree paper's buffer-manager peer (§4.3): a B+-tree whose pages live in PM
// and are cached in DRAM by a buffer manager with cache-line-grained pages (buffer_manager.h),
// made crash-consistent by physiological redo/undo logging on PM (redo_undo_log.h). Design,
// options and the crash protocol: docs/bm-btree.md. Single-threaded.
//
// An operation that writes: (1) makes room first (a checkpoint when the log cannot take its
// worst case, spare pages for a split cascade), so nothing fails once it has changed a frame;
// (2) changes frames only through BufferManager::write / rewrite / format, each change logged
// before it is made; (3) commits: a commit record, forced (two fences). It is acknowledged when
// the commit is durable. Leaves never merge: a remove leaves its leaf in place, even empty.
#include "baselines/bmtree/bm_btree.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "baselines/bmtree/buffer_manager.h"
#include "baselines/bmtree/page_layout.h"
#include "baselines/bmtree/redo_undo_log.h"
#include "baselines/common.h"
#include "baselines/slab/slab_arena.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "registry/index_table.h"
#include "registry/option_table.h"

namespace dptree::baselines::bmtree {
namespace {

constexpr std::uint64_t kMagic = 0x31454552'54424d42ull;  // "BMBTREE1"
constexpr std::uint32_t kMinPage = 256, kMaxPage = 64 * 1024, kDefaultPage = 16 * 1024;
constexpr std::size_t kEntryBytes = 16;  // what log_pct is a percentage of, per record

struct alignas(64) Root {
  std::uint64_t magic;       // ArenaRootHeader
  std::uint64_t slab_size;   // ArenaRootHeader (the pages use page_slab)
  std::uint64_t page_bytes;  // 0 until the root is formatted
  std::uint64_t leaf_kind;
  std::uint64_t page_slab;
  std::uint64_t pages_dir;  // SlabArena directory of the pages
  std::uint64_t log;        // the log block (its owner word)
  std::uint64_t root_page;  // set once: a root split rewrites the root page in place
};
static_assert(sizeof(Root) == 64);

struct Options {
  std::uint32_t dram_pct = 100, log_pct = 30;
  std::uint32_t page_bytes = kDefaultPage;  // a new pool's; an open pool keeps its own
  Kind leaf = kHashLeaf;
  bool mini_pages = true;
  bool page_given = false, leaf_given = false;  // given: must match what the pool holds
};

const option_values::OptionTable<Options>& option_table() {
  static const auto built = [] {
    option_values::OptionTable<Options> t("bm-btree");
    t.whole_in("dram_pct", &Options::dram_pct, {1, 100},
               "the share of leaves whose pages fit in DRAM (Figure 11's x-axis)")
        .whole_in("log_pct", &Options::log_pct, {1, 1000},
                  "log capacity, % of the key-value set (16 bytes a record)")
        .whole_in("page_bytes", &Options::page_bytes, {kMinPage, kMaxPage, true},
                  "bytes per page; stored in the pool, which keeps its own")
        .choice("leaf", &Options::leaf, {{"hash", kHashLeaf}, {"sorted", kSortedLeaf}},
                "leaf layout; stored in the pool, which keeps its own")
        .boolean("mini_pages", &Options::mini_pages,
                 "cache a leaf first as a 16-line mini page (pages of 2 KiB or more)");
    return t;
  }();
  return built;
}

Options parse_options(const std::map<std::string, std::string>& opts) {
  Options o = option_table().parse(opts);
  o.page_given = opts.contains("page_bytes");
  o.leaf_given = opts.contains("leaf");
  return o;
}

class BMBTree final : public Index {
 public:
  BMBTree(pm::Pool& pool, const Options& opt, std::size_t expected_records)
      : claim_(pool, "bm-btree"),
        pool_(pool),
        opt_(opt),
        root_(open_root(pool, opt)),
        L_(static_cast<std::uint32_t>(root_->page_bytes)),
        kind_(static_cast<Kind>(root_->leaf_kind)),
        bm_(pool, root_->page_bytes, opt.mini_pages),
        img_(root_->page_bytes) {
    recover(expected_records);
  }

  ~BMBTree() override {
    try {
      checkpoint();  // a clean close: PM holds every page, the log is empty
    } catch (...) {  // NOLINT(bugprone-empty-catch): recovery redoes from the log instead
    }
  }

  std::string name() const override { return "bm-btree"; }

  void upsert(Key k, Value v) override { put(k, v, true, true); }
  bool insert(Key k, Value v) override { return put(k, v, true, false); }
  bool update(Key k, Value v) override { return put(k, v, false, true); }

  bool remove(Key k) override {
    prepare_write();
    Frame& f = descend(k, nullptr);
    const std::int64_t s = find(f, k);
    if (s >= 0) leaf_remove(f, static_cast<std::uint32_t>(s));
    bm_.unfix(f);
    if (s < 0) return false;
    --records_;
    log_->commit();
    return true;
  }

  std::optional<Value> lookup(Key k) const override {
    Frame& f = descend(k, nullptr);
    const std::int64_t s = find(f, k);
    std::optional<Value> r;
    if (s >= 0) r = rd<Value>(f, L_.slot_off(kind_, static_cast<std::uint32_t>(s)) + 8);
    bm_.unfix(f);
    return r;
  }

  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    std::size_t got = 0;
    for (Frame* f = &descend(start, nullptr);;) {
      auto kv = entries(*f);
      const auto next = rd<std::uint64_t>(*f, kNextOff);
      bm_.unfix(*f);
      for (auto it = std::lower_bound(kv.begin(), kv.end(), KV{start, 0});
           it != kv.end() && got < count; ++it, ++got)
        out.push_back(*it);
      if (!next || got >= count) break;
      f = &bm_.fix(next, true);
    }
    return got;
  }

  IndexStats stats() const override {
    IndexStats s;
    s.records = records_;
    s.dram_bytes = bm_.frames() * (L_.page + 2 * sizeof(Frame));
    s.pm_bytes = pool_.allocator().block_size(*pool_.root_word()) +
                 pool_.allocator().block_size(log_->block()) + arena_->pm_bytes();
    const auto& b = bm_.stats();
    s.extra = {{"leaves", double(leaves_)},
               {"inner_pages", double(inner_pages_)},
               {"height", double(root_level_ + 1)},
               {"leaf_frames", double(bm_.leaf_frames())},
               {"leaf_budget", double(bm_.leaf_budget())},
               {"splits", double(splits_)},
               {"evictions", double(b.evictions)},
               {"lines_loaded", double(b.lines_loaded)},
               {"lines_written_back", double(b.lines_written)},
               {"steals", double(b.steals)},
               {"swizzle_hits", double(b.swizzle_hits)},
               {"mini_frames", double(bm_.mini_frames())},
               {"promotions", double(b.promotions)},
               {"op_stolen", b.steals > steals_before_op_ ? 1.0 : 0.0},
               {"checkpoints", double(b.checkpoints)},
               {"log_bytes", double(log_->capacity())},
               {"redone", double(redone_)},
               {"undone", double(undone_)}};
    return s;
  }

  CheckReport check() const override;

 private:
  struct Walk;  // check()'s state
  void check_page(Walk& w, std::uint64_t page, std::uint32_t level, Key lo, bool has_lo, Key hi,
                  bool has_hi) const;

  // ---- reading and writing pages through the buffer manager --------------------------------
  template <class T>
  T rd(Frame& f, std::uint32_t off) const {
    return get_at<T>(bm_.read(f, off, sizeof(T)), 0);
  }
  template <class T>
  void wr(Frame& f, std::uint32_t off, T v) {
    bm_.write(f, off, &v, sizeof v);
  }
  bool occupied(Frame& f, std::uint32_t s) const {
    return (rd<std::uint64_t>(f, kHeader + s / 64 * 8) >> (s % 64)) & 1;
  }
  Key key_at(Frame& f, std::uint32_t s) const { return rd<Key>(f, L_.slot_off(kind_, s)); }
  std::uint32_t next_slot(std::uint32_t s) const { return s + 1 == L_.hash_cap ? 0 : s + 1; }

  // Pins and returns the leaf that covers k, following swizzled child pointers where it can;
  // `path` (optional) receives the inner pages passed, root first.
  Frame& descend(Key k, std::vector<std::uint64_t>* path) const {
    Frame* f = &bm_.fix(root_->root_page, root_level_ == 0);
    for (std::uint32_t level = root_level_; level > 0; --level) {
      if (path) path->push_back(f->page);
      std::uint32_t lo = 0, hi = rd<std::uint32_t>(*f, kCountOff);
      while (lo < hi) {
        const std::uint32_t mid = (lo + hi) / 2;
        if (rd<Key>(*f, kHeader + mid * 8) <= k)
          lo = mid + 1;
        else
          hi = mid;
      }
      const auto child = rd<std::uint64_t>(*f, L_.inner_children + lo * 8);
      Frame& c = bm_.fix_child(*f, lo, child, level == 1);
      bm_.unfix(*f);
      f = &c;
    }
    return *f;
  }

  // First slot of a sorted leaf with key >= k.
  std::uint32_t lower(Frame& f, Key k) const {
    std::uint32_t lo = 0, hi = rd<std::uint32_t>(f, kCountOff);
    while (lo < hi) {
      const std::uint32_t mid = (lo + hi) / 2;
      if (key_at(f, mid) < k)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }

  // k's slot in leaf f, or -1.
  std::int64_t find(Frame& f, Key k) const {
    if (kind_ == kSortedLeaf) {
      const std::uint32_t pos = lower(f, k);
      if (pos < rd<std::uint32_t>(f, kCountOff) && key_at(f, pos) == k) return pos;
      return -1;
    }
    for (std::uint32_t s = L_.home(k), i = 0; i < L_.hash_cap; ++i, s = next_slot(s)) {
      if (!occupied(f, s)) return -1;
      if (key_at(f, s) == k) return s;
    }
    return -1;
  }

  // Every entry of leaf f, in key order.
  std::vector<KV> entries(Frame& f) const {
    const std::byte* p = bm_.read(f, 0, L_.page);
    const auto n = get_at<std::uint32_t>(p, kCountOff);
    std::vector<KV> kv;
    kv.reserve(n);
    for (std::uint32_t s = 0; s < L_.cap(kind_); ++s) {
      if (kind_ == kSortedLeaf
              ? s >= n
              : !((get_at<std::uint64_t>(p, kHeader + s / 64 * 8) >> (s % 64)) & 1))
        continue;
      kv.emplace_back(get_at<Key>(p, L_.slot_off(kind_, s)),
                      get_at<Value>(p, L_.slot_off(kind_, s) + 8));
    }
    if (kind_ == kHashLeaf) std::sort(kv.begin(), kv.end());
    return kv;
  }

  void leaf_insert(Frame& f, Key k, Value v) {
    const auto n = rd<std::uint32_t>(f, kCountOff);
    if (kind_ == kHashLeaf) {
      std::uint32_t s = L_.home(k);
      while (occupied(f, s)) s = next_slot(s);
      const Slot kv{k, v};
      bm_.write(f, L_.slot_off(kind_, s), &kv, kSlot);
      const std::uint32_t w = kHeader + s / 64 * 8;
      wr<std::uint64_t>(f, w, rd<std::uint64_t>(f, w) | std::uint64_t{1} << (s % 64));
    } else {  // shift the slots from pos one to the right: one record for all of them
      const std::uint32_t pos = lower(f, k);
      std::vector<Slot> moved(n - pos + 1);
      moved[0] = {k, v};
      std::memcpy(moved.data() + 1, bm_.read(f, L_.slot_off(kind_, pos), (n - pos) * kSlot),
                  (n - pos) * kSlot);
      bm_.write(f, L_.slot_off(kind_, pos), moved.data(), (n - pos + 1) * kSlot);
    }
    wr<std::uint32_t>(f, kCountOff, n + 1);
  }

  void leaf_remove(Frame& f, std::uint32_t s) {
    const auto n = rd<std::uint32_t>(f, kCountOff);
    if (kind_ == kHashLeaf) {  // backward shift: no tombstones, probes stay short
      std::uint32_t hole = s;
      for (std::uint32_t j = next_slot(s); occupied(f, j); j = next_slot(j)) {
        const std::uint32_t h = L_.home(key_at(f, j));
        const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
        if (stays) continue;
        Slot kv;
        std::memcpy(&kv, bm_.read(f, L_.slot_off(kind_, j), kSlot), kSlot);
        bm_.write(f, L_.slot_off(kind_, hole), &kv, kSlot);
        hole = j;
      }
      const std::uint32_t w = kHeader + hole / 64 * 8;
      wr<std::uint64_t>(f, w, rd<std::uint64_t>(f, w) & ~(std::uint64_t{1} << (hole % 64)));
    } else if (s + 1 < n) {
      std::vector<std::byte> moved(std::size_t{n - s - 1} * kSlot);
      std::memcpy(moved.data(), bm_.read(f, L_.slot_off(kind_, s + 1), (n - s - 1) * kSlot),
                  moved.size());
      bm_.write(f, L_.slot_off(kind_, s), moved.data(), static_cast<std::uint32_t>(moved.size()));
    }
    wr<std::uint32_t>(f, kCountOff, n - 1);
  }

  bool put(Key k, Value v, bool may_insert, bool may_update) {
    prepare_write();
    for (;;) {
      std::vector<std::uint64_t> path;
      Frame& f = descend(k, &path);
      const std::int64_t s = find(f, k);
      if (s >= 0 ? !may_update : !may_insert) {
        bm_.unfix(f);
        return false;
      }
      if (s >= 0) {
        wr<Value>(f, L_.slot_off(kind_, static_cast<std::uint32_t>(s)) + 8, v);
      } else if (rd<std::uint32_t>(f, kCountOff) >= L_.split_at(kind_)) {
        split_leaf(f, path);  // unpins f; then descend again: k's leaf has room now
        continue;
      } else {
        leaf_insert(f, k, v);
        ++records_;
      }
      bm_.unfix(f);
      log_->commit();
      return true;
    }
  }

  // ---- splits ------------------------------------------------------------------------------
  // Which lines of a fresh page's image its format reads (the rest is never read).
  std::vector<bool> used_lines(const std::byte* img) const {
    std::vector<bool> lines(L_.page / kLineBytes, false);
    auto mark = [&](std::size_t from, std::size_t to) {
      for (std::size_t l = from / kLineBytes; l * kLineBytes < to; ++l) lines[l] = true;
    };
    const auto n = get_at<std::uint32_t>(img, kCountOff);
    const auto kind = get_at<std::uint32_t>(img, kKindOff);
    if (kind == kInner) {
      mark(0, kHeader + n * 8);
      mark(L_.inner_children, L_.inner_children + (n + 1) * 8);
    } else if (kind == kSortedLeaf) {
      mark(0, L_.slot_off(kSortedLeaf, n));
    } else {
      mark(0, L_.hash_slots);
      for (std::uint32_t s = 0; s < L_.hash_cap; ++s)
        if ((get_at<std::uint64_t>(img, kHeader + s / 64 * 8) >> (s % 64)) & 1)
          mark(L_.slot_off(kHashLeaf, s), L_.slot_off(kHashLeaf, s) + kSlot);
    }
    return lines;
  }

  std::uint64_t take_page() {
    const std::uint64_t p = spare_pages_.back();
    spare_pages_.pop_back();
    return p;
  }

  // Writes img_ to `page`, a page not in use, as its first content.
  void new_page(std::uint64_t page, bool leaf) {
    Frame& g = bm_.fix_new(page, leaf);
    bm_.format(g, img_.data(), used_lines(img_.data()));
    bm_.unfix(g);
  }

  // The root page (f) splits into two new pages below it and becomes an inner page over them.
  void split_root(Frame& f, bool leaf, std::uint32_t level, const std::function<void()>& left,
                  const std::function<void()>& right, Key up) {
    const std::uint64_t a = take_page(), b = take_page();
    bm_.set_leaf(f, false);  // before its children take frames
    left();
    if (leaf) put_at<std::uint64_t>(img_.data(), kNextOff, b);
    new_page(a, leaf);
    right();
    new_page(b, leaf);
    build_inner(img_.data(), L_, level + 1, {up}, {a, b});
    bm_.rewrite(f, img_.data());
    ++root_level_;
    ++inner_pages_;
  }

  // Splits the full leaf f (pinned; split_leaf unpins it). A split holds one leaf at a time:
  // the old leaf is rewritten and unpinned before the new one takes a frame, so with a budget
  // of one leaf frame the old leaf can reach PM (stolen) before the new leaf and the parent
  // say where its upper half went; recovery then undoes the rewrite.
  void split_leaf(Frame& f, const std::vector<std::uint64_t>& path) {
    ++splits_;
    const auto kv = entries(f);
    const std::size_t mid = kv.size() / 2;
    const std::vector<KV> lo(kv.begin(), kv.begin() + static_cast<std::ptrdiff_t>(mid)),
        hi(kv.begin() + static_cast<std::ptrdiff_t>(mid), kv.end());
    const Key up = kv[mid].first;
    const auto next = rd<std::uint64_t>(f, kNextOff);
    ++leaves_;
    bm_.set_leaf_budget(leaf_budget());  // before the new leaf takes a frame
    if (path.empty()) {
      split_root(
          f, true, 0, [&] { build_leaf(img_.data(), L_, kind_, lo, 0); },
          [&] { build_leaf(img_.data(), L_, kind_, hi, next); }, up);
      bm_.unfix(f);
      return;
    }
    const std::uint64_t b = take_page();
    if (kind_ == kSortedLeaf) {  // the lower half stays where it is: only the header changes
      std::memcpy(img_.data(), bm_.read(f, 0, L_.page), L_.page);
      put_at<std::uint32_t>(img_.data(), kCountOff, static_cast<std::uint32_t>(mid));
      put_at<std::uint64_t>(img_.data(), kNextOff, b);
    } else {
      build_leaf(img_.data(), L_, kind_, lo, b);
    }
    bm_.rewrite(f, img_.data());
    bm_.unfix(f);
    build_leaf(img_.data(), L_, kind_, hi, next);
    new_page(b, true);
    insert_inner(path, path.size() - 1, up, b);
  }

  // Adds separator `sep` with `child` to its right into the inner page path[depth].
  void insert_inner(const std::vector<std::uint64_t>& path, std::size_t depth, Key sep,
                    std::uint64_t child) {
    Frame& f = bm_.fix(path[depth], false);
    const auto n = rd<std::uint32_t>(f, kCountOff);
    const auto level = rd<std::uint32_t>(f, kLevelOff);
    std::vector<Key> keys(n);
    std::vector<std::uint64_t> kids(n + 1);
    std::memcpy(keys.data(), bm_.read(f, kHeader, n * 8), n * 8);
    std::memcpy(kids.data(), bm_.read(f, L_.inner_children, (n + 1) * 8), (n + 1) * 8);
    const auto pos =
        static_cast<std::uint32_t>(std::upper_bound(keys.begin(), keys.end(), sep) - keys.begin());
    keys.insert(keys.begin() + pos, sep);
    kids.insert(kids.begin() + pos + 1, child);
    if (n < L_.inner_cap) {
      bm_.write(f, kHeader + pos * 8, keys.data() + pos, (n + 1 - pos) * 8);
      bm_.write(f, L_.inner_children + (pos + 1) * 8, kids.data() + pos + 1, (n + 1 - pos) * 8);
      wr<std::uint32_t>(f, kCountOff, n + 1);
      bm_.unfix(f);
      return;
    }
    const std::size_t m = keys.size() / 2;
    const Key up = keys[m];
    auto half = [&](bool right) {
      const auto k0 = keys.begin() + static_cast<std::ptrdiff_t>(right ? m + 1 : 0);
      const auto k1 = right ? keys.end() : keys.begin() + static_cast<std::ptrdiff_t>(m);
      const auto c0 = kids.begin() + static_cast<std::ptrdiff_t>(right ? m + 1 : 0);
      const auto c1 = right ? kids.end() : kids.begin() + static_cast<std::ptrdiff_t>(m + 1);
      build_inner(img_.data(), L_, level, {k0, k1}, {c0, c1});
    };
    ++inner_pages_;
    if (depth == 0) {
      split_root(
          f, false, level, [&] { half(false); }, [&] { half(true); }, up);
      bm_.unfix(f);
      return;
    }
    const std::uint64_t b = take_page();
    half(true);
    new_page(b, false);
    half(false);
    bm_.rewrite(f, img_.data());
    bm_.unfix(f);
    insert_inner(path, depth - 1, up, b);
  }

  // ---- room, checkpoints, the log ----------------------------------------------------------
  // The most log bytes one operation can append: a split on every level and of the root
  // (a page rewrite logs at most two images of the page and a header per line; a format one),
  // plus the leaf change itself (a sorted leaf's shift, a hash leaf's backward shift).
  std::size_t op_reserve(std::uint32_t root_level) const {
    const std::size_t page = L_.page + L_.page / kLineBytes * RedoUndoLog::kRecordHeader;
    return (4 * (root_level + 1) + 10) * page + 4096;
  }
  std::size_t wanted_log_bytes(std::size_t records) const {
    const double share = double(records) * kEntryBytes * opt_.log_pct / 100.0;
    return std::max<std::size_t>(2 * op_reserve(root_level_ + 1), static_cast<std::size_t>(share)) +
           RedoUndoLog::kHeaderBytes;
  }
  std::size_t leaf_budget() const {
    return static_cast<std::size_t>(std::ceil(double(leaves_) * opt_.dram_pct / 100.0));
  }

  void prepare_write() {
    steals_before_op_ = bm_.stats().steals;
    if (log_->room() < op_reserve(root_level_)) checkpoint();
    if (log_->room() < op_reserve(root_level_))
      throw Error(Errc::pool_full, "bm-btree in " + pool_.name() +
                                       ": the log cannot grow to take one more operation: "
                                       "use a larger pool");
    while (spare_pages_.size() < root_level_ + 3) spare_pages_.push_back(arena_->alloc());
  }

  // Every dirty line to PM, then an empty log; the log grows here (it is empty) when log_pct
  // of the records no longer fits it.
  void checkpoint() {
    bm_.write_back_all();
    log_->truncate();
    const std::size_t want = wanted_log_bytes(records_);
    if (want <= log_->capacity() + RedoUndoLog::kHeaderBytes) return;
    auto& a = pool_.allocator();
    std::uint64_t nb = 0;
    try {
      nb = a.reserve(std::max(want, 2 * log_->capacity()));
    } catch (const Error& e) {
      if (e.code() != Errc::pool_full) throw;
      return;  // prepare_write reports it if even one operation no longer fits
    }
    RedoUndoLog::format(pool_, nb);
    a.free(&root_->log);  // a crash here leaves no log: open makes an empty one
    a.activate(&root_->log, nb);
    log_ = std::make_unique<RedoUndoLog>(pool_, nb);
    bm_.set_log(log_.get());
  }

  // ---- open and recovery ---------------------------------------------------------------------
  static Root* open_root(pm::Pool& pool, const Options& opt) {
    auto* r = static_cast<Root*>(open_arena_root(pool, sizeof(Root), kMagic, "bm-btree"));
    if (r->page_bytes == 0) {  // new (or a crash before this was persisted)
      const std::uint32_t page = opt.page_bytes;
      pm::store(&r->page_bytes, page);
      pm::store(&r->leaf_kind, opt.leaf);
      pm::store(&r->page_slab, std::max<std::uint64_t>(r->slab_size, 4 * page));
      pm::persist(r, sizeof(Root));
    }
    const std::string where = "bm-btree in " + pool.name();
    if (r->page_bytes < kMinPage || r->page_bytes > kMaxPage ||
        !std::has_single_bit(r->page_bytes) ||
        (r->leaf_kind != kHashLeaf && r->leaf_kind != kSortedLeaf) ||
        !std::has_single_bit(r->page_slab) || r->page_slab < r->page_bytes ||
        r->page_slab > (std::uint64_t{1} << 30))
      throw Error(Errc::corrupt,
                  where +
                      ": its root holds impossible settings: the pool is damaged; restore it "
                      "from a copy");
    if (opt.page_given && opt.page_bytes != r->page_bytes)
      throw Error(Errc::invalid_argument, where +
                                              " has page_bytes=" + std::to_string(r->page_bytes) +
                                              ", not " + std::to_string(opt.page_bytes) +
                                              ": pass that value (or none) or use a new pool");
    if (opt.leaf_given && opt.leaf != r->leaf_kind)
      throw Error(Errc::invalid_argument,
                  where + " has " + (r->leaf_kind == kHashLeaf ? "hash" : "sorted") +
                      " leaves: pass that leaf= (or none) or use a new pool");
    return r;
  }

  void make_log(std::size_t bytes) {
    auto& a = pool_.allocator();
    const std::uint64_t b = a.reserve(bytes);
    RedoUndoLog::format(pool_, b);
    a.activate(&root_->log, b);
  }

  [[noreturn]] void damaged(const std::string& what) const {
    throw Error(Errc::corrupt, "bm-btree in " + pool_.name() + ": " + what +
                                   ": the pool is damaged; restore it from a copy");
  }

  // Redo and undo from the log, an empty log, then the volatile state from the pages: which
  // pages are used (the rest, pages of an interrupted split, go back to the arena), leaves,
  // records. The frames start empty.
  void recover(std::size_t expected_records) {
    arena_ = std::make_unique<SlabArena>(pool_, &root_->pages_dir, L_.page, root_->page_slab);
    arena_->open();
    if (!root_->log) make_log(wanted_log_bytes(expected_records));
    if (pool_.allocator().owner_of(root_->log) != pool_.offset_of(&root_->log))
      damaged("its log is not a live block it owns");
    log_ = std::make_unique<RedoUndoLog>(pool_, root_->log);
    bm_.set_log(log_.get());
    const auto replayed =
        log_->replay([&](std::uint64_t page, std::uint32_t off, std::uint32_t len) {
          return arena_->is_slot(page) && std::size_t{off} + len <= L_.page;
        });
    redone_ = replayed.redone;
    undone_ = replayed.undone;
    log_->truncate();
    if (root_->root_page) {
      if (!arena_->is_slot(root_->root_page)) damaged("its root page is not a page");
      const auto level = get_at<std::uint32_t>(pool_.at(root_->root_page), kLevelOff);
      root_level_ =
          get_at<std::uint32_t>(pool_.at(root_->root_page), kKindOff) == kInner ? level : 0;
      if (root_level_ > 64) damaged("its root page claims an impossible height");
      std::vector<std::uint64_t> leaves;
      mark(root_->root_page, root_level_, leaves);
      // Scans follow the leaf chain: it must be the tree's leaves in key order.
      for (std::size_t i = 0; i < leaves.size(); ++i)
        if (get_at<std::uint64_t>(pool_.at(leaves[i]), kNextOff) !=
            (i + 1 < leaves.size() ? leaves[i + 1] : 0))
          damaged("leaf " + std::to_string(leaves[i]) + " does not link to the next leaf");
    }
    arena_->finish();
    if (!root_->root_page) {  // a new tree: an empty leaf, durable before the root names it
      const std::uint64_t p = arena_->alloc();
      build_leaf(img_.data(), L_, kind_, {}, 0);
      pm::store_bytes(pool_.at(p), img_.data(), kHeader);
      if (kind_ == kHashLeaf)
        pm::store_bytes(pool_.at(p) + kHeader, img_.data() + kHeader, L_.hash_slots - kHeader);
      pm::persist(pool_.at(p), L_.meta(kind_));
      pm::store(&root_->root_page, p);
      pm::persist(&root_->root_page, 8);
      leaves_ = 1;
    }
    bm_.set_leaf_budget(leaf_budget());
  }

  // Bits set in a hash leaf's bitmap, counting any past the last slot twice (so they show).
  std::uint32_t bitmap_count(const std::byte* p) const {
    std::uint32_t bits = 0;
    for (std::uint32_t w = 0; w < (L_.hash_cap + 63) / 64; ++w) {
      const auto word = get_at<std::uint64_t>(p, kHeader + w * 8);
      const std::uint32_t valid = std::min<std::uint32_t>(64, L_.hash_cap - w * 64);
      const std::uint64_t mask = valid == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << valid) - 1;
      bits +=
          static_cast<std::uint32_t>(std::popcount(word & mask) + 2 * std::popcount(word & ~mask));
    }
    return bits;
  }

  // Marks `page` (at `level`) and its subtree used; counts pages and records; appends its
  // leaves to `leaves` in key order.
  void mark(std::uint64_t page, std::uint32_t level, std::vector<std::uint64_t>& leaves) {
    if (!arena_->is_slot(page) || !arena_->mark_used(page))
      damaged("page " + std::to_string(page) + " is not a page or is reached twice");
    const std::byte* p = pool_.at(page);
    const auto kind = get_at<std::uint32_t>(p, kKindOff);
    const auto n = get_at<std::uint32_t>(p, kCountOff);
    if (level == 0) {
      // A hash leaf never holds more than its split size, and its bitmap agrees with its
      // count: a probe or a backward shift always meets an empty slot.
      if (kind != kind_ || n > L_.split_at(kind_) || (kind_ == kHashLeaf && bitmap_count(p) != n))
        damaged("leaf " + std::to_string(page) + " has a wrong kind, count or bitmap");
      ++leaves_;
      records_ += n;
      leaves.push_back(page);
      return;
    }
    if (kind != kInner || n > L_.inner_cap || get_at<std::uint32_t>(p, kLevelOff) != level)
      damaged("inner page " + std::to_string(page) + " has a wrong kind, count or level");
    ++inner_pages_;
    for (std::uint32_t i = 0; i <= n; ++i)
      mark(get_at<std::uint64_t>(p, L_.inner_children + i * 8), level - 1, leaves);
  }

  static constexpr std::size_t kLineBytes = pm::kCacheLine;

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  Options opt_;
  Root* root_;
  Layout L_;
  Kind kind_;
  mutable BufferManager bm_;
  std::vector<std::byte> img_;  // a page image being built (splits)
  std::unique_ptr<SlabArena> arena_;
  std::unique_ptr<RedoUndoLog> log_;
  std::vector<std::uint64_t> spare_pages_;  // taken from the arena, not yet in the tree
  std::uint32_t root_level_ = 0;
  std::size_t records_ = 0, leaves_ = 0, inner_pages_ = 0, splits_ = 0;
  std::size_t redone_ = 0, undone_ = 0;
  std::uint64_t steals_before_op_ = 0;  // op_stolen: the operation in flight forced the log
};

struct BMBTree::Walk {
  CheckReport& r;
  std::set<std::uint64_t> seen;
  std::vector<std::uint64_t> leaves, nexts;  // in key order
  std::size_t records = 0, inner = 0;
};

// Checks the subtree of `page` at `level`, whose keys must lie in [lo, hi) (unbounded where
// has_lo / has_hi is false), as the index sees it (frames over PM).
void BMBTree::check_page(Walk& w, std::uint64_t page, std::uint32_t level, Key lo, bool has_lo,
                         Key hi, bool has_hi) const {
  if (w.r.problems.size() > 20) return;
  const std::string at = "page " + std::to_string(page);
  if (!arena_->is_slot(page) || !arena_->is_used(page) || !w.seen.insert(page).second)
    return w.r.fail(at + " is not a used page or is reached twice");
  std::vector<std::byte> buf(L_.page);
  bm_.peek(page, buf.data());
  const std::byte* p = buf.data();
  const auto kind = get_at<std::uint32_t>(p, kKindOff);
  const auto n = get_at<std::uint32_t>(p, kCountOff);
  auto in_range = [&](Key k) { return (!has_lo || k >= lo) && (!has_hi || k < hi); };
  if (level > 0) {
    if (kind != kInner || n == 0 || n > L_.inner_cap ||
        get_at<std::uint32_t>(p, kLevelOff) != level)
      return w.r.fail(at + ": wrong kind, count or level for an inner page at level " +
                      std::to_string(level));
    ++w.inner;
    for (std::uint32_t i = 0; i < n; ++i) {
      const Key k = get_at<Key>(p, kHeader + i * 8);
      if (!in_range(k) || (i && k <= get_at<Key>(p, kHeader + (i - 1) * 8)))
        w.r.fail(at + ": key " + std::to_string(k) + " out of order or range");
    }
    for (std::uint32_t i = 0; i <= n; ++i)
      check_page(w, get_at<std::uint64_t>(p, L_.inner_children + i * 8), level - 1,
                 i ? get_at<Key>(p, kHeader + (i - 1) * 8) : lo, i ? true : has_lo,
                 i < n ? get_at<Key>(p, kHeader + i * 8) : hi, i < n ? true : has_hi);
    return;
  }
  if (kind != kind_ || n > L_.cap(kind_)) return w.r.fail(at + ": wrong kind or count for a leaf");
  w.leaves.push_back(page);
  w.nexts.push_back(get_at<std::uint64_t>(p, kNextOff));
  w.records += n;
  auto bit = [&](std::uint32_t s) {
    return (get_at<std::uint64_t>(p, kHeader + s / 64 * 8) >> (s % 64)) & 1;
  };
  std::uint32_t held = 0;
  std::set<Key> keys;
  for (std::uint32_t s = 0; s < L_.cap(kind_); ++s) {
    if (kind_ == kSortedLeaf ? s >= n : !bit(s)) continue;
    ++held;
    const Key k = get_at<Key>(p, L_.slot_off(kind_, s));
    if (!in_range(k) || !keys.insert(k).second ||
        (kind_ == kSortedLeaf && s && k <= get_at<Key>(p, L_.slot_off(kind_, s - 1))))
      w.r.fail(at + ": key " + std::to_string(k) + " duplicated, out of order or out of range");
    if (kind_ == kHashLeaf)  // every slot from its home to it is occupied: a probe finds it
      for (std::uint32_t t = L_.home(k); t != s; t = next_slot(t))
        if (!bit(t)) {
          w.r.fail(at + ": key " + std::to_string(k) + " cannot be found from its home slot");
          break;
        }
  }
  if (held != n)
    w.r.fail(at + ": count " + std::to_string(n) + " but " + std::to_string(held) + " entries");
}

CheckReport BMBTree::check() const {
  CheckReport r;
  Walk w{r, {}, {}, {}, 0, 0};
  check_page(w, root_->root_page, root_level_, 0, false, 0, false);
  for (std::size_t i = 0; i < w.nexts.size(); ++i)
    if (w.nexts[i] != (i + 1 < w.leaves.size() ? w.leaves[i + 1] : 0))
      r.fail("leaf " + std::to_string(w.leaves[i]) + " does not link to the next leaf");
  if (w.records != records_ || w.leaves.size() != leaves_ || w.inner != inner_pages_)
    r.fail("the tree holds " + std::to_string(w.records) + " records in " +
           std::to_string(w.leaves.size()) + " leaves and " + std::to_string(w.inner) +
           " inner pages; the counts say " + std::to_string(records_) + ", " +
           std::to_string(leaves_) + ", " + std::to_string(inner_pages_));
  if (arena_->used_slots() != w.seen.size() + spare_pages_.size())
    r.fail("the arena uses " + std::to_string(arena_->used_slots()) + " pages, the tree " +
           std::to_string(w.seen.size()) + " and " + std::to_string(spare_pages_.size()) +
           " are spare");
  check_arena_blocks(pool_, {arena_.get()}, r, {root_->log});
  if (log_->pending()) r.fail("the log holds records no commit made durable");
  if (bm_.leaf_budget() != std::max<std::size_t>(leaf_budget(), 1))
    r.fail("the leaf frame budget is stale");
  for (auto& p : bm_.problems()) r.fail(p);
  std::vector<std::byte> parent(L_.page);
  for (const auto& z : bm_.swizzles()) {
    bm_.peek(z.parent, parent.data());
    if (get_at<std::uint64_t>(parent.data(), L_.inner_children + z.slot * 8) != z.child)
      r.fail("page " + std::to_string(z.parent) + ": swizzled child " + std::to_string(z.slot) +
             " is not the child its bytes name");
  }
  r.facts = {{"records", double(w.records)},
             {"leaves", double(w.leaves.size())},
             {"inner_pages", double(w.inner)},
             {"frames", double(bm_.frames())}};
  return r;
}

}  // namespace
}  // namespace dptree::baselines::bmtree

namespace dptree {

void register_bm_btree_index() {
  add_builtin_index(
      {"bm-btree",
       "2-Tier-BM (DPTree paper §4.3): B+-tree over a DRAM buffer of PM pages with "
       "cache-line-grained loading, mini pages and pointer swizzling (van Renen et al., SIGMOD "
       "2018), physiological redo/undo log on PM, checkpoints when the log fills; "
       "single-threaded",
       true, false,
       [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
         if (!cfg.pool)
           throw Error(Errc::invalid_argument, "bm-btree is persistent: give it a pool");
         return std::make_unique<baselines::bmtree::BMBTree>(
             *cfg.pool, baselines::bmtree::parse_options(cfg.options), cfg.expected_records);
       },
       baselines::bmtree::option_table().docs()});
}

}  // namespace dptree
