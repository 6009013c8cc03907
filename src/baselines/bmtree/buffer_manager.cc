// bm-btree's buffer manager (buffer_manager.h): frames for PM pages, fixing a page or a
// child through its swizzled pointer, and eviction under the leaf budget.
#include "baselines/bmtree/buffer_manager.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "baselines/bmtree/redo_undo_log.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"

namespace dptree::baselines::bmtree {
namespace {

constexpr std::size_t kLine = pm::kCacheLine;

bool test(const std::vector<std::uint64_t>& b, std::size_t i) {
  return (b[i / 64] >> (i % 64)) & 1;
}
void set(std::vector<std::uint64_t>& b, std::size_t i) {
  b[i / 64] |= std::uint64_t{1} << (i % 64);
}
bool any(const std::vector<std::uint64_t>& b) {
  return std::any_of(b.begin(), b.end(), [](std::uint64_t w) { return w != 0; });
}

}  // namespace

BufferManager::BufferManager(pm::Pool& pool, std::size_t page_bytes, bool mini_pages)
    : pool_(pool),
      page_bytes_(page_bytes),
      lines_(page_bytes / kLine),
      words_((page_bytes / kLine + 63) / 64),
      mini_pages_(mini_pages && page_bytes / kLine >= 2 * kMiniLines) {}

void BufferManager::set_leaf_budget(std::size_t n) {
  budget_ = std::max<std::size_t>(n, 1);
  shrink();
}

Frame& BufferManager::make_frame(std::uint64_t page, bool leaf, bool mini) {
  Frame* f;
  if (!spare_.empty()) {
    f = spare_.back();
    spare_.pop_back();
  } else {
    frames_.push_back(std::make_unique<Frame>());
    f = frames_.back().get();
  }
  f->mini = mini;
  if (mini) {  // a full buffer held by a spare frame goes back to the heap
    f->data.reset();
    if (!f->mini_data) f->mini_data = std::make_unique<std::uint64_t[]>(kMiniLines * kLine / 8);
    f->mini_slot.assign(lines_, 0);
    f->mini_used = 0;
  } else if (!f->data) {
    f->data = std::make_unique<std::uint64_t[]>(page_bytes_ / 8);
  }
  f->page = page;
  f->leaf = leaf;
  f->ref = true;
  f->pins = 1;
  f->resident.assign(words_, 0);
  f->dirty.assign(words_, 0);
  f->kids.clear();
  f->parent = nullptr;
  map_.emplace(page, f);
  if (leaf) {
    ++leaf_frames_;
    leaf_units_ += units(*f);
  }
  return *f;
}

Frame& BufferManager::fix(std::uint64_t page, bool leaf) {
  if (auto it = map_.find(page); it != map_.end()) {
    it->second->ref = true;
    ++it->second->pins;
    return *it->second;
  }
  Frame& f = make_frame(page, leaf, leaf && mini_pages_);
  read(f, 0, kLine);  // the header
  shrink();
  return f;
}

Frame& BufferManager::fix_child(Frame& parent, std::uint32_t slot, std::uint64_t page, bool leaf) {
  if (slot < parent.kids.size() && parent.kids[slot]) {
    Frame& f = *parent.kids[slot];
    f.ref = true;
    ++f.pins;
    ++stats_.swizzle_hits;
    return f;
  }
  Frame& f = fix(page, leaf);
  if (f.parent) f.parent->kids[f.parent_slot] = nullptr;  // reached through another parent
  if (parent.kids.size() <= slot) parent.kids.resize(slot + 1, nullptr);
  parent.kids[slot] = &f;
  f.parent = &parent;
  f.parent_slot = slot;
  return f;
}

void BufferManager::unswizzle_kids(Frame& f) {
  for (Frame* k : f.kids)
    if (k) k->parent = nullptr;
  f.kids.clear();
}

Frame& BufferManager::fix_new(std::uint64_t page, bool leaf) {
  Frame& f = make_frame(page, leaf, false);
  shrink();
  return f;
}

void BufferManager::set_leaf(Frame& f, bool leaf) {
  if (f.leaf == leaf) return;
  f.leaf = leaf;
  if (leaf) {
    ++leaf_frames_;
    leaf_units_ += units(f);
  } else {
    --leaf_frames_;
    leaf_units_ -= units(f);
  }
}

void BufferManager::unfix(Frame& f) {
  if (--f.pins == 0) shrink();
}

void BufferManager::load(Frame& f, std::size_t first_line, std::size_t end_line) {
  const std::byte* src = pool_.at(f.page);
  for (std::size_t l = first_line; l < end_line; ++l) {
    if (test(f.resident, l)) continue;
    std::memcpy(f.bytes() + l * kLine, src + l * kLine, kLine);
    set(f.resident, l);
    ++stats_.lines_loaded;
  }
}

const std::byte* BufferManager::read_slow(Frame& f, std::uint32_t off, std::uint32_t len) {
  const std::size_t first = off / kLine, end = (off + len + kLine - 1) / kLine;
  if (f.mini) {
    if (len == 0) return f.mini_bytes();  // nothing is read from it
    if (end - first == 1 && (test(f.resident, first) || f.mini_used < kMiniLines))
      return load_into_mini(f, first) + off % kLine;
    promote(f);
  }
  load(f, first, end);
  return f.bytes() + off;
}

const std::byte* BufferManager::load_into_mini(Frame& f, std::size_t line) {
  if (!test(f.resident, line)) {
    f.mini_slot[line] = static_cast<std::uint8_t>(++f.mini_used);
    std::memcpy(f.line(line), pool_.at(f.page) + line * kLine, kLine);
    set(f.resident, line);
    ++stats_.lines_loaded;
  }
  return f.line(line);
}

void BufferManager::promote(Frame& f) {
  auto full = std::make_unique<std::uint64_t[]>(page_bytes_ / 8);
  auto* to = reinterpret_cast<std::byte*>(full.get());
  for (std::size_t l = 0; l < lines_; ++l)
    if (test(f.resident, l)) std::memcpy(to + l * kLine, f.line(l), kLine);
  f.data = std::move(full);
  f.mini = false;
  if (f.leaf) leaf_units_ += lines_ - kMiniLines;
  ++stats_.promotions;
}

void BufferManager::write(Frame& f, std::uint32_t off, const void* src, std::uint32_t len) {
  std::byte* at = const_cast<std::byte*>(read(f, off, len));
  if (std::memcmp(at, src, len) == 0) return;  // nothing changes: nothing to log
  log_->append_update(f.page, off, at, src, len);
  unswizzle_kids(f);
  std::memcpy(at, src, len);
  for (std::size_t l = off / kLine; l < (off + len + kLine - 1) / kLine; ++l) set(f.dirty, l);
}

void BufferManager::rewrite(Frame& f, const std::byte* image) {
  const std::byte* now = read(f, 0, static_cast<std::uint32_t>(page_bytes_));
  for (std::size_t l = 0; l < lines_;) {
    if (std::memcmp(now + l * kLine, image + l * kLine, kLine) == 0) {
      ++l;
      continue;
    }
    std::size_t e = l + 1;
    while (e < lines_ && std::memcmp(now + e * kLine, image + e * kLine, kLine) != 0) ++e;
    const auto off = static_cast<std::uint32_t>(l * kLine);
    write(f, off, image + off, static_cast<std::uint32_t>((e - l) * kLine));
    l = e;
  }
}

void BufferManager::format(Frame& f, const std::byte* image, const std::vector<bool>& lines) {
  for (std::size_t l = 0; l < lines_;) {
    if (!lines[l]) {
      ++l;
      continue;
    }
    std::size_t e = l + 1;
    while (e < lines_ && lines[e]) ++e;
    const std::size_t off = l * kLine, len = (e - l) * kLine;
    log_->append_format(f.page, static_cast<std::uint32_t>(off), image + off,
                        static_cast<std::uint32_t>(len));
    std::memcpy(f.bytes() + off, image + off, len);
    for (std::size_t i = l; i < e; ++i) {
      set(f.resident, i);
      set(f.dirty, i);
    }
    l = e;
  }
}

void BufferManager::write_back(Frame& f) {
  if (!any(f.dirty)) return;
  if (log_->pending()) {  // the write-ahead rule: an operation in flight has changed a frame
    log_->force();
    ++stats_.steals;
  }
  pm::CategoryScope cat(pm::Category::node);
  std::byte* dst = pool_.at(f.page);
  for (std::size_t l = 0; l < lines_; ++l) {
    if (!test(f.dirty, l)) continue;
    pm::store_bytes(dst + l * kLine, f.line(l), kLine);
    pm::flush(dst + l * kLine, kLine);
    ++stats_.lines_written;
  }
  f.dirty.assign(words_, 0);
}

void BufferManager::evict(Frame& f) {
  const bool had_dirty = any(f.dirty);
  write_back(f);
  if (had_dirty) {
    pm::CategoryScope cat(pm::Category::node);
    pm::fence();
  }
  map_.erase(f.page);
  if (f.parent) f.parent->kids[f.parent_slot] = nullptr;
  f.parent = nullptr;
  unswizzle_kids(f);
  if (f.leaf) {
    --leaf_frames_;
    leaf_units_ -= units(f);
  }
  spare_.push_back(&f);
  ++stats_.evictions;
}

void BufferManager::shrink() {
  // A clock over the frames; two full turns find a victim unless every leaf frame is pinned.
  for (std::size_t tries = 0; leaf_units_ > budget_ * lines_ && tries < 2 * frames_.size() + 2;
       ++tries) {
    hand_ = (hand_ + 1) % frames_.size();
    Frame& f = *frames_[hand_];
    if (!f.leaf || f.pins || !map_.contains(f.page) || map_.at(f.page) != &f) continue;
    if (f.ref) {
      f.ref = false;
      continue;
    }
    evict(f);
    tries = 0;
  }
}

void BufferManager::write_back_all() {
  for (auto& [page, f] : map_) write_back(*f);
  pm::CategoryScope cat(pm::Category::node);
  pm::fence();
  ++stats_.checkpoints;
}

void BufferManager::peek(std::uint64_t page, std::byte* out) const {
  std::memcpy(out, pool_.at(page), page_bytes_);
  auto it = map_.find(page);
  if (it == map_.end()) return;
  Frame& f = *it->second;
  for (std::size_t l = 0; l < lines_; ++l)
    if (test(f.resident, l)) std::memcpy(out + l * kLine, f.line(l), kLine);
}

std::size_t BufferManager::mini_frames() const {
  return static_cast<std::size_t>(
      std::count_if(map_.begin(), map_.end(), [](const auto& e) { return e.second->mini; }));
}

std::vector<BufferManager::Swizzle> BufferManager::swizzles() const {
  std::vector<Swizzle> out;
  for (const auto& [page, f] : map_)
    for (std::size_t i = 0; i < f->kids.size(); ++i)
      if (f->kids[i]) out.push_back({page, static_cast<std::uint32_t>(i), f->kids[i]->page});
  return out;
}

std::vector<std::string> BufferManager::problems() const {
  std::vector<std::string> out;
  std::size_t leaves = 0;
  for (const auto& [page, f] : map_) {
    if (f->leaf) ++leaves;
    if (f->pins) out.push_back("frame of page " + std::to_string(page) + " is still pinned");
    for (std::size_t w = 0; w < words_; ++w)
      if (f->dirty[w] & ~f->resident[w])
        out.push_back("frame of page " + std::to_string(page) + " has a dirty line not loaded");
  }
  for (const auto& [page, f] : map_) {
    for (std::size_t i = 0; i < f->kids.size(); ++i)
      if (f->kids[i] && (f->kids[i]->parent != f || f->kids[i]->parent_slot != i ||
                         !map_.contains(f->kids[i]->page)))
        out.push_back("frame of page " + std::to_string(page) + ": swizzled child " +
                      std::to_string(i) + " is stale");
  }
  std::size_t held = 0;
  for (const auto& [page, f] : map_) {
    if (f->leaf) held += units(*f);
    if (f->mini && f->mini_used > kMiniLines)
      out.push_back("mini page of page " + std::to_string(page) + " holds too many lines");
    if (f->mini)
      for (std::size_t l = 0; l < lines_; ++l)
        if (test(f->resident, l) != (f->mini_slot[l] != 0))
          out.push_back("mini page of page " + std::to_string(page) + ": line " +
                        std::to_string(l) + " resident without a slot, or the reverse");
  }
  if (leaves != leaf_frames_ || held != leaf_units_) out.push_back("leaf frame count is off");
  if (leaf_units_ > budget_ * lines_)
    out.push_back(std::to_string(leaf_units_) + " lines of leaf frames exceed the budget of " +
                  std::to_string(budget_ * lines_));
  return out;
}

}  // namespace dptree::baselines::bmtree
