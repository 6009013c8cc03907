// DPTree against std::map through the generic model fixture (tests/fixtures/), with small
// leaves and a large R so merges, splits and consolidations happen many times.
#include <gtest/gtest.h>

#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

const std::map<std::string, std::string> kSmall = {{"leaf_capacity", "8"},
                                                   {"merge_ratio", "0.3"},
                                                   {"min_merge_records", "12"},
                                                   {"log_page_size", "1024"}};

class DPTreeModel : public ::testing::TestWithParam<std::uint64_t> {};

// A DPTree of small leaves (model_config's arguments but the index).
ModelConfig small(std::uint64_t seed, std::size_t ops, std::uint64_t key_space,
                  std::size_t check_every, std::size_t reopen_every) {
  ModelConfig c = model_config("dptree", seed, ops, key_space, check_every, reopen_every);
  c.options = kSmall;
  return c;
}

// Small leaves over 1500 keys, checked every 1000 operations.
ModelConfig many_merges(std::uint64_t seed, std::size_t ops, const char* split) {
  ModelConfig c = small(seed, ops, 1500, 1000, 0);
  c.options["split"] = split;
  return c;
}

TEST_P(DPTreeModel, SmallLeavesManyMerges) {
  auto r = run_model(many_merges(GetParam(), 60000, "rebuild"));
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["merges"], 100) << "merges happened many times";
  EXPECT_GT(r.extra["merge_wait_max_ms"], 0) << "a write waits for the merge it runs inline";
  EXPECT_GT(r.extra["splits"], 50);
  EXPECT_EQ(r.extra["kept_splits"], 0) << "the default split=rebuild is Algorithm 2's";
  EXPECT_GT(r.extra["consolidations"], 10);
  EXPECT_GT(r.extra["leaves_freed"], 50);
}

TEST_P(DPTreeModel, SmallLeavesManyMergesKeepLast) {
  auto r = run_model(many_merges(GetParam() + 400, 40000, "keep_last"));
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["kept_splits"], 20) << "split=keep_last keeps old leaves";
  EXPECT_LT(r.extra["kept_splits"], r.extra["splits"]) << "and falls back to Algorithm 2";
  EXPECT_GT(r.extra["consolidations"], 10);
  EXPECT_GT(r.extra["leaves_freed"], 20);
}

TEST_P(DPTreeModel, SmallLeavesManyMergesThirds) {
  auto r = run_model(many_merges(GetParam() + 500, 40000, "thirds"));
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["pair_splits"], 20) << "split=thirds splits a leaf with its neighbour";
  EXPECT_LE(r.extra["pair_splits"], r.extra["splits"]);
  EXPECT_GT(r.extra["pair_leaves_kept"], 0) << "keeping old leaves";
  EXPECT_LT(r.extra["pair_leaves_kept"], 2 * r.extra["pair_splits"]) << "or rewriting them";
  EXPECT_EQ(r.extra["kept_splits"], 0);
  EXPECT_GT(r.extra["consolidations"], 10);
  EXPECT_GT(r.extra["leaves_freed"], 20);
}

TEST_P(DPTreeModel, ShrinkToEmptyAndGrowAgain) {
  // Mostly removes over a small key space: leaves empty out and are consolidated away.
  ModelConfig c = small(GetParam() + 100, 15000, 200, 500, 0);
  c.remove_weight = 45;
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["consolidations"], 20);
}

TEST_P(DPTreeModel, ReopenedOftenLazyRebuild) {
  auto r = run_model(small(GetParam() + 200, 12000, 800, 400, 700));
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.reopens, 10u);
  EXPECT_GT(r.extra["restart_count"], 10);
  EXPECT_GT(r.extra["lazy_rebuilds"], 0);
}

INSTANTIATE_TEST_SUITE_P(Seeds, DPTreeModel, ::testing::Values(1, 2, 3, 4));

// The experiment switches (dptree_options.h) against the same model: splits that keep the
// old leaf (also with reopens), probing schemes, the out-of-place merge, wider entries; small
// sizes, two seeds each.
struct Variant {
  const char* name;
  std::map<std::string, std::string> extra;
};
class DPTreeModelVariant : public ::testing::TestWithParam<std::tuple<Variant, std::uint64_t>> {};

TEST_P(DPTreeModelVariant, SmallLeavesManyMerges) {
  // The stats below count from the last reopen (ops 10000-12000).
  ModelConfig c = small(std::get<1>(GetParam()) + 300, 12000, 800, 1000, 5000);
  for (auto& [k, v] : std::get<0>(GetParam()).extra) c.options[k] = v;
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["merges"], 3);
  EXPECT_GT(r.extra["leaves_freed"], 3);
}

INSTANTIATE_TEST_SUITE_P(
    Options, DPTreeModelVariant,
    ::testing::Combine(::testing::Values(Variant{"split_keep_last", {{"split", "keep_last"}}},
                                         Variant{"split_thirds", {{"split", "thirds"}}},
                                         Variant{"probe_linear", {{"probe", "linear"}}},
                                         Variant{"probe_fingerprint", {{"probe", "fingerprint"}}},
                                         Variant{"out_of_place", {{"merge_mode", "out_of_place"}}},
                                         Variant{"entry_24_40",
                                                 {{"key_bytes", "24"}, {"value_bytes", "40"}}},
                                         Variant{"entry_56_56_out_of_place",
                                                 {{"key_bytes", "56"},
                                                  {"value_bytes", "56"},
                                                  {"merge_mode", "out_of_place"},
                                                  {"probe", "fingerprint"}}}),
                       ::testing::Values(1, 2)),
    [](const auto& i) {
      return std::string(std::get<0>(i.param).name) + "_" + std::to_string(std::get<1>(i.param));
    });

// split=thirds at the default leaf size: pairs of 352-slot leaves rewritten as three.
TEST(DPTreeModelDefaults, DefaultLeavesSplitInThirds) {
  ModelConfig c = model_config("dptree", 10, 40000, 20000, 10000, 0);
  c.pool_bytes = 16u << 20;
  c.options["split"] = "thirds";
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["merges"], 3);
  EXPECT_GT(r.extra["pair_splits"], 5);
  EXPECT_GT(r.extra["leaves"], 20);
}

// The default options (352-slot leaves: the sixteen-slot block probe, keep_last splits) with
// enough keys for leaves to split and merges to keep the old leaf.
TEST(DPTreeModelDefaults, DefaultLeavesSplitAndKeep) {
  ModelConfig c = model_config("dptree", 9, 40000, 20000, 10000, 0);
  c.pool_bytes = 16u << 20;
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["merges"], 3);
  EXPECT_GT(r.extra["splits"], 5);
  EXPECT_GT(r.extra["kept_splits"], 5);
  EXPECT_GT(r.extra["leaves"], 20);
}

}  // namespace
}  // namespace dptree::testing
