// The concurrent DPTree under the shared crash fixture, single-threaded: merges run inline on
// the writer (background_merge=0, one merge worker), so every capture happens on the one
// thread while its state is quiet; captures in 64-byte and 8-byte units, in every phase
// (log append and page allocation, merge start, range merge, flush, flip, GC, log release,
// §3.4 in-place update and delete, recovery). A quarter of the operations are removes, and
// with a small Front most hit keys only in the base tree: deletes in place, whose images
// must show the delete all-or-nothing, every earlier one kept (also across the lazy
// metadata rebuild and log replay after the restart), and merges that drop the tombstones.
// A second run raises the merge trigger so each partition's log grows to several 1 KiB pages
// of 30 records before a merge (replay and release cross page links); a third runs each merge
// in steps between the writes (merge_steps); then a merge on the background merge worker,
// crashed at every one of its events.
// DPTREE_CRASH_SCALE multiplies the workload.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "dptree/cdptree.h"
#include "dptree/pm/persist.h"
#include "dptree/testing/phases.h"
#include "fixtures/crash_fixture.h"

namespace dptree::testing {
namespace {

std::map<std::string, std::string> small() {
  return {{"leaf_capacity", "8"},    {"log_partitions", "2"},     {"log_page_size", "1024"},
          {"merge_ratio", "0.5"},    {"min_merge_records", "16"}, {"psize", "2"},
          {"background_merge", "0"}, {"merge_threads", "1"},      {"recovery_threads", "1"}};
}

class CDPTreeCrash : public ::testing::TestWithParam<SeedUnit> {};

TEST_P(CDPTreeCrash, EveryImageRecoversWithAcknowledgedOps) {
  auto c = crash_config("cdptree", GetParam(),
                        [] { return std::string(to_string(cdptree_current_phase())); });
  c.options = small();
  c.ops = 500;
  c.key_space = 200;
  // A continued image merges every few operations (hundreds of events each): 1 in 400 keeps
  // the run within its time.
  c.continue_one_in = 400;
  expect_crashes_everywhere(
      c, {"log_append", "log_page", "merge_start", "merge_range", "flush", "version_flip",
          "garbage_collection", "log_release", "inplace_update", "inplace_delete", "recovery"});
}

// With the trigger at 16 records a merge starts as soon as each partition has its first page
// (a page counts as 30 records when it is allocated). At 180 a merge starts when the sixth
// page is allocated: replay, release and the freelists see logs of several pages.
TEST_P(CDPTreeCrash, LogsOfSeveralPages) {
  auto c = crash_config("cdptree", GetParam(),
                        [] { return std::string(to_string(cdptree_current_phase())); });
  c.options = small();
  c.options["min_merge_records"] = "180";
  c.ops = 900;
  c.key_space = 300;
  double most_pages = 0;
  c.after_op = [&](const Index& idx) {
    most_pages = std::max(most_pages, NamedStats(idx.stats().extra)["log_pages"]);
  };
  expect_crashes_everywhere(c, {"log_append", "log_page", "merge_range", "flush", "version_flip",
                                "garbage_collection", "log_release", "recovery"});
  // Two partitions: 5 pages put 3 in one partition's log.
  EXPECT_GE(most_pages, 5.0) << "the logs must reach several pages before a merge";
}

// merge_steps: each merge runs a partition at a time between the writes. Images come from
// every step and from the writes made while a merge is half done (two logs live, the Middle
// partly merged): those are labelled apart and must be among the captures.
TEST_P(CDPTreeCrash, MergesInSteps) {
  bool mid_merge = false;
  auto c = crash_config("cdptree", GetParam(), [&] {
    const CDPTreePhase p = cdptree_current_phase();
    if (p == CDPTreePhase::merge_start) mid_merge = true;
    if (p == CDPTreePhase::log_release || p == CDPTreePhase::recovery) mid_merge = false;
    if (p == CDPTreePhase::log_append && mid_merge) return std::string("log_append_mid_merge");
    return std::string(to_string(p));
  });
  c.options = small();
  c.options["merge_steps"] = "1";
  c.ops = 500;
  c.key_space = 200;
  c.continue_one_in = 400;
  expect_crashes_everywhere(
      c, {"log_append", "log_append_mid_merge", "merge_start", "merge_range", "flush",
          "version_flip", "garbage_collection", "log_release", "recovery"});
}

INSTANTIATE_TEST_SUITE_P(Images, CDPTreeCrash,
                         ::testing::Values(SeedUnit{1, pm::Unit::line64},
                                           SeedUnit{2, pm::Unit::word8}),
                         seed_unit_name);

// split=thirds: a leaf that must split is rewritten with the next leaf of its partition
// (PSize 4 here, so most leaves have one). The same workload and phases as above; captures
// inside merges that rewrote a pair are counted from the merge's start (the merges run on
// this thread, and its count of pair splits only grows) and asserted in each phase from the
// partition merge to the collection of the replaced leaves.
class CDPTreeCrashThirds : public ::testing::TestWithParam<SeedUnit> {};

TEST_P(CDPTreeCrashThirds, EveryImageRecoversWithAcknowledgedOps) {
  std::size_t pairs_at_start = 0;
  std::map<std::string, std::size_t> in_pair_merges;
  auto c = crash_config("cdptree", GetParam(), [&] {
    const CDPTreePhase p = cdptree_current_phase();
    const std::size_t n = dptree_merge_pair_splits();
    if (p == CDPTreePhase::merge_start) pairs_at_start = n;
    if (n > pairs_at_start &&
        (p == CDPTreePhase::merge_range || p == CDPTreePhase::flush ||
         p == CDPTreePhase::version_flip || p == CDPTreePhase::garbage_collection))
      ++in_pair_merges[to_string(p)];
    return std::string(to_string(p));
  });
  c.options = small();
  c.options["split"] = "thirds";
  c.options["psize"] = "4";
  c.ops = 500;
  c.key_space = 200;
  c.continue_one_in = 400;
  const std::size_t pairs_before = dptree_pair_splits_total();
  expect_crashes_everywhere(c, {"log_append", "merge_start", "merge_range", "flush", "version_flip",
                                "garbage_collection", "recovery"});
  EXPECT_GT(dptree_pair_splits_total(), pairs_before) << "no leaf split with its neighbour";
  for (const char* p : {"merge_range", "flush", "version_flip", "garbage_collection"})
    EXPECT_GT(in_pair_merges[p], 0u) << "no crash captured in " << p << " of a pair split merge";
}

INSTANTIATE_TEST_SUITE_P(Images, CDPTreeCrashThirds,
                         ::testing::Values(SeedUnit{3, pm::Unit::line64},
                                           SeedUnit{4, pm::Unit::word8}),
                         seed_unit_name);

// A merge on the background merge worker (background_merge=1; merge_threads=1, so one pool
// thread runs the whole merge and its events come in one order): while the writer waits,
// the merge is crashed at each of its flush and fence events, every image opened and
// checked against the writes, all acknowledged before the merge started. Three merges per
// unit: the first builds the base tree, the later ones merge into it (splits, removes).
class CDPTreeMergeWorkerCrash : public ::testing::TestWithParam<pm::Unit> {};

TEST_P(CDPTreeMergeWorkerCrash, EveryEventOfABackgroundMerge) {
  const pm::Unit unit = GetParam();
  struct ModeScope {
    ModeScope() { pm::set_mode(pm::Mode::sim); }
    ~ModeScope() { pm::set_mode(pm::Mode::dram); }
  } mode;
  auto opts = small();
  opts["background_merge"] = "1";
  opts["min_merge_records"] = "100000";  // only the merges started below
  {
    auto pool = pm::Pool::create_in_memory(1u << 20);
    auto tree = CDPTree::create(*pool, CDPTreeOptions::from_map(opts));
    std::map<Key, Value> model;
    std::mt19937_64 rng(unit == pm::Unit::word8 ? 7 : 5);
    std::size_t images = 0, worker_images = 0;
    const auto writer = std::this_thread::get_id();
    for (int merge = 0; merge < 3 && !HasFailure(); ++merge) {
      for (int i = 0; i < 120; ++i) {
        Key k = rng() % 250;
        if (merge > 0 && rng() % 4 == 0) {
          tree->remove(k);
          model.erase(k);
        } else {
          tree->upsert(k, rng() % 1000000);
          model[k] = tree->lookup(k).value();
        }
      }
      pool->sim()->set_hook([&](const pm::Event& e) {
        if (HasFailure()) return;
        ++images;
        worker_images += std::this_thread::get_id() != writer;
        const std::string where =
            "unit " + std::string(unit == pm::Unit::word8 ? "word8" : "line64") + ", merge " +
            std::to_string(merge) + ", event " + std::to_string(e.seq) + " (" +
            to_string(cdptree_current_phase()) + ")";
        guard(where, [&] {
          auto img = e.sim->capture(
              pm::CaptureOptions{e.seq * 7919 + images, (images % 3) * 0.5, 0.5, unit});
          auto p2 = pm::Pool::open_image(std::move(img));
          auto idx = recover_or_fail("cdptree", *p2, opts, where);
          if (!idx) return;
          expect_check_ok(*idx, where);
          std::vector<KV> got;
          idx->scan(0, model.size() + 10, got);
          const std::map<Key, Value> image(got.begin(), got.end());
          EXPECT_EQ(image, model) << where;
        });
      });
      tree->merge(false);  // starts the merge on the worker and returns
      tree->wait_for_merge();
      pool->sim()->set_hook(nullptr);
    }
    ASSERT_FALSE(HasFailure());
    std::printf("%zu images of 3 background merges, %zu raised by the merge worker\n", images,
                worker_images);
    EXPECT_EQ(tree->stats().merges, 3u);
    EXPECT_GT(worker_images, 100u) << "the merges must run on the worker and be crashed there";
  }
}

INSTANTIATE_TEST_SUITE_P(Units, CDPTreeMergeWorkerCrash,
                         ::testing::Values(pm::Unit::line64, pm::Unit::word8), [](const auto& i) {
                           return std::string(i.param == pm::Unit::word8 ? "word8" : "line64");
                         });

}  // namespace
}  // namespace dptree::testing
