// Garbage collection (§2.3 phase 7) and the undoing of a merge (Algorithm 4 lines 2-4) rerun
// by recovery after a crash that cut them short. In the concurrent DPTree the Front's writers
// take log pages while the merge thread frees leaves, and the owner directory and the
// allocator both hand out what was freed last first: a new log page may get the slot, or the
// block, of a leaf freed a moment before. The rerun must free what the interrupted run did not
// reach and leave that log page alone. Each test builds the state the crash left with the
// tree's own pieces (owner directory, pendingLeaves, log page cache), then recovers.
#include <gtest/gtest.h>

#include <memory>

#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "engine/family.h"
#include "engine/merge.h"
#include "engine/owner_dir.h"
#include "engine/plog.h"
#include "engine/validate.h"
#include "format/layout.h"
#include "format/log_page.h"

namespace dptree::detail {
namespace {

// A pool with a DPTree root, its owner directory, pendingLeaves and log page cache. The log
// pages are as big as the leaves, so that the allocator may give a page a leaf's block.
struct Tree {
  std::unique_ptr<pm::Pool> pool = pm::Pool::create_in_memory(1 << 20);
  Root* root = nullptr;
  LeafLayout L;
  std::unique_ptr<OwnerDir> dir;
  std::unique_ptr<PendingLeaves> pending;
  std::unique_ptr<LogPageCache> pages;

  Tree() {
    L.init(8, 8, 8);
    auto& alloc = pool->allocator();
    u64 b = alloc.reserve(sizeof(Root));
    pm::fill_bytes(pool->at(b), 0, sizeof(Root));
    alloc.activate(pool->root_word(), b);
    root = pool->root<Root>();
    dir = std::make_unique<OwnerDir>(*pool, &root->dir);
    pending = std::make_unique<PendingLeaves>(*pool, &root->pending);
    pages = std::make_unique<LogPageCache>(*pool, *dir, L.bytes);
  }

  // A leaf owned by a new directory slot; `created` records the slot in pendingLeaves first,
  // as a merge does for the leaves it creates.
  u64 new_leaf(bool created) {
    u64 slot = dir->take_slot();
    auto& alloc = pool->allocator();
    u64 off = alloc.reserve(L.bytes);
    pm::fill_bytes(pool->at(off), 0, L.bytes);
    Leaf lf{pool->at(off), &L};
    pm::store(&lf.owner_slot(), OwnerSlotPtr(slot));
    pm::store(&lf.type(), kLeafType);
    if (created) pending->add(slot);
    pm::flush(pool->at(off), 64);
    alloc.activate(pool->get(OwnerSlotPtr(slot))->word(), off);
    return off;
  }
  u64 slot_of(u64 block) const { return pool->get(LeafPtr(block))->owner_slot.off; }
  u64 owned_by(u64 slot) const { return pool->get(OwnerSlotPtr(slot))->off; }

  // Recovery's first steps (Algorithm 4 lines 2-5), on the state as it stands.
  void recover() {
    dir->load();
    finish_interrupted_merge(*pool, root, *dir, *pending, L);
  }
  // The log page still belongs to its slot and its block is allocated.
  void expect_page_kept(u64 page, u64 slot) const {
    EXPECT_EQ(owned_by(slot), page) << "the rerun freed the log page's slot";
    EXPECT_TRUE(pool->allocator().is_live(page)) << "the rerun freed the log page";
    EXPECT_EQ(pool->at<LogPageHeader>(page)->type, kPageType);
    EXPECT_FALSE(pending->exists());
    EXPECT_EQ(root->gv & (kInMerge | kInGc), 0u);
  }
};

// A merge created a leaf that its consolidation dropped (in pendingLeaves, in no list). The
// collection freed it; a writer's new log page took its slot; the crash came before
// pendingLeaves was destroyed.
TEST(GarbageCollectionRerun, LeavesALogPageThatTookACreatedLeafsSlot) {
  Tree t;
  begin_merge(*t.pool, t.root, *t.pending);
  const u64 dropped = t.new_leaf(true);
  const u64 slot = t.slot_of(dropped);
  commit_merge(t.root, 1, LeafPtr::null(), 0);
  t.dir->free_owned(slot);  // the interrupted collection's first step over pendingLeaves
  const u64 page = t.pages->take(1).off;
  ASSERT_EQ(t.slot_of(page), slot) << "the directory did not hand out the freed slot";
  t.recover();
  t.expect_page_kept(page, slot);
}

// The leaf of the old version that the merge replaced was freed; a writer's new log page
// took both its slot and its block (the same size here).
TEST(GarbageCollectionRerun, StopsAtAnOldLeafWhoseBlockALogPageTook) {
  Tree t;
  const u64 old_leaf = t.new_leaf(false);
  pm::store(&t.root->head[0], LeafPtr(old_leaf));
  begin_merge(*t.pool, t.root, *t.pending);
  commit_merge(t.root, 1, LeafPtr::null(), 0);
  const u64 slot = t.slot_of(old_leaf);
  t.dir->free_owned(slot);
  const u64 page = t.pages->take(0).off;  // its record words are 0: a null "next" word
  ASSERT_EQ(page, old_leaf) << "the allocator did not hand out the freed block";
  ASSERT_EQ(t.slot_of(page), slot);
  {  // the checks at open walk the old list as the rerun does, and accept the page there
    TreeParts parts(*t.pool, "DPTree");
    parts.attach_parts(*t.root, 8, 8, 8, t.L.bytes);
    EXPECT_NO_THROW(
        validate_on_open(parts, *t.root, TreeShape{"DPTree", kDPTreeGvBits, ~u64{0}, {}}));
  }
  t.recover();
  t.expect_page_kept(page, slot);
}

// A merge that ran out of PM was being undone (abort_merge): its created leaf was freed, a
// writer's new log page took the slot, and the crash came before pendingLeaves was destroyed.
TEST(GarbageCollectionRerun, UndoingAMergeLeavesALogPageThatTookACreatedLeafsSlot) {
  Tree t;
  begin_merge(*t.pool, t.root, *t.pending);
  const u64 created = t.new_leaf(true);
  const u64 slot = t.slot_of(created);
  t.dir->free_owned(slot);
  const u64 page = t.pages->take(0).off;
  ASSERT_EQ(t.slot_of(page), slot);
  ASSERT_TRUE(t.root->gv & kInMerge);
  t.recover();
  t.expect_page_kept(page, slot);
}

// What the rerun must still do: free the created leaves the interrupted run did not reach and
// the old leaves it replaced, and keep the leaves of the new version.
TEST(GarbageCollectionRerun, FreesWhatTheInterruptedRunDidNotReach) {
  Tree t;
  const u64 kept = t.new_leaf(false), replaced = t.new_leaf(false);
  pm::store(&Leaf{t.pool->at(kept), &t.L}.next(0), LeafPtr(replaced));
  pm::store(&t.root->head[0], LeafPtr(kept));
  begin_merge(*t.pool, t.root, *t.pending);
  const u64 created = t.new_leaf(true), dropped = t.new_leaf(true);
  pm::store(&Leaf{t.pool->at(kept), &t.L}.next(1), LeafPtr(created));
  commit_merge(t.root, 1, LeafPtr(kept), 0);
  t.recover();
  for (u64 l : {kept, created}) EXPECT_TRUE(t.pool->allocator().is_live(l));
  for (u64 l : {replaced, dropped}) EXPECT_FALSE(t.pool->allocator().is_live(l));
  EXPECT_FALSE(t.pending->exists());
  EXPECT_EQ(t.root->gv, 1u);
}

}  // namespace
}  // namespace dptree::detail
