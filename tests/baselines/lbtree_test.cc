// LB+-Tree through the generic fixtures (tests/fixtures/): model-based runs (14-entry leaves,
// so splits and entry moves happen constantly), reopen (inner nodes rebuilt from the leaf
// chain), and crash simulation under the 64-byte unit its line-0 insert relies on.
#include <gtest/gtest.h>

#include <cstdio>

#include "baselines/broken_images.h"
#include "dptree/error.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

class LBTreeModel : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(LBTreeModel, RandomOpsManySplitsAndMoves) {
  ModelConfig c;
  c.index = "lbtree";
  c.seed = GetParam();
  c.ops = 30000;
  c.key_space = 3000;
  c.check_every = 3000;
  c.reopen_every = 7000;
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["leaves"], 150) << "leaves split many times";
  EXPECT_GT(r.extra["entry_moves"], 30) << "entry moving happened (counted since last open)";
  EXPECT_GE(r.reopens, 4u);
}

TEST_P(LBTreeModel, MostlyRemovesEmptyLeaves) {
  ModelConfig c;
  c.index = "lbtree";
  c.seed = GetParam() + 50;
  c.ops = 15000;
  c.key_space = 400;
  c.remove_weight = 45;
  c.check_every = 500;
  c.reopen_every = 3000;
  run_model(c);
}

INSTANTIATE_TEST_SUITE_P(Seeds, LBTreeModel, ::testing::Values(1, 2, 3));

TEST(LBTree, RefusesBadInput) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  EXPECT_THROW(make_index("lbtree", nullptr, {}), Error);
  EXPECT_THROW(make_index("lbtree", pool.get(), {{"leaf_capacity", "8"}}), Error);
  auto idx = make_index("utree", pool.get(), {});  // the pool now holds another index
  idx.reset();
  EXPECT_THROW(make_index("lbtree", pool.get(), {}), Error);
}

TEST(LBTree, CrashConsistentWith64ByteLines) {
  std::size_t images = 0, continued = 0;
  for (std::uint64_t seed : {41, 42}) {
    CrashConfig c;
    c.index = "lbtree";
    c.pool_bytes = 512 << 10;
    c.seed = seed;
    c.ops = 3200;
    c.key_space = 300;
    c.flush_one_in = 2;
    c.recovery_crash_one_in = 40;
    auto r = run_crash(c);
    ASSERT_FALSE(HasFailure());
    images += r.images;
    continued += r.continued_images;
  }
  std::printf("lbtree crash images (64-byte unit): %zu (%zu continued)\n", images, continued);
  EXPECT_GE(images, 10000u);
  EXPECT_GT(continued, 0u);
}

// The line-0 insert writes entry, fingerprint and bitmap into one line and flushes it once:
// if only 8-byte words reach PM whole, the bitmap can land without the entry.
TEST(LBTree, Line0InsertNeedsWholeLines) {
  CrashConfig c;
  c.index = "lbtree";
  c.pool_bytes = 512 << 10;
  c.seed = 43;
  c.ops = 1500;
  c.key_space = 300;
  c.unit = pm::Unit::word8;
  EXPECT_GT(count_broken_images(c), 0u) << "expected a torn line-0 insert to break an image";
}

}  // namespace
}  // namespace dptree::testing
