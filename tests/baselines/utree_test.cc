// uTree through the generic fixtures (tests/fixtures/): model-based runs with small
// array-layer leaves (many DRAM splits), reopen (array layer rebuilt from the list), and
// crash simulation in both atomicity units (every commit is one 8-byte store).
#include <gtest/gtest.h>

#include <cstdio>

#include "dptree/error.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

class UTreeModel : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(UTreeModel, RandomOpsSmallLeaves) {
  ModelConfig c;
  c.index = "utree";
  c.options = {{"leaf_slots", "16"}};
  c.seed = GetParam();
  c.ops = 30000;
  c.key_space = 3000;
  c.check_every = 3000;
  c.reopen_every = 7000;
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["array_leaves"], 80) << "the DRAM array layer split many times";
  EXPECT_GE(r.extra["array_height"], 3);
  EXPECT_GE(r.reopens, 4u);
}

TEST_P(UTreeModel, DefaultLeavesMostlyRemoves) {
  ModelConfig c;
  c.index = "utree";
  c.seed = GetParam() + 50;
  c.ops = 15000;
  c.key_space = 400;
  c.remove_weight = 45;
  c.check_every = 500;
  c.reopen_every = 3000;
  run_model(c);
}

INSTANTIATE_TEST_SUITE_P(Seeds, UTreeModel, ::testing::Values(1, 2, 3));

TEST(UTree, RefusesBadInput) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  EXPECT_THROW(make_index("utree", nullptr, {}), Error);
  EXPECT_THROW(make_index("utree", pool.get(), {{"leaf_slots", "7"}}), Error);
  EXPECT_THROW(make_index("utree", pool.get(), {{"node_bytes", "64"}}), Error);
  auto idx = make_index("cawbt", pool.get(), {});  // the pool now holds another index
  idx.reset();
  EXPECT_THROW(make_index("utree", pool.get(), {}), Error);
}

TEST(UTree, CrashConsistent) {
  std::size_t images = 0, recovery = 0, continued = 0;
  for (auto [seed, unit] : {std::pair{31, pm::Unit::line64}, std::pair{32, pm::Unit::word8}}) {
    CrashConfig c;
    c.index = "utree";
    c.options = {{"leaf_slots", "16"}};
    c.pool_bytes = 512 << 10;
    c.seed = static_cast<std::uint64_t>(seed);
    c.unit = unit;
    c.ops = 2600;
    c.key_space = 300;
    c.flush_one_in = 2;
    c.recovery_crash_one_in = 40;
    auto r = run_crash(c);
    ASSERT_FALSE(HasFailure());
    images += r.images;
    recovery += r.recovery_images;
    continued += r.continued_images;
  }
  std::printf("utree crash images: %zu (%zu in recovery, %zu continued)\n", images, recovery,
              continued);
  EXPECT_GE(images, 10000u);
  EXPECT_GT(continued, 0u);
}

}  // namespace
}  // namespace dptree::testing
