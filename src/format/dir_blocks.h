// Checked, typed walks of the owner directory and pendingLeaves (format/layout.h): recovery,
// open-time validation and check() follow their links only through these. Each link is
// resolved with Pool::resolve, so a word a crash or a damaged file left wrong gives
// Error(corrupt) naming the structure and offsets, never a stray read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dptree/pm/pool.h"
#include "format/layout.h"

namespace dptree::detail {

// The T the persistent word `link` names (nullptr for null), checked: throws Error(corrupt)
// "<what> at offset <link's offset> holds offset <n>, outside the pool ... or misaligned".
// `link` must be the word in the pool, not a copy: its own offset names it.
template <class T>
T* resolve_link(const pm::Pool& pool, const PPtr<T>& link, std::string_view what) {
  if (!link || pool.holds(link)) return pool.get(link);
  return pool.resolve(
      link, std::string(what) + " at offset " + std::to_string(pool.offset_of(&link)));  // throws
}

[[noreturn]] void throw_endless_list(const pm::Pool& pool, const void* head, std::string_view list);

// Calls visit(b, link) for each block `b` of the list whose first link is the word `head`,
// `link` being the offset of the word that names `b`, before `b`'s own next word is read: a visit
// that throws (validation of ownership) stops the walk before it follows a block it refused. A link
// outside the pool or misaligned throws Error(corrupt) (resolve_link, `list` names the list), as
// does a list longer than the pool could hold (a cycle).
template <class Block, class Visit>
void walk_blocks(const pm::Pool& pool, const PPtr<Block>& head, std::string_view list,
                 Visit&& visit) {
  const std::size_t most = pool.size() / sizeof(Block);
  const std::string what = std::string(list) + " block link";
  std::size_t n = 0;
  for (const PPtr<Block>* link = &head; *link; link = &pool.get(*link)->next) {
    if (n++ == most) throw_endless_list(pool, &head, list);
    resolve_link(pool, *link, what);
    visit(*link, pool.offset_of(link));
  }
}

// The lists' names in messages.
inline constexpr std::string_view kDirList = "the owner directory", kPendingList = "pendingLeaves";

// The blocks of the owner directory from its head word (Root::dir), in list order, walked
// with walk_blocks.
std::vector<DirBlockPtr> dir_blocks(const pm::Pool& pool, const DirBlockPtr& head);
// The blocks of pendingLeaves from its head word (Root::pending), walked the same way.
std::vector<PendingBlockPtr> pending_blocks(const pm::Pool& pool, const PendingBlockPtr& head);

// The non-null entries of pendingLeaves, in order: the offsets of the directory slots of the
// leaves the running merge created. Each resolves to a whole slot inside the pool; whether it
// is a slot of the directory is validation's to prove (engine/validate.cc).
std::vector<OwnerSlotPtr> pending_entries(const pm::Pool& pool, const PendingBlockPtr& head);

// check(): whether the slot `s` (a leaf's or log page's owner_slot word) lies whole inside the
// pool and owns the block at `blk`; false, not a stray read, for a damaged word.
inline bool slot_owns(const pm::Pool& pool, OwnerSlotPtr s, u64 blk) {
  return pool.holds(s) && pool.get(s)->off == blk;
}

// The offset of slot `i` of the directory block `b`.
inline OwnerSlotPtr dir_slot(DirBlockPtr b, std::size_t i) {
  return OwnerSlotPtr(b.off + offsetof(DirBlock, slot) + sizeof(OwnerSlot) * i);
}

}  // namespace dptree::detail
