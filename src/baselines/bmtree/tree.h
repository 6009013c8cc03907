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
//
// The tree and its operation paths are here; opening and recovery in recovery.cc, check() in
// check.cc, the options and the registration in bm_btree.cc.
#pragma once

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

namespace dptree::baselines::bmtree {

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

class BMBTree final : public PutIndex<BMBTree> {
  friend class PutIndex<BMBTree>;  // its name, upsert, insert and update
  static constexpr const char* kName = "bm-btree";

 public:
  BMBTree(pm::Pool& pool, const Options& opt, std::size_t expected_records)
      : claim_(pool, kName),
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

  // ---- open and recovery (recovery.cc) ------------------------------------------------------
  static Root* open_root(pm::Pool& pool, const Options& opt);
  void make_log(std::size_t bytes);
  [[noreturn]] void damaged(const std::string& what) const;
  // Redo and undo from the log, an empty log, then the volatile state from the pages: which
  // pages are used (the rest, pages of an interrupted split, go back to the arena), leaves,
  // records. The frames start empty.
  void recover(std::size_t expected_records);
  // Bits set in a hash leaf's bitmap, counting any past the last slot twice (so they show).
  std::uint32_t bitmap_count(const std::byte* p) const;
  // Marks `page` (at `level`) and its subtree used; counts pages and records; appends its
  // leaves to `leaves` in key order.
  void mark(std::uint64_t page, std::uint32_t level, std::vector<std::uint64_t>& leaves);

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

}  // namespace dptree::baselines::bmtree
