// The owner directory and pendingLeaves (owner_dir.h).
#include "st/owner_dir.h"

#include <cstddef>
#include <cstring>
#include <string>

#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "format/log_page.h"

namespace dptree::detail {

namespace {

// A new zeroed block of `bytes`, written back and then activated into the persistent word
// `link` (§2.4): the last block's next word, or the list's head.
u64 append_zeroed_block(pm::Pool& pool, std::size_t bytes, u64* link) {
  pm::CategoryScope cat(pm::Category::alloc);
  auto& alloc = pool.allocator();
  u64 b = alloc.reserve(bytes);
  pm::fill_bytes(pool.at(b), 0, bytes);
  pm::flush(pool.at(b), bytes);
  alloc.activate(link, b);
  return b;
}

}  // namespace

OwnerDir::OwnerDir(pm::Pool& pool, u64* head) : pool_(pool), head_(head) {}

u64* OwnerDir::word(u64 off) const {
  return pool_.at<u64>(off);
}

void OwnerDir::load() {
  std::lock_guard g(mu_);
  blocks_.clear();
  free_.clear();
  for (u64 b = *head_; b; b = pool_.at<DirBlock>(b)->next) {
    blocks_.push_back(b);
    const auto* d = pool_.at<DirBlock>(b);
    for (std::size_t i = kDirSlots; i-- > 0;)
      if (d->slot[i] == 0) free_.push_back(b + offsetof(DirBlock, slot) + 8 * i);
  }
}

u64 OwnerDir::take_slot() {
  std::lock_guard g(mu_);
  if (free_.empty()) {
    u64 b = append_zeroed_block(
        pool_, kDirBlockBytes, blocks_.empty() ? head_ : &pool_.at<DirBlock>(blocks_.back())->next);
    blocks_.push_back(b);
    for (std::size_t i = kDirSlots; i-- > 0;) free_.push_back(b + offsetof(DirBlock, slot) + 8 * i);
  }
  u64 s = free_.back();
  free_.pop_back();
  return s;
}

void OwnerDir::return_slot(u64 slot) {
  std::lock_guard g(mu_);
  free_.push_back(slot);
}

void OwnerDir::free_owned(u64 slot) {
  if (*word(slot) == 0) return;
  pm::CategoryScope cat(pm::Category::alloc);
  pool_.allocator().free(word(slot));
  std::lock_guard g(mu_);
  free_.push_back(slot);
}

std::vector<u64> OwnerDir::blocks() const {
  std::lock_guard g(mu_);
  return blocks_;
}

std::size_t OwnerDir::dram_bytes() const {
  std::lock_guard g(mu_);
  return 8 * (blocks_.capacity() + free_.capacity());
}

PendingLeaves::PendingLeaves(pm::Pool& pool, u64* head) : pool_(pool), head_(head) {}

void PendingLeaves::start() {
  std::lock_guard g(mu_);
  blocks_.clear();
  pos_ = 0;
}

void PendingLeaves::new_block_if_full() {
  if (!blocks_.empty() && pos_ < kPendingSlots) return;
  u64 b =
      append_zeroed_block(pool_, kPendingBlockBytes,
                          blocks_.empty() ? head_ : &pool_.at<PendingBlock>(blocks_.back())->next);
  blocks_.push_back(b);
  pos_ = 0;
}

void PendingLeaves::add(u64 slot) {
  std::lock_guard g(mu_);
  pm::CategoryScope cat(pm::Category::alloc);
  new_block_if_full();
  u64* e = &pool_.at<PendingBlock>(blocks_.back())->slot[pos_++];
  pm::store(e, slot);
  pm::persist(e, 8);
}

std::vector<u64> PendingLeaves::slots() const {
  std::vector<u64> out;
  for (u64 b = *head_; b; b = pool_.at<PendingBlock>(b)->next)
    for (u64 s : pool_.at<PendingBlock>(b)->slot)
      if (s) out.push_back(s);
  return out;
}

void PendingLeaves::destroy() {
  std::lock_guard g(mu_);
  pm::CategoryScope cat(pm::Category::alloc);
  std::vector<u64*> owners;
  for (u64* w = head_; *w; w = &pool_.at<PendingBlock>(*w)->next) owners.push_back(w);
  for (auto it = owners.rbegin(); it != owners.rend(); ++it) pool_.allocator().free(*it);
  blocks_.clear();
  pos_ = 0;
}

std::size_t check_block_ownership(const pm::Pool& pool, const std::unordered_set<u64>& owned,
                                  const std::set<u64>& reach, CheckReport& r) {
  for (u64 o : owned)
    if (!reach.contains(o)) {
      u64 type = pool.at<u64>(o)[1];
      r.fail("directory owns unreachable " +
             std::string(type == kPageType   ? "log page"
                         : type == kLeafType ? "leaf"
                                             : "block") +
             " at " + std::to_string(o));
    }
  std::size_t live = 0;
  pool.allocator().for_each_live_block([&](u64 off, std::size_t) {
    ++live;
    if (!reach.contains(off)) r.fail("leaked PM block at offset " + std::to_string(off));
  });
  for (u64 b : reach)
    if (!pool.allocator().is_live(b))
      r.fail("reachable block " + std::to_string(b) + " is not live");
  return live;
}

}  // namespace dptree::detail
