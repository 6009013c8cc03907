// Recovery of the concurrent DPTree, written once for both key forms (docs/cdptree.md "One
// merge driver"): Algorithm 4 (§2.4) with the log partitions replayed in parallel on the merge
// workers (§4.5), and two live logs when the crash came inside a merge (kTwoLogs,
// cdptree_impl.h): then the older log's merge is run again to the end by the merge driver's
// task. The form's hooks (merge_driver.h) build its base, replay its buffers and release its
// logs; the integer form's are here, the string form's in string_cdptree.cc.
#include <unordered_set>
#include <utility>

#include "cdptree/cdptree_impl.h"
#include "cdptree/phase.h"
#include "cdptree/root_tables.h"
#include "cdptree/string_cdptree.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"

namespace dptree {

namespace cdp {

template <class Form, class Buffer>
void MergeDriver<Form, Buffer>::recover() {
  const auto t0 = std::chrono::steady_clock::now();
  detail::OpenedList list = self().validate_open();
  self().recovery_times.check = seconds_since(t0);
  PhaseScope ph(CDPTreePhase::recovery);
  detail::TreeParts& t = self().parts();
  detail::Root& R = self().croot().base;
  t.dir->load();
  ensure_log_tables(t, self().croot(), self().options().log_partitions);
  self().finish_crashed_merge();  // lines 2-5
  const bool two = R.gv & kTwoLogs;
  // The base of version gv (with line 7 for the integer form). Lines 2-5 and a log release
  // change only the other version's leaves, so it is built before the release, which keeps
  // the string form's key pages that the base names.
  auto ts = std::chrono::steady_clock::now();
  self().build_base(list);
  self().recovery_times.index = seconds_since(ts);
  // Without kTwoLogs the other version's log is a released one whose release a crash
  // interrupted (the flip clears kTwoLogs before the release): finished.
  if (!two) self().finish_log_release(1 - self().cv());
  t.dir->load();
  merge_thresh.store(self().threshold(R.base_count[self().cv()]));
  // Line 6, in parallel: each worker replays whole partitions (a key's records are all in
  // one partition, in order); the log of version gv first, then the newer one if live.
  ts = std::chrono::steady_clock::now();
  std::unique_ptr<Buffer> older(self().new_front(self().cv()));
  std::unique_ptr<Buffer> newer(two ? self().new_front(1 - self().cv()) : nullptr);
  workers->run(self().options().log_partitions, recovery_workers(self().options()),
               [&](std::size_t p) {
                 self().replay(*older, p);
                 if (newer) self().replay(*newer, p);
               });
  self().recovery_times.replay = seconds_since(ts);
  ts = std::chrono::steady_clock::now();
  {
    std::unordered_set<u64> in_use;
    for (const Buffer* b : {older.get(), newer.get()})
      if (b)
        for (u64 pg : self().log_pages(*b)) in_use.insert(pg);
    self().sweep_log_pages(std::move(in_use), list);
  }
  self().recovery_times.sweep = seconds_since(ts);
  if (newer) {
    // The merge of the older log did not flip: run it again now, to the end, with the newer
    // log's entries laid over it, as a retry after pool_full: a merge parked for want of PM
    // leaves two logs live too, and the removes the Front took since then cancel the Middle's
    // inserts, so the merge that did not fit may fit now.
    gp_m.store(older.release());
    gp_f.store(newer.release());
    merge_state.store(kMerging);
    merge_task(true);
  } else {
    gp_f.store(older.release());
  }
  self().recovery_times.total = seconds_since(t0);
}

template void MergeDriver<CDPTree::Impl, Cpbt>::recover();
template void MergeDriver<StringCDPTree, StringBuffer>::recover();

}  // namespace cdp

// ------------------------------------------------------------------ the integer form's hooks

using namespace detail;  // NOLINT: the layout vocabulary

void CDPTree::Impl::finish_crashed_merge() {
  freed += detail::finish_interrupted_merge(pool, &root->base, *dir, *pending, L);
}

// The release of every partition's chain, if any is left.
void CDPTree::Impl::finish_log_release(int v) {
  LogPagePtr* t = table(v);
  bool any = false;
  for (std::size_t p = 0; p < opt.log_partitions; ++p) any |= static_cast<bool>(t[p]);
  const std::size_t max_pages = pool.size() / opt.log_page_size + 1;
  if (any) cdp::PartitionedLog::release_table(pool, t, opt.log_partitions, v, max_pages);
}

// Line 7 first: the restart count raised, so that the lock bits of earlier runs are void
// (§3.2, base.h). Then the snapshot of the list validate_open walked, with the max keys it
// read (no leaf read again).
void CDPTree::Impl::build_base(OpenedList& list) {
  Root& R = root->base;
  pm::store(&R.restart_count, R.restart_count + 1);
  {
    pm::CategoryScope cat(pm::Category::node);
    pm::persist(&R.restart_count, 8);
  }
  restarted.store(true);  // before the snapshot: see tombstone_filter
  gp_b.store(cdp::recovered_snapshot(base_ctx(), std::move(list.leaves), std::move(list.max), cv(),
                                     R.base_count[cv()]));
}

void CDPTree::Impl::replay(cdp::Cpbt& b, std::size_t p) {
  b.log.replay_partition(p, [&](u64 k, u64 v) { b.replayed(k, v); });
}

// The pages validate_open listed: the sweep reads no leaf.
void CDPTree::Impl::sweep_log_pages(std::unordered_set<u64> in_use, const OpenedList& list) {
  pages->sweep(in_use, list.pages);
}

}  // namespace dptree
