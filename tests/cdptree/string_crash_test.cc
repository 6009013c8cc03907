// The concurrent DPTree over string keys under the crash simulator (the generic fixture over
// the mixed string key space, fixtures/key_kinds.h), one workload thread with inline merges
// so that every capture is on it: a capture at every fence and one in 8 flushes, 64-byte and
// 8-byte units, recoveries crashed at their events, recovered images that keep working.
// Every image passes check() (leaf key bytes reached exactly once, no leaked block, every
// shard's log replays to its entries) and holds every acknowledged write. Asserts captures in
// every phase of the string form's merge (the Front turned Middle with two logs live, the leaf
// merge of each partition of 2 leaves: slots and next-version metadata of leaves merged in
// place, leaves split, their linking, the partitions reconnected, flip,
// garbage collection, log release) and in recovery; the partitions run on the workload thread
// (merge_threads=1: the capture hook is not thread-safe; the concurrent crash test captures
// them on merge workers). The second test merges in parts of 5 entries: each part a merge
// cycle whose leftover entries move to the Front's log before its flip. The others run keys
// of 40 to 160 bytes (key pages), of up to 8 bytes and of 9 to 16 bytes (slots that hold
// their keys whole and name no record).
// DPTREE_CRASH_SCALE multiplies the workload.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "dptree/testing/phases.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/merge_part_limit.h"

namespace dptree::testing {
namespace {

class CDPTreeStringCrash : public ::testing::TestWithParam<SeedUnit> {};

// The phase, and inside the leaf merge its step ("merge_range/slots"; a recovery or a run the
// simulator starts inside a step has phases of its own).
std::string phase_and_step() {
  const CDPTreePhase ph = cdptree_current_phase();
  const std::string p = to_string(ph), step = string_merge_step();
  return step.empty() || ph != CDPTreePhase::merge_range ? p : p + "/" + step;
}

StringCrashConfig small_run(const SeedUnit& su, std::size_t ops,
                            std::function<std::string()> phase) {
  auto c = crash_config<StringKeys>("cdptree", su, std::move(phase));
  c.options = {{"leaf_capacity", "16"},   {"log_partitions", "2"},     {"log_page_size", "2048"},
               {"merge_ratio", "0.1"},    {"min_merge_records", "16"}, {"background_merge", "0"},
               {"recovery_threads", "1"}, {"merge_threads", "1"},      {"psize", "2"}};
  c.pool_bytes = 512u << 10;
  c.ops = ops;
  c.key_space = 160;
  c.recovery_crash_one_in = 100;
  c.continue_one_in = 120;
  return c;
}

TEST_P(CDPTreeStringCrash, EveryImageRecoversWithAcknowledgedOps) {
  auto c = small_run(GetParam(), 260, phase_and_step);
  c.recovery_crash_one_in = 20;  // a recovery writes only after a crash inside a merge
  auto r = expect_crashes_everywhere(
      c, {"log_append", "merge_start", "merge_range/slots", "merge_range/meta", "merge_range/split",
          "flush", "reconnect", "version_flip", "garbage_collection", "log_release", "recovery"});
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["merges"], 5);
  EXPECT_GT(r.extra["merge_wait_max_ms"], 0) << "a write waits for the merge it runs inline";
  EXPECT_GT(r.extra["merge_partitions"], r.extra["merges"]);
  EXPECT_GT(r.extra["leaves_merged_in_place"], 5);
}

// A recovery the simulator runs inside a part is not part of it. One unit (8-byte, the one
// that tears most), to keep the run short.
TEST(CDPTreeStringCrashInParts, MergingInPartsEveryImageRecovers) {
  const MergePartLimit limit(5);
  auto c = small_run({12, pm::Unit::word8}, 240, [] {
    const CDPTreePhase ph = cdptree_current_phase();
    std::string p = to_string(ph);
    return dptree_string_merge_in_part() && ph != CDPTreePhase::recovery ? p + "/part" : p;
  });
  auto r = expect_crashes_everywhere(
      c, {"log_append/part", "merge_start/part", "merge_range/part", "flush/part", "reconnect/part",
          "version_flip/part", "garbage_collection/part", "log_release/part", "recovery"});
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["merge_parts"], 10);
}

