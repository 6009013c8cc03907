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

// Small leaves over 1500 keys, checked every 1000 operations.
ModelConfig many_merges(std::uint64_t seed, std::size_t ops, const char* split) {
  ModelConfig c;
  c.index = "dptree";
  c.options = kSmall;
  c.options["split"] = split;
  c.seed = seed;
  c.ops = ops;
  c.key_space = 1500;
  c.check_every = 1000;
  return c;
}

TEST_P(DPTreeModel, SmallLeavesManyMerges) {
  auto r = run_model(many_merges(GetParam(), 60000, "rebuild"));
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["merges"], 100) << "merges happened many times";
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

TEST_P(DPTreeModel, ShrinkToEmptyAndGrowAgain) {
  // Mostly removes over a small key space: leaves empty out and are consolidated away.
  ModelConfig c;
  c.index = "dptree";
  c.options = kSmall;
  c.seed = GetParam() + 100;
  c.ops = 15000;
  c.key_space = 200;
  c.remove_weight = 45;
  c.check_every = 500;
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["consolidations"], 20);
}

TEST_P(DPTreeModel, ReopenedOftenLazyRebuild) {
  ModelConfig c;
  c.index = "dptree";
  c.options = kSmall;
  c.seed = GetParam() + 200;
  c.ops = 12000;
  c.key_space = 800;
  c.check_every = 400;
  c.reopen_every = 700;
  auto r = run_model(c);
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
  ModelConfig c;
  c.index = "dptree";
  c.options = kSmall;
  for (auto& [k, v] : std::get<0>(GetParam()).extra) c.options[k] = v;
  c.seed = std::get<1>(GetParam()) + 300;
  c.ops = 12000;
  c.key_space = 800;
  c.check_every = 1000;
  c.reopen_every = 5000;  // the stats below count from the last reopen (ops 10000-12000)
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["merges"], 3);
  EXPECT_GT(r.extra["leaves_freed"], 3);
}

INSTANTIATE_TEST_SUITE_P(
    Options, DPTreeModelVariant,
    ::testing::Combine(::testing::Values(Variant{"split_keep_last", {{"split", "keep_last"}}},
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

// The default options (352-slot leaves: the sixteen-slot block probe, keep_last splits) with
// enough keys for leaves to split and merges to keep the old leaf.
TEST(DPTreeModelDefaults, DefaultLeavesSplitAndKeep) {
  ModelConfig c;
  c.index = "dptree";
  c.seed = 9;
  c.ops = 40000;
  c.key_space = 20000;
  c.check_every = 10000;
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
