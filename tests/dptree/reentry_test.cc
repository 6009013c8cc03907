// Index code re-entered on the flushing thread. The crash simulator's hook runs inside
// pm::flush, on the thread that flushes, and the crash tests recover captured images there;
// a recovery may merge. So a whole merge can run in the middle of another tree's merge
// write-back, on the same thread, and no thread_local scratch may be live across a flush.
// The concurrent crash tests met this by chance (about one run in 30, when the merge
// write-back kept its list of slots to flush in a thread_local vector); this test makes it
// happen on every run.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "dptree/dptree.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/sim.h"
#include "dptree/testing/phases.h"
#include "small_options.h"

namespace dptree {
namespace {

struct SimMode {
  SimMode() { pm::set_mode(pm::Mode::sim); }
  ~SimMode() { pm::set_mode(pm::Mode::dram); }
};

// Tree A merges once; at each of the first 40 flushes inside its write-back (phase 4), the hook
// writes new keys into tree B, in its own pool, and merges it, on the same thread (B's merge
// writes back new leaves too); then A's write-back goes on. An image of A that
// holds only what was flushed and fenced (nothing evicted early) must recover with every
// record and pass check().
TEST(DPTreeReentry, MergesRunInsideAFlushLeaveTheOuterMergeDurable) {
  SimMode sim;
  auto a_pool = pm::Pool::create_in_memory(2 << 20);
  auto b_pool = pm::Pool::create_in_memory(2 << 20);
  // A's leaves hold 32 entries, B's 8: a write-back list that B refilled would be short. A
  // merges only when asked: its one merge writes every leaf new, and nothing rewrites them.
  const DPTreeOptions a_opt = small_options(32, 0.3, 1u << 20);
  auto a = DPTree<>::create(*a_pool, a_opt);
  auto b = DPTree<>::create(*b_pool, small_options(8));
  std::size_t entered = 0;
  Key next_b = 0;
  a_pool->sim()->set_hook([&](const pm::Event& e) {
    if (e.kind != pm::EventKind::flush || dptree_current_phase() != DPTreePhase::flush ||
        entered == 40)
      return;
    ++entered;
    for (int i = 0; i < 20; ++i, ++next_b) b->upsert(next_b * 7919 % 100003, next_b);
    b->merge();
  });
  constexpr Key kKeys = 600;
  for (Key k = 1; k <= kKeys; ++k) a->upsert(k * 104729 % 1000003, k);
  a->merge();  // every record in the base tree, written back with B merging inside
  a_pool->sim()->set_hook(nullptr);
  ASSERT_GT(entered, 10u) << "A's merges must flush in their write-back phase";
  ASSERT_GE(b->stats().merges, entered) << "B must merge inside each of A's flushes";

  pm::CaptureOptions only_fenced;  // p_evict 0: what was not written back is lost
  only_fenced.p_pending = 0.0;
  auto img = pm::Pool::open_image(a_pool->sim()->capture(only_fenced));
  auto r = DPTree<>::open(*img, a_opt);
  const auto report = r->check();
  EXPECT_TRUE(report.ok) << (report.ok ? "" : report.problems.front());
  for (Key k = 1; k <= kKeys; ++k)
    ASSERT_EQ(r->lookup(k * 104729 % 1000003), std::optional<Value>(k)) << "record " << k;
}

}  // namespace
}  // namespace dptree