// Keys of 40 to 160 bytes only (every entry names its record in a key page), a small key space
// with many removes and updates: merges flag the Middle's pages their new entries name as key
// pages when they release its logs, hand each shard's last one to the Front's shard to go on
// in, and free key pages whose last entry they removed. Captures
// in each of those phases and in recovery; every image passes check() (each named page kept
// and counted exactly, none leaked) and holds every acknowledged write.
TEST_P(CDPTreeStringCrash, KeyPagesKeptAndFreedAtEveryImage) {
  auto c = small_run({GetParam().seed + 20, GetParam().unit}, 260, phase_and_step);
  c.key_space = 32;
  c.pool_bytes = 1u << 20;
  c.recovery_crash_one_in = 10;  // a recovery writes only after a crash inside a merge
  auto r = run_string_crash(c, long_string_key_space(c.key_space));
  ASSERT_FALSE(HasFailure());
  print_images(r);
  expect_crashed_in({"log_append", "merge_range/slots", "merge_range/meta", "version_flip",
                     "garbage_collection", "log_release", "key_page_release", "recovery"},
                    r.per_phase);
  EXPECT_GT(r.recovery_images, 0u);
  EXPECT_GT(r.extra["key_pages_freed"], 0);
  EXPECT_GT(r.extra["key_pages"], 0);
  // Shards went on in the last key pages of the logs before theirs (their marks and links
  // captured at every fence, in log_append).
  EXPECT_GT(r.extra["log_pages_inherited"], 0);
}

// A run over keys whose slots name no record (`keys`, 64 of them), the seed offset by `seed`:
// captures in the leaf merge's steps, the flip, the log release and recovery; no key page kept.
void expect_no_key_pages_at_every_image(const SeedUnit& p, std::uint64_t seed,
                                        const StringKeys& keys) {
  auto c = small_run({p.seed + seed, p.unit}, 260, phase_and_step);
  c.key_space = keys.keys->size();
  c.recovery_crash_one_in = 10;
  auto r = run_string_crash(c, keys);
  ASSERT_FALSE(::testing::Test::HasFailure());
  print_images(r);
  expect_crashed_in({"log_append", "merge_range/slots", "merge_range/meta", "merge_range/split",
                     "version_flip", "garbage_collection", "log_release", "recovery"},
                    r.per_phase);
  EXPECT_GT(r.recovery_images, 0u);
  EXPECT_GT(r.extra["leaves_merged_in_place"], 5);
  EXPECT_EQ(r.extra["key_pages"], 0);
}

// Keys of 1 to 8 bytes only (many sharing their prefix word and differing in length alone): each
// slot holds its key whole and names no record, so the Middle's logs are released whole and no
// key page is kept. Captures in the leaf merge's steps, the flip, the log release and recovery.
TEST_P(CDPTreeStringCrash, ShortKeysNeedNoKeyPagesAtEveryImage) {
  expect_no_key_pages_at_every_image(GetParam(), 30, short_string_key_space(64));
}

// Keys of 9 to 16 bytes only, sharing their first 8 bytes, many equal but for trailing zero
// bytes: each slot holds its key whole (bytes 8..15 in its meta word, its length in its
// fingerprint) and names no record, so the Middle's logs are released whole and no key page is
// kept. Captures in the leaf merge's steps, the flip, the log release and recovery.
TEST_P(CDPTreeStringCrash, SlotKeysNeedNoKeyPagesAtEveryImage) {
  expect_no_key_pages_at_every_image(GetParam(), 40, slot_string_key_space(64));
}

INSTANTIATE_TEST_SUITE_P(Units, CDPTreeStringCrash,
                         ::testing::Values(SeedUnit{1, pm::Unit::line64},
                                           SeedUnit{2, pm::Unit::word8}),
                         seed_unit_name);

}  // namespace
}  // namespace dptree::testing
