// DPTree under the crash simulator through the generic crash fixture (tests/fixtures/):
// captures at every fence and at random flushes, in 64-byte and 8-byte atomicity, inside
// every merge phase and inside recovery. DPTREE_CRASH_SCALE multiplies the workload.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "dptree/dptree.h"
#include "dptree/testing/phases.h"
#include "fixtures/crash_fixture.h"

namespace dptree::testing {
namespace {

struct Param {
  std::uint64_t seed;
  pm::Unit unit;
  const char* split;  // Algorithm 2 (rebuild), keep_last or thirds: each in both units
};

class DPTreeCrash : public ::testing::TestWithParam<Param> {};

// Small leaves and a large R: merges of every kind within a few thousand operations.
std::string phase_label();

CrashConfig small_config(std::uint64_t seed, pm::Unit unit, std::size_t ops,
                         std::uint64_t key_space) {
  CrashConfig c;
  c.index = "dptree";
  c.options = {{"leaf_capacity", "8"},
               {"merge_ratio", "0.5"},
               {"min_merge_records", "16"},
               {"log_page_size", "1024"}};
  c.pool_bytes = 1u << 20;
  c.seed = seed;
  c.unit = unit;
  c.ops = ops;
  c.key_space = key_space;
  c.phase = phase_label;
  return c;
}

// The phase, with "/kept_split" when the merge running has kept an old leaf in a split
// (split=keep_last), "/pair_split" when it has rewritten a leaf with its neighbour
// (split=thirds): captures inside such merges are counted apart. Only merge phases: a
// recovery or write run inside a capture sees the outer merge's count.
std::string phase_label() {
  auto p = dptree_current_phase();
  std::string s = to_string(p);
  bool merging = p != DPTreePhase::idle && p != DPTreePhase::log_append &&
                 p != DPTreePhase::recovery && p != DPTreePhase::merge_start;
  if (merging && dptree_merge_kept_splits()) return s + "/kept_split";
  if (merging && dptree_merge_pair_splits()) return s + "/pair_split";
  return s;
}

// Captures of phase p, with or without a kept or pair split.
std::size_t in_phase(const CrashResult& r, const std::string& p) {
  std::size_t n = 0;
  for (auto& [k, c] : r.per_phase)
    if (k == p || k == p + "/kept_split" || k == p + "/pair_split") n += c;
  return n;
}

// The split mode's own captures: inside merges that kept a leaf (keep_last) or rewrote a pair
// (thirds), in every phase from the leaves' writes to the collection of the old ones; none
// of the other kind.
void expect_split_captures(const CrashResult& r, const std::string& split) {
  for (const char* p : {"upsert_merge", "flush", "version_flip", "garbage_collection"})
    for (const char* kind : {"keep_last", "thirds"}) {
      const std::string key =
          std::string(p) + (std::string(kind) == "keep_last" ? "/kept_split" : "/pair_split");
      auto it = r.per_phase.find(key);
      const std::size_t n = it == r.per_phase.end() ? 0 : it->second;
      if (split == kind)
        EXPECT_GT(n, 0u) << "no crash captured in phase " << p << " of a merge with a " << kind
                         << " split";
      else
        EXPECT_EQ(n, 0u) << key;
    }
}

TEST_P(DPTreeCrash, EveryImageRecoversWithAcknowledgedOps) {
  auto c = small_config(GetParam().seed, GetParam().unit, 4000, 250);
  c.options["split"] = GetParam().split;
  auto r = run_crash(c);
  ASSERT_FALSE(HasFailure());
  print_images(r);
  expect_crashed_in({"log_append", "merge_start", "upsert_merge", "delete_merge", "consolidation",
                     "flush", "version_flip", "garbage_collection", "recovery"},
                    [&](const std::string& p) { return in_phase(r, p); });
  // split=keep_last keeps old leaves, split=thirds rewrites pairs: crashes while version nv
  // is being built and written back, at the flip that publishes it, and while the leaves it
  // replaced are freed.
  expect_split_captures(r, GetParam().split);
  if (std::string(GetParam().split) == "thirds") {
    // Both ways of a pair split ran: keeping an old leaf, and rewriting one.
    EXPECT_GT(r.extra["pair_leaves_kept"], 0.0);
    EXPECT_LT(r.extra["pair_leaves_kept"], 2 * r.extra["pair_splits"]);
  }
  EXPECT_GT(r.recovery_images, 0u);
  EXPECT_GT(r.continued_images, 0u);
  EXPECT_GE(r.images, 6250u);  // 10 cases: at least 50,000 images in all
}

// DPTree at its default leaf size: 352 slots, a multiple of 16, so every lookup and merge
// takes the sixteen-slot probe (base_leaf.cc) that the 8-slot leaves above never reach, and
// a leaf's bitmap spans two lines; R and the merge trigger are the defaults too (a merge per
// 352 buffered writes). 1 KiB log pages keep the images small. Enough keys for several
// leaves, so merges split them; both split modes, both units.
class DPTreeCrashDefaultLeaf : public ::testing::TestWithParam<Param> {};

TEST_P(DPTreeCrashDefaultLeaf, EveryImageRecoversWithAcknowledgedOps) {
  ASSERT_EQ(DPTreeOptions{}.leaf_capacity % 16, 0u) << "the default must take the 16-slot probe";
  CrashConfig c;
  c.index = "dptree";
  c.options = {{"log_page_size", "1024"}, {"split", GetParam().split}};
  c.pool_bytes = 2u << 20;
  c.seed = GetParam().seed;
  c.unit = GetParam().unit;
  c.ops = 2500;
  c.key_space = 1500;
  c.phase = phase_label;
  auto r = run_crash(c);
  ASSERT_FALSE(HasFailure());
  print_images(r);
  expect_crashed_in(
      {"log_append", "upsert_merge", "flush", "version_flip", "garbage_collection", "recovery"},
      [&](const std::string& p) { return in_phase(r, p); });
  EXPECT_GE(r.extra["leaves"], 3.0);
  EXPECT_GE(r.extra["merges"], 3.0);
  if (std::string(GetParam().split) == "thirds") {
    // Fuller leaves split less often: one split of a leaf with its neighbour at least.
    EXPECT_GE(r.extra["pair_splits"], 1.0) << "a default-size leaf must split with its neighbour";
    expect_split_captures(r, "thirds");
  } else {
    EXPECT_GE(r.extra["splits"], 2.0) << "merges must split default-size leaves";
  }
  EXPECT_GT(r.continued_images, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Images, DPTreeCrashDefaultLeaf,
    ::testing::Values(Param{21, pm::Unit::line64, "rebuild"}, Param{22, pm::Unit::word8, "rebuild"},
                      Param{21, pm::Unit::line64, "keep_last"},
                      Param{24, pm::Unit::word8, "keep_last"},
                      Param{25, pm::Unit::line64, "thirds"}, Param{26, pm::Unit::word8, "thirds"}),
    [](const auto& i) {
      return std::string(i.param.unit == pm::Unit::word8 ? "word8_" : "line64_") + i.param.split +
             "_" + std::to_string(i.param.seed);
    });

// The experiment switches under the crash simulator (fewer images: the 10 DPTreeCrash cases
// carry the 50,000): out-of-place merges with wide entries (3-line log records), fingerprint
// probing with 24-byte entries, kept splits with 40-byte entries and pair splits with 64-byte
// entries.
struct Variant {
  const char* name;
  std::map<std::string, std::string> extra;
  pm::Unit unit;
};
class DPTreeCrashVariant : public ::testing::TestWithParam<Variant> {};

TEST_P(DPTreeCrashVariant, EveryImageRecoversWithAcknowledgedOps) {
  auto c = small_config(11, GetParam().unit, 1200, 200);
  for (auto& [k, v] : GetParam().extra) c.options[k] = v;
  c.pool_bytes = 2u << 20;
  auto r = run_crash(c);
  ASSERT_FALSE(HasFailure());
  std::printf("images %zu (recovery %zu)\n", r.images, r.recovery_images);
  expect_crashed_in({"upsert_merge", "flush", "version_flip", "garbage_collection"},
                    [&](const std::string& p) { return in_phase(r, p); });
  EXPECT_GT(r.recovery_images, 0u);
}

// Torn log records: in 8-byte units a record of several words reaches PM word by word, so an
// image captured at an append's flush holds some of its words. Captures at every flush, a
// merge trigger of 200 records (most events are appends), and three entry widths: 16 bytes (a
// 3-word record, 2 per line), 40 bytes (6 words, one per line) and 104 bytes (14 words over two
// lines). Every image must replay the log up to the torn record and drop it (the in-flight write
// all-or-nothing), and appends after the recovery must invalidate it first (continued images).
struct Torn {
  const char* name;
  const char* key_bytes;
  const char* value_bytes;
};
class DPTreeCrashTornLog : public ::testing::TestWithParam<Torn> {};

TEST_P(DPTreeCrashTornLog, TornRecordsAreDroppedWhole) {
  auto c = small_config(31, pm::Unit::word8, 450, 150);
  c.options["min_merge_records"] = "200";
  c.options["key_bytes"] = GetParam().key_bytes;
  c.options["value_bytes"] = GetParam().value_bytes;
  c.pool_bytes = 2u << 20;
  c.flush_one_in = 1;
  c.continue_one_in = 40;
  auto r = run_crash(c);
  ASSERT_FALSE(HasFailure());
  print_images(r);
  // An append is a flush and a fence: both captured, so half its captures are at the flush.
  EXPECT_GE(in_phase(r, "log_append"), 1000u);
  EXPECT_GT(r.continued_images, 0u);
}

INSTANTIATE_TEST_SUITE_P(Widths, DPTreeCrashTornLog,
                         ::testing::Values(Torn{"entry_8_8", "8", "8"},
                                           Torn{"entry_24_16", "24", "16"},
                                           Torn{"entry_48_56", "48", "56"}),
                         [](const auto& i) { return std::string(i.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Options, DPTreeCrashVariant,
    ::testing::Values(
        Variant{"out_of_place_entry_56_56",
                {{"merge_mode", "out_of_place"}, {"key_bytes", "56"}, {"value_bytes", "56"}},
                pm::Unit::word8},
        Variant{"fingerprint_entry_16_8",
                {{"probe", "fingerprint"}, {"key_bytes", "16"}},
                pm::Unit::line64},
        Variant{"split_keep_last_entry_24_16",
                {{"split", "keep_last"}, {"key_bytes", "24"}, {"value_bytes", "16"}},
                pm::Unit::word8},
        Variant{"split_thirds_entry_40_24",
                {{"split", "thirds"}, {"key_bytes", "40"}, {"value_bytes", "24"}},
                pm::Unit::word8}),
    [](const auto& i) { return std::string(i.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Images, DPTreeCrash,
    ::testing::Values(Param{1, pm::Unit::line64, "rebuild"}, Param{2, pm::Unit::line64, "rebuild"},
                      Param{3, pm::Unit::line64, "keep_last"},
                      Param{4, pm::Unit::line64, "keep_last"}, Param{5, pm::Unit::word8, "rebuild"},
                      Param{6, pm::Unit::word8, "rebuild"}, Param{7, pm::Unit::word8, "keep_last"},
                      Param{8, pm::Unit::word8, "keep_last"}, Param{9, pm::Unit::line64, "thirds"},
                      Param{10, pm::Unit::word8, "thirds"}),
    [](const auto& i) {
      return std::string(i.param.unit == pm::Unit::word8 ? "word8_" : "line64_") + i.param.split +
             "_" + std::to_string(i.param.seed);
    });

}  // namespace
}  // namespace dptree::testing
