// Recovery of the concurrent DPTree: Algorithm 4 (§2.4) with the log partitions replayed in
// parallel (§4.5), two live logs when the crash came inside a merge (see cdptree_impl.h), and
// the metadata lock bits of §3.2 voided by the restart count they are stamped with (base.h).
#include "cdptree/cdptree_impl.h"
#include "cdptree/phase.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"

namespace dptree {

using namespace detail;  // NOLINT: the layout vocabulary

void CDPTree::Impl::recover(OpenedList list) {
  cdp::PhaseScope ph(CDPTreePhase::recovery);
  Root& R = root->base;
  dir->load();
  ensure_tables();
  freed += finish_interrupted_merge(pool, &R, *dir, *pending, L);  // lines 2-5
  const bool two = R.gv & cdp::kTwoLogs;
  const std::size_t max_pages = pool.size() / opt.log_page_size + 1;
  if (!two) {
    // The other version's log was being released when the crash came: finish it.
    detail::LogPagePtr* t = table(1 - cv());
    bool any = false;
    for (std::size_t p = 0; p < opt.log_partitions; ++p) any |= static_cast<bool>(t[p]);
    if (any) cdp::PartitionedLog::release_table(pool, t, opt.log_partitions, 1 - cv(), max_pages);
  }
  dir->load();
  pm::store(&R.restart_count,
            R.restart_count + 1);  // line 7, first: lock bits of earlier runs become void (base.h)
  {
    pm::CategoryScope cat(pm::Category::node);
    pm::persist(&R.restart_count, 8);
  }
  // The list validate_open walked, and the max keys it read: lines 2-5 above change only the
  // other version's.
  auto t0 = std::chrono::steady_clock::now();
  gp_b.store(cdp::recovered_snapshot(base_ctx(), std::move(list.leaves), std::move(list.max), cv(),
                                     R.base_count[cv()]));
  recovery_times.index = cdp::seconds_since(t0);
  merge_thresh.store(threshold(R.base_count[cv()]));
  t0 = std::chrono::steady_clock::now();
  // Line 6, in parallel: each worker replays whole partitions (a key's records are all in
  // one partition, in order); the log of version gv first, then the newer one if live.
  cdp::Cpbt* older = new_cpbt(cv());
  cdp::Cpbt* newer = two ? new_cpbt(1 - cv()) : nullptr;
  workers->run(opt.log_partitions, recovery_workers(), [&](std::size_t p) {
    older->log.replay_partition(p, [&](u64 k, u64 v) { older->replayed(k, v); });
    if (newer) newer->log.replay_partition(p, [&](u64 k, u64 v) { newer->replayed(k, v); });
  });
  recovery_times.replay = cdp::seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  {
    auto in_use = older->log.pages();
    if (newer) {
      auto more = newer->log.pages();
      in_use.insert(in_use.end(), more.begin(), more.end());
    }
    pages->sweep({in_use.begin(), in_use.end()}, list.pages);
  }
  recovery_times.sweep = cdp::seconds_since(t0);
  if (newer) {
    // The merge of the older log did not flip: run it again now, to the end, with the newer
    // log's entries laid over it (as a retry after pool_full: they cancel what they remove).
    gp_m.store(older);
    gp_f.store(newer);
    merge_state.store(cdp::kMerging);
    merge_task(true);
  } else {
    gp_f.store(older);
  }
}

}  // namespace dptree
