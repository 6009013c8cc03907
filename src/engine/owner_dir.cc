// The owner directory and pendingLeaves (owner_dir.h).
#include "engine/owner_dir.h"

#include <cstddef>
#include <cstring>
#include <string>

#include "dptree/error.h"
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

OwnerDir::OwnerDir(pm::Pool& pool, DirBlockPtr* head) : pool_(pool), head_(head) {}

const DirBlock* OwnerDir::block(DirBlockPtr b) const {
  return pool_.get(b);
}

void OwnerDir::load() {
  std::lock_guard g(mu_);
  blocks_ = dir_blocks(pool_, *head_);
  free_.clear();
  for (DirBlockPtr b : blocks_)
    for (std::size_t i = kDirSlots; i-- > 0;)
      if (!block(b)->slot[i]) free_.push_back(dir_slot(b, i).off);
}

u64 OwnerDir::take_slot() {
  std::lock_guard g(mu_);
  if (free_.empty()) {
    DirBlockPtr b(append_zeroed_block(
        pool_, kDirBlockBytes,
        blocks_.empty() ? head_->word() : pool_.get(blocks_.back())->next.word()));
    blocks_.push_back(b);
    for (std::size_t i = kDirSlots; i-- > 0;) free_.push_back(dir_slot(b, i).off);
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
  OwnerSlot* s = pool_.get(OwnerSlotPtr(slot));
  if (!*s) return;
  pm::CategoryScope cat(pm::Category::alloc);
  pool_.allocator().free(s->word());
  std::lock_guard g(mu_);
  free_.push_back(slot);
}

std::vector<DirBlockPtr> OwnerDir::blocks() const {
  std::lock_guard g(mu_);
  return blocks_;
}

std::size_t OwnerDir::dram_bytes() const {
  std::lock_guard g(mu_);
  return 8 * (blocks_.capacity() + free_.capacity());
}

PendingLeaves::PendingLeaves(pm::Pool& pool, PendingBlockPtr* head) : pool_(pool), head_(head) {}

void PendingLeaves::start() {
  std::lock_guard g(mu_);
  blocks_.clear();
  pos_ = 0;
}

void PendingLeaves::new_block_if_full() {
  if (!blocks_.empty() && pos_ < kPendingSlots) return;
  PendingBlockPtr b(append_zeroed_block(
      pool_, kPendingBlockBytes,
      blocks_.empty() ? head_->word() : pool_.get(blocks_.back())->next.word()));
  blocks_.push_back(b);
  pos_ = 0;
}

void PendingLeaves::add(u64 slot) {
  std::lock_guard g(mu_);
  pm::CategoryScope cat(pm::Category::alloc);
  new_block_if_full();
  OwnerSlotPtr* e = &pool_.get(blocks_.back())->slot[pos_++];
  pm::store(e, OwnerSlotPtr(slot));
  pm::persist(e, 8);
}

std::vector<u64> PendingLeaves::slots() const {
  std::vector<u64> out;
  for (OwnerSlotPtr e : pending_entries(pool_, *head_)) out.push_back(e.off);
  return out;
}

void PendingLeaves::destroy() {
  std::lock_guard g(mu_);
  pm::CategoryScope cat(pm::Category::alloc);
  // Last block first: its owner word is the previous block's next, or the head.
  const std::vector<PendingBlockPtr> list = pending_blocks(pool_, *head_);
  for (std::size_t i = list.size(); i-- > 0;)
    pool_.allocator().free(i ? pool_.get(list[i - 1])->next.word() : head_->word());
  blocks_.clear();
  pos_ = 0;
}

bool check_directory(const pm::Pool& pool, const DirBlockPtr& head, std::unordered_set<u64>& owned,
                     std::set<u64>& reach, CheckReport& r) {
  std::vector<DirBlockPtr> list;
  try {
    list = dir_blocks(pool, head);
  } catch (const Error& e) {
    r.fail(e.what());
    return false;
  }
  for (DirBlockPtr b : list) {
    if (!reach.insert(b.off).second) {
      r.fail("owner directory block at offset " + std::to_string(b.off) +
             " is reached twice (a cycle, or a block of another structure)");
      return false;
    }
    for (const OwnerSlot& blk : pool.get(b)->slot)
      if (blk) owned.insert(blk.off);
  }
  return true;
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
