// The checked walks of the owner directory and pendingLeaves (format/dir_blocks.h).
#include "format/dir_blocks.h"

#include "dptree/error.h"

namespace dptree::detail {

void throw_endless_list(const pm::Pool& pool, const void* head, std::string_view list) {
  throw Error(Errc::corrupt, "pool '" + pool.name() + "': " + std::string(list) +
                                 " from the word at offset " +
                                 std::to_string(pool.offset_of(head)) +
                                 " does not end (a cycle): the pool is damaged; restore it from a "
                                 "copy");
}

namespace {

template <class Block>
std::vector<PPtr<Block>> block_list(const pm::Pool& pool, const PPtr<Block>& head,
                                    std::string_view list) {
  std::vector<PPtr<Block>> out;
  walk_blocks(pool, head, list, [&](PPtr<Block> b, u64) { out.push_back(b); });
  return out;
}

}  // namespace

std::vector<DirBlockPtr> dir_blocks(const pm::Pool& pool, const DirBlockPtr& head) {
  return block_list(pool, head, kDirList);
}

std::vector<PendingBlockPtr> pending_blocks(const pm::Pool& pool, const PendingBlockPtr& head) {
  return block_list(pool, head, kPendingList);
}

std::vector<OwnerSlotPtr> pending_entries(const pm::Pool& pool, const PendingBlockPtr& head) {
  std::vector<OwnerSlotPtr> out;
  for (PendingBlockPtr b : pending_blocks(pool, head))
    for (const OwnerSlotPtr& e : pool.get(b)->slot)
      if (e) {
        resolve_link(pool, e, "a pendingLeaves entry");
        out.push_back(e);
      }
  return out;
}

}  // namespace dptree::detail
