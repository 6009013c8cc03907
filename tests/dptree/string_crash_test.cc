// DPTree over string keys under the crash simulator (the generic fixture over the mixed string
// key space, fixtures/key_kinds.h) with small leaves, so that merges of every kind happen: a
// capture at every fence and one in 8 flushes, 64-byte and 8-byte units, recoveries crashed at
// their events, recovered images that keep working. Every image passes check() (leaf key
// bytes reached exactly once, no leaked block, the log decodes) and holds every acknowledged
// write. Asserts captures in every phase of the string form's merge (in its leaf merge: the
// slots of a leaf merged in place, its next version's metadata, the leaves of a split) and in
// recovery, over mixed keys, over long keys only (key pages), over keys of up to 8 bytes only
// and over keys of 9 to 16 bytes only (slots that hold their keys whole and name no record).
// DPTREE_CRASH_SCALE multiplies the workload.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "dptree/testing/phases.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/merge_part_limit.h"
#include "string_keys.h"

namespace dptree::testing {
namespace {

class DPTreeStringCrash : public ::testing::TestWithParam<SeedUnit> {};

// The phase, and inside the leaf merge its step ("upsert_merge/slots"; a recovery or a run
// the simulator starts inside a step has phases of its own).
std::string phase_and_step() {
  const DPTreePhase ph = dptree_current_phase();
  const std::string p = to_string(ph), step = string_merge_step();
  return step.empty() || ph != DPTreePhase::upsert_merge ? p : p + "/" + step;
}

// The run both tests make: small leaves in a 2 MiB pool, 160 keys, a recovery crashed in 150
// images and a run continued from one in 80.
StringCrashConfig small_run(const SeedUnit& p, std::size_t ops,
                            std::function<std::string()> phase) {
  auto c = crash_config<StringKeys>("dptree", p, std::move(phase));
  c.options = small_string_options();
  c.pool_bytes = 2u << 20;
  c.ops = ops;
  c.key_space = 160;
  c.recovery_crash_one_in = 150;
  c.continue_one_in = 80;
  return c;
}

TEST_P(DPTreeStringCrash, EveryImageRecoversWithAcknowledgedOps) {
  auto c = small_run(GetParam(), 350, phase_and_step);
  auto r = expect_crashes_everywhere(
      c, {"log_append", "merge_start", "upsert_merge/slots", "upsert_merge/meta",
          "upsert_merge/split", "flush", "version_flip", "garbage_collection", "recovery"});
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["merges"], 5);
  EXPECT_GT(r.extra["leaves_merged_in_place"], 5);
}

// The same with the buffer merged in parts of 5 entries (the path a merge that does not fit
// takes): each part is a merge cycle that logs the entries it leaves in the buffer to the new
// version's log before its flip. Captures inside parts: in that log append, the leaves, the
// flip and the collection.
TEST_P(DPTreeStringCrash, MergingInPartsEveryImageRecovers) {
  const MergePartLimit limit(5);
  // A recovery the simulator runs inside a part's flush is not part of it.
  auto c = small_run({GetParam().seed + 10, GetParam().unit}, 160, [] {
    const DPTreePhase ph = dptree_current_phase();
    std::string p = to_string(ph);
    return dptree_string_merge_in_part() && ph != DPTreePhase::recovery ? p + "/part" : p;
  });
  auto r = expect_crashes_everywhere(
      c, {"log_append/part", "merge_start/part", "upsert_merge/part", "flush/part",
          "version_flip/part", "garbage_collection/part", "recovery"});
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["merge_parts"], 10);
}

// Keys of 40 to 160 bytes only: every entry names its key's record in a key page (a log page
// kept after its log's release). A small key space with many removes and updates makes merges
// remove pages' last entries and free them. Captures in the log append (a torn record), the
// merge, the flip, the collection with the hand-over that flags key pages, the freeing of
// unnamed key pages and recovery; every image passes check() (each named page kept and counted
// exactly, none leaked) and holds every acknowledged write.
TEST_P(DPTreeStringCrash, KeyPagesKeptAndFreedAtEveryImage) {
  auto c = small_run({GetParam().seed + 20, GetParam().unit}, 300, phase_and_step);
  c.key_space = 32;
  c.recovery_crash_one_in = 40;  // a recovery writes only after a crash inside a merge
  auto r = run_string_crash(c, long_string_key_space(c.key_space));
  ASSERT_FALSE(HasFailure());
  print_images(r);
  expect_crashed_in({"log_append", "upsert_merge/slots", "upsert_merge/meta", "version_flip",
                     "garbage_collection", "key_page_release", "recovery"},
                    r.per_phase);
  EXPECT_GT(r.recovery_images, 0u);
  EXPECT_GT(r.extra["key_pages_freed"], 0);
  EXPECT_GT(r.extra["key_pages"], 0);
}

// A run over keys whose slots name no record (`keys`, 64 of them), the seed offset by `seed`:
// captures in the leaf merge's steps, the flip, the collection and recovery; no key page kept.
void expect_no_key_pages_at_every_image(const SeedUnit& p, std::uint64_t seed,
                                        const StringKeys& keys) {
  auto c = small_run({p.seed + seed, p.unit}, 300, phase_and_step);
  c.key_space = keys.keys->size();
  c.recovery_crash_one_in = 40;
  auto r = run_string_crash(c, keys);
  ASSERT_FALSE(::testing::Test::HasFailure());
  print_images(r);
  expect_crashed_in({"log_append", "upsert_merge/slots", "upsert_merge/meta", "upsert_merge/split",
                     "version_flip", "garbage_collection", "recovery"},
                    r.per_phase);
  EXPECT_GT(r.recovery_images, 0u);
  EXPECT_GT(r.extra["leaves_merged_in_place"], 5);
  EXPECT_EQ(r.extra["key_pages"], 0);
}

// Keys of 1 to 8 bytes only (many sharing their prefix word and differing in length alone): each
// slot holds its key whole and names no record, so each merge's collection releases the log
// whole and no key page is kept. Captures in the leaf merge's steps, the flip, the collection
// and recovery; every image passes check() (no page leaked, none counted) and holds every
// acknowledged write.
TEST_P(DPTreeStringCrash, ShortKeysNeedNoKeyPagesAtEveryImage) {
  expect_no_key_pages_at_every_image(GetParam(), 30, short_string_key_space(64));
}

// Keys of 9 to 16 bytes only, sharing their first 8 bytes, many equal but for trailing zero
// bytes: each slot holds its key whole (bytes 8..15 in its meta word, its length in its
// fingerprint) and names no record, so each merge's collection releases the log whole and no
// key page is kept. Captures in the leaf merge's steps, the flip, the collection and recovery;
// every image passes check() (no page leaked, none counted) and holds every acknowledged write.
TEST_P(DPTreeStringCrash, SlotKeysNeedNoKeyPagesAtEveryImage) {
  expect_no_key_pages_at_every_image(GetParam(), 40, slot_string_key_space(64));
}

INSTANTIATE_TEST_SUITE_P(Units, DPTreeStringCrash,
                         ::testing::Values(SeedUnit{1, pm::Unit::line64},
                                           SeedUnit{2, pm::Unit::word8}),
                         seed_unit_name);

}  // namespace
}  // namespace dptree::testing
