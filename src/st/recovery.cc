// Recovery, Algorithm 4 (§2.4): an interrupted merge is reclaimed, an unfinished garbage
// collection finished, the log replayed into a new buffer tree, restartCount incremented
// (leaves then rebuild their partially persistent metadata lazily, §2.2).
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"
#include "engine/phase.h"
#include "st/dptree_impl.h"

namespace dptree {

using namespace detail;  // NOLINT: the layout vocabulary

void DPTreeCore::Impl::recover(OpenedList list) {
  PhaseScope ph(DPTreePhase::recovery);
  dir->load();
  freed += finish_interrupted_merge(pool, root, *dir, *pending, L);  // lines 2-5
  // The log of the previous version was released only partly when the crash came.
  if (root->log_head[1 - cv()]) PLog::release_chain(pool, &root->log_head[1 - cv()], 1 - cv());
  dir->load();
  reset_bloom();
  buffer.clear();
  log->replay(&root->log_head[cv()], cv(), [&](u64 k, u64 v) {  // line 6
    buffer.insert_or_assign(k, v);
    bloom.add(k);
  });
  pages->sweep({log->pages().begin(), log->pages().end()}, list.pages);
  pm::store(&root->restart_count, root->restart_count + 1);  // line 7
  {
    pm::CategoryScope cat(pm::Category::node);
    pm::persist(&root->restart_count, 8);
  }
  // After line 7: no leaf's metadata is current. The list validation walked, with the max
  // keys it read: lines 2-5 change only the other version's.
  base->rebuild_inner(std::move(list.leaves), std::move(list.max));
}

}  // namespace dptree
