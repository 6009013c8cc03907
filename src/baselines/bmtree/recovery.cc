// 2-Tier-BM's open: the root block and its settings, the log, the redo/undo replay, and the
// volatile state rebuilt from the pages (which are used, leaves, records).
#include <algorithm>
#include <bit>
#include <string>
#include <vector>

#include "baselines/bmtree/tree.h"

namespace dptree::baselines::bmtree {

Root* BMBTree::open_root(pm::Pool& pool, const Options& opt) {
  auto* r = static_cast<Root*>(open_arena_root(pool, sizeof(Root), kMagic, "bm-btree"));
  if (r->page_bytes == 0) {  // new (or a crash before this was persisted)
    const std::uint32_t page = opt.page_bytes;
    pm::store(&r->page_bytes, page);
    pm::store(&r->leaf_kind, opt.leaf);
    pm::store(&r->page_slab, std::max<std::uint64_t>(r->slab_size, 4 * page));
    pm::persist(r, sizeof(Root));
  }
  const std::string where = "bm-btree in " + pool.name();
  if (r->page_bytes < kMinPage || r->page_bytes > kMaxPage || !std::has_single_bit(r->page_bytes) ||
      (r->leaf_kind != kHashLeaf && r->leaf_kind != kSortedLeaf) ||
      !std::has_single_bit(r->page_slab) || r->page_slab < r->page_bytes ||
      r->page_slab > (std::uint64_t{1} << 30))
    throw Error(Errc::corrupt,
                where +
                    ": its root holds impossible settings: the pool is damaged; restore it "
                    "from a copy");
  if (opt.page_given && opt.page_bytes != r->page_bytes)
    throw Error(Errc::invalid_argument, where + " has page_bytes=" + std::to_string(r->page_bytes) +
                                            ", not " + std::to_string(opt.page_bytes) +
                                            ": pass that value (or none) or use a new pool");
  if (opt.leaf_given && opt.leaf != r->leaf_kind)
    throw Error(Errc::invalid_argument, where + " has " +
                                            (r->leaf_kind == kHashLeaf ? "hash" : "sorted") +
                                            " leaves: pass that leaf= (or none) or use a new pool");
  return r;
}

void BMBTree::make_log(std::size_t bytes) {
  auto& a = pool_.allocator();
  const std::uint64_t b = a.reserve(bytes);
  RedoUndoLog::format(pool_, b);
  a.activate(&root_->log, b);
}

void BMBTree::damaged(const std::string& what) const {
  throw Error(Errc::corrupt, "bm-btree in " + pool_.name() + ": " + what +
                                 ": the pool is damaged; restore it from a copy");
}

// Redo and undo from the log, an empty log, then the volatile state from the pages: which
// pages are used (the rest, pages of an interrupted split, go back to the arena), leaves,
// records. The frames start empty.
void BMBTree::recover(std::size_t expected_records) {
  arena_ = std::make_unique<SlabArena>(pool_, &root_->pages_dir, L_.page, root_->page_slab);
  arena_->open();
  if (!root_->log) make_log(wanted_log_bytes(expected_records));
  if (pool_.allocator().owner_of(root_->log) != pool_.offset_of(&root_->log))
    damaged("its log is not a live block it owns");
  log_ = std::make_unique<RedoUndoLog>(pool_, root_->log);
  bm_.set_log(log_.get());
  const auto replayed = log_->replay([&](std::uint64_t page, std::uint32_t off, std::uint32_t len) {
    return arena_->is_slot(page) && std::size_t{off} + len <= L_.page;
  });
  redone_ = replayed.redone;
  undone_ = replayed.undone;
  log_->truncate();
  if (root_->root_page) {
    if (!arena_->is_slot(root_->root_page)) damaged("its root page is not a page");
    const auto level = get_at<std::uint32_t>(pool_.at(root_->root_page), kLevelOff);
    root_level_ = get_at<std::uint32_t>(pool_.at(root_->root_page), kKindOff) == kInner ? level : 0;
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
std::uint32_t BMBTree::bitmap_count(const std::byte* p) const {
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
void BMBTree::mark(std::uint64_t page, std::uint32_t level, std::vector<std::uint64_t>& leaves) {
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

}  // namespace dptree::baselines::bmtree
