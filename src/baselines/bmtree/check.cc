// 2-Tier-BM's check(): the tree as the index sees it (frames over PM), its counts, the
// arena and the allocator, the log, the frame budget and the swizzled pointers.
#include <set>
#include <string>
#include <vector>

#include "baselines/bmtree/tree.h"

namespace dptree::baselines::bmtree {

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

}  // namespace dptree::baselines::bmtree
