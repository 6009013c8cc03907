// The concurrent DPTree under the shared concurrent crash fixture: three writer threads and
// background parallel merges (several merge workers, small partitions) run together on a
// pool in `sim` mode; images are captured on whichever thread flushes or fences — a writer
// appending to the log, a merge worker inside a partition merge or flush, the merge thread at
// the flip, GC or log release — and every acknowledged write must survive, nothing may leak,
// check() must pass. A fifth of the operations are removes; between merges they take the
// §3.4 path (tombstone bit written in place in the base tree): the second test raises the
// merge trigger so that writers often find no merge running. The capture copies
// the working image while other threads write it (a real power failure does the same), a read that
// races by design: ASan build only, not TSan. The third test runs the string form (string
// keys of mixed lengths, key_kinds.h) under the same writers and background merges. Each test
// runs rounds until it has checked 2,000 images captured while its threads ran
// (tests/fixtures/concurrent_crash_floors.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "dptree/cdptree.h"
#include "dptree/testing/phases.h"
#include "fixtures/concurrent_crash_fixture.h"
#include "fixtures/merge_part_limit.h"
#include "fixtures/stats_watch.h"

namespace dptree::testing {
namespace {

// Three writers; small leaves and 4 log partitions; background merges on `merge_threads`
// workers, triggered once the Front holds `min_merge_records` records.
template <class Keys = IntKeys>
BasicConcurrentCrashConfig<Keys> config(const std::string& min_merge_records,
                                        const std::string& merge_threads) {
  BasicConcurrentCrashConfig<Keys> c;
  c.index = "cdptree";
  c.options = {{"leaf_capacity", "8"},
               {"log_partitions", "4"},
               {"log_page_size", "1024"},
               {"merge_ratio", "0.3"},
               {"min_merge_records", min_merge_records},
               {"psize", "1"},
               {"merge_threads", merge_threads},
               {"recovery_threads", "2"}};
  c.pool_bytes = 2u << 20;
  c.threads = 3;
  c.phase = [] { return std::string(to_string(cdptree_current_phase())); };
  // The merge thread and workers wait for a capture instead of skipping their events, so
  // every phase of a merge is captured, not only what the writers (who raise most events)
  // do. Short rounds (20-40 images each) run until the floor; one crashed recovery (it raises
  // up to hundreds of events, each an image) and one continued run per test.
  c.wait_for_capture = true;
  c.recovery_crash_max = 1;
  c.continue_max = 1;
  set_floor(c);
  return c;
}

// Asserted are images while several threads were busy, in log appends, in a recovery and
// inside a merge; with `every_phase`, in each phase of a merge. (The string form's merges
// raise so few events in some phases that 2,000 images hold two or three of them.)
// (By value: operator[] reads a phase never captured as 0.)
void expect_appends_and_merges_crashed(ConcurrentCrashResult r, bool every_phase) {
  print_images(r);
  EXPECT_GT(r.mid_run_images, 0u);
  EXPECT_GT(r.per_phase["log_append"] + r.per_phase["log_page"], 0u);
  EXPECT_GT(r.recovery_images, 0u);
  std::size_t in_merge = 0;
  for (const char* p : {"merge_start", "merge_range", "flush", "version_flip", "garbage_collection",
                        "log_release"}) {
    in_merge += r.per_phase[p];
    if (every_phase) {
      EXPECT_GT(r.per_phase[p], 0u) << "no crash captured in " << p;
    }
  }
  EXPECT_GT(in_merge, 0u) << "no crash captured inside a merge";
}

TEST(CDPTreeConcurrentCrash, WritersAndParallelMerges) {
  auto c = config("24", "3");
  c.ops_per_thread = 1500;
  c.recovery_crash_one_in = 40;
  auto r = run_concurrent_crash(c);
  ASSERT_FALSE(HasFailure());
  expect_appends_and_merges_crashed(r, true);
}

// split=thirds under the same writers and background merges (crash consistency with the option
// on), on partitions of three leaves (PSize 1 would leave no leaf a neighbour to split with).
TEST(CDPTreeConcurrentCrash, WritersAndParallelMergesSplittingInThirds) {
  auto c = config("24", "3");
  c.options["split"] = "thirds";
  c.options["psize"] = "3";
  c.ops_per_thread = 1500;
  c.recovery_crash_one_in = 40;
  const std::size_t pairs_before = dptree_pair_splits_total();
  auto r = run_concurrent_crash(c);
  ASSERT_FALSE(HasFailure());
  expect_appends_and_merges_crashed(r, true);
  // Not asserted: in some processes 200 rounds of these merges made no pair split (a larger
  // key space made it rarer), for a reason not yet found. The single-threaded cdptree crash
  // cases with split=thirds assert pair splits in every merge phase.
  std::printf("pair splits: %zu\n", dptree_pair_splits_total() - pairs_before);
}

// The string form: its keys in log records that leaf slots name, its leaves merged in place by
// the merge workers, so an image must also keep every key page counted exactly (check()).
// The string form's configuration: log pages that hold a 1,024-byte key's record, and room
// for the log of most of the run (in 2 MiB, one run in a few dozen found the pool full when
// the writers went on while a merge worker checked an image).
StringConcurrentCrashConfig string_config() {
  auto c = config<StringKeys>("24", "3");
  c.options["log_page_size"] = "2048";
  c.pool_bytes = 4u << 20;
  return c;
}

TEST(CDPTreeConcurrentCrash, StringKeysWritersAndParallelMerges) {
  auto c = string_config();
  c.key_space = 300;
  c.ops_per_thread = 2000;
  c.recovery_crash_one_in = 10;
  c.continue_one_in = 10;
  // The key space holds every shape that breaks string-key code.
  const auto keys = StringKeys::space(c.key_space, c.seed);
  const KeyShapes shapes = shapes_of({keys.keys->begin(), keys.keys->end()});
  ASSERT_TRUE(shapes.has_lengths({1, 8, 9, 63, 64, 65, 1024}));
  // Keys a slot holds whole (9..16 bytes: its meta word and fingerprint) among them.
  ASSERT_TRUE(shapes.has_lengths({9, 10, 11, 12, 13, 14, 15, 16}));
  ASSERT_GT(shapes.prefixes, 0u);
  ASSERT_GT(shapes.last_byte_twins, 0u);
  auto r = run_string_concurrent_crash(c);
  ASSERT_FALSE(HasFailure());
  expect_appends_and_merges_crashed(r, false);
  EXPECT_GT(r.continued_images, 0u);
}

// The string form merging in parts of 16 entries (the path a merge that does not fit the pool
// takes): each merge cycle merges the leaves of its first 16 entries on the merge workers and
// moves the rest into the Front, under the writers' shard locks, before its flip. Images inside
// a part ("/part"): in a worker's leaf writes, in the move's log appends, and at its flip or
// collection (the single-threaded crash test, cdptree_string_crash_test, captures every phase
// of a part; here 500 images keep the test short).
TEST(CDPTreeConcurrentCrash, StringKeysMergingInParts) {
  const MergePartLimit limit(16);
  auto c = string_config();
  c.key_space = 300;
  c.ops_per_thread = 800;
  c.continue_max = 0;  // a continued run takes most of the time; the other tests make one
  c.phase = [] {
    const CDPTreePhase ph = cdptree_current_phase();
    std::string p = to_string(ph);
    return dptree_string_merge_in_part() && ph != CDPTreePhase::recovery ? p + "/part" : p;
  };
  std::atomic<bool> parts{false};  // a live index reported a merge in parts
  c.during = [&](StringIndex& idx) {
    for (const auto& [k, v] : idx.stats().extra)
      if (k == "merge_parts" && v > 0) parts.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  // Which cycles move entries the Front lacks follows the scheduling: rounds go on until the
  // images hold one in each phase asserted below.
  c.phases_reached = [](const std::map<std::string, std::size_t>& p) {
    auto n = [&](const char* ph) { return p.contains(ph) ? p.at(ph) : std::size_t{0}; };
    return n("merge_range/part") > 0 && n("log_append/part") > 0 &&
           n("version_flip/part") + n("garbage_collection/part") > 0;
  };
  auto r = run_string_concurrent_crash(c);
  ASSERT_FALSE(HasFailure());
  print_images(r);
  EXPECT_TRUE(parts.load()) << "merges must go in parts";
  EXPECT_GT(r.per_phase["merge_range/part"], 0u);
  EXPECT_GT(r.per_phase["log_append/part"], 0u) << "no crash captured moving entries to the Front";
  EXPECT_GT(r.per_phase["version_flip/part"] + r.per_phase["garbage_collection/part"], 0u);
}

// Shared keys (the fixture's durable linearizability check, tests/baselines/
// shared_keys_crash_test.cc for every index's integer form): the string form, its keys out of
// line in the log and the leaves, with background merges on three workers.
TEST(CDPTreeConcurrentCrash, StringKeysSharedByEveryWriter) {
  auto c = string_config();
  c.shared_keys = true;
  c.key_space = 200;
  c.ops_per_thread = 600;
  auto r = run_string_concurrent_crash(c);
  ASSERT_FALSE(HasFailure());
  expect_appends_and_merges_crashed(r, false);
}

// Each merge worker fences its own flushes before the flip publishes what they wrote back (a
// fence orders only its own thread's flushes). One writer triggers merges in its own thread,
// with three merge workers and partitions of one leaf, so no other thread flushes during a
// flip but the workers; at every fence of the flip, no line a worker flushed may still be
// unfenced. Unlike a crash image, which must land in the gap by chance, this fails at the
// first merge in which a worker ran a partition without its fence. `write(i)` is the writer's
// i-th upsert, into the integer or the string form on `pool`.
void expect_workers_fenced_at_flips(pm::Pool& pool, const std::function<void(std::size_t)>& write) {
  const auto writer = std::this_thread::get_id();
  std::atomic<std::size_t> worker_flushes{0}, flips{0}, unfenced{0};
  pool.sim()->set_hook([&](const pm::Event& e) {
    const CDPTreePhase p = cdptree_current_phase();
    if (e.kind == pm::EventKind::flush &&
        (p == CDPTreePhase::flush || p == CDPTreePhase::merge_range) &&
        std::this_thread::get_id() != writer)
      ++worker_flushes;
    if (e.kind == pm::EventKind::fence && p == CDPTreePhase::version_flip) {
      ++flips;
      unfenced += e.sim->pending_lines_of_other_threads();
    }
  });
  for (std::size_t i = 0; i < 6000; ++i) write(i);
  pool.sim()->set_hook(nullptr);
  EXPECT_GT(flips.load(), 10u) << "merges must flip";
  EXPECT_GT(worker_flushes.load(), 0u) << "the workers must write back some partitions";
  EXPECT_EQ(unfenced.load(), 0u) << "lines a merge worker flushed were unfenced at the flip";
}

IndexOptions fence_test_options() {
  return {{"leaf_capacity", "8"},      {"log_partitions", "4"}, {"log_page_size", "2048"},
          {"min_merge_records", "64"}, {"psize", "1"},          {"merge_threads", "3"},
          {"background_merge", "0"}};
}

TEST(CDPTreeMergeWorkers, EveryWorkerFencesBeforeTheFlip) {
  PmModeScope mode(pm::Mode::sim);
  auto pool = pm::Pool::create_in_memory(4u << 20);
  auto opt = fence_test_options();
  opt["log_page_size"] = "1024";
  auto idx = make_index("cdptree", pool.get(), opt, 1);
  expect_workers_fenced_at_flips(*pool,
                                 [&](std::size_t k) { idx->upsert(k * 2654435761u % 1000003, k); });
}

// The same for the string form, whose workers merge into leaves in place, write new leaves of
// splits and link them (§3.3 over string leaves).
TEST(CDPTreeMergeWorkers, EveryStringWorkerFencesBeforeTheFlip) {
  PmModeScope mode(pm::Mode::sim);
  auto pool = pm::Pool::create_in_memory(8u << 20);
  auto idx = make_string_index("cdptree", pool.get(), fence_test_options(), 1);
  expect_workers_fenced_at_flips(*pool, [&](std::size_t k) {
    idx->upsert("key" + std::to_string(k * 2654435761u % 1000003), k);
  });
}

// Fewer, larger merges (a trigger of 4 log pages): removes of keys only in the base tree
// between merges are deletes in place, crashed inside their store or while other threads
// append, merge or flip; every image must keep the acknowledged deletes and drop none.
// Merges run in the writer that triggers them (background_merge=0; still on 2 merge
// workers): with background merges on a loaded machine the first merge could end after the
// writers did, leaving no base-tree key to delete in place (about 1 run in 30 at load 6).
TEST(CDPTreeConcurrentCrash, RemovesInPlaceBetweenMerges) {
  auto c = config("240", "2");
  c.options["background_merge"] = "0";
  c.ops_per_thread = 500;
  c.key_space = 300;
  StatsWatch deletes{"inplace_deletes"};  // §3.4 deletes in place of the live instance
  c.during = watch_during({&deletes}, std::chrono::milliseconds(5));
  auto r = run_concurrent_crash(c);
  ASSERT_FALSE(HasFailure());
  print_images(r);
  EXPECT_GT(deletes.last.load(), 0) << "removes must take the in-place path between merges";
  EXPECT_GT(r.per_phase["inplace_delete"], 0u) << "no crash captured inside a tombstone store";
  EXPECT_GT(r.continued_images, 0u);
}

}  // namespace
}  // namespace dptree::testing
