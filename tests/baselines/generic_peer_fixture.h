// The peers' shared suite through the generic fixtures (tests/fixtures/): model-based runs with
// nodes small enough that the structure grows many times (asserted), reopen (recovery rebuilds
// the volatile part), bad input, and crash simulation with at least 10,000 images per index.
// The tests are parameterized by the index's name and take what they need from its registry
// entry's plan (registry.h, TestPlan::Generic: small-node options, the figure that shows growth,
// the crash runs' length and second unit). Each binary instantiates them for its indexes
// (generic_peers_test.cc: utree and lbtree, generic_cawbt_test.cc: cawbt, whose crash run is the
// slowest, and <index>_test.cc for the others) so that each stays well within its time under
// ASan. Index-specific tests are in <index>_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>

#include "dptree/error.h"
#include "dptree/pool_check.h"
#include "dptree/registry.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"
#include "fixtures/param_name.h"

namespace dptree::testing {
namespace {

// The plan of the index `name` (its registry entry's TestPlan::generic); an index without one
// fails the test.
inline TestPlan::Generic generic_plan(const std::string& name) {
  const auto& plan = find_index(name).tests.generic;
  if (plan) return *plan;
  ADD_FAILURE() << name << ": give its registry entry a plan for this suite (TestPlan::generic)";
  return {};
}

// Instances of GenericPeer, named after their index: INSTANTIATE_TEST_SUITE_P(Index,
// GenericPeer, ::testing::Values("wort"), IndexParamName()).
class GenericPeer : public ::testing::TestWithParam<std::string> {
 protected:
  const std::string& name() const { return GetParam(); }
  TestPlan::Generic plan() const { return generic_plan(GetParam()); }
};

TEST_P(GenericPeer, ModelManySplitsAndReopens) {
  const auto p = plan();
  ASSERT_FALSE(p.grown_stat.empty()) << name() << ": its plan names no figure of growth";
  for (std::uint64_t seed : {1, 2, 3}) {
    auto c = model_config(name(), seed, 30000, 3000, 3000, 7000);
    c.options = p.options;
    auto r = run_model(c);
    ASSERT_FALSE(HasFailure()) << "seed " << seed;
    EXPECT_GT(r.extra[p.grown_stat], p.grown_min) << "the structure grew by splits";
    EXPECT_GE(r.reopens, 4u);
  }
}

TEST_P(GenericPeer, ModelMostlyRemoves) {
  for (std::uint64_t seed : {51, 52, 53}) {
    auto c = model_config(name(), seed, 15000, 400, 500, 3000);
    c.remove_weight = 45;
    run_model(c);
    ASSERT_FALSE(HasFailure()) << "seed " << seed;
  }
}

TEST_P(GenericPeer, RefusesBadInput) {
  pm::set_mode(pm::Mode::dram);
  EXPECT_FALSE(find_index(name()).description.empty());
  EXPECT_TRUE(find_index(name()).persistent);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  EXPECT_THROW(make_index(name(), nullptr, {}), Error);
  EXPECT_THROW(make_index(name(), pool.get(), {{"no_such_option", "1"}}), Error);
  // A pool whose root belongs to another index is refused, not reinterpreted.
  make_index(name() == "utree" ? "lbtree" : "utree", pool.get(), {}).reset();
  EXPECT_THROW(make_index(name(), pool.get(), {}), Error);
}

// `dptree check`'s logic (check_pool): a pool the index wrote and closed is found to hold it,
// opened with no options as the tool opens it, and passes its check with every record.
TEST_P(GenericPeer, CheckPoolFindsItAndPassesIt) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(8 << 20);
  std::set<Key> keys;
  {
    auto idx = make_index(name(), pool.get(), plan().options);
    std::mt19937_64 rng(5);
    for (Value i = 0; i < 3000; ++i) {
      const Key k = rng() % 5000;
      idx->upsert(k, i);
      keys.insert(k);
    }
  }
  const PoolCheck c = check_pool(*pool);
  EXPECT_EQ(c.index, name());
  EXPECT_FALSE(c.strings);
  EXPECT_TRUE(c.report.ok) << (c.report.problems.empty() ? "" : c.report.problems.front());
  EXPECT_EQ(c.stats.records, keys.size());
}

TEST_P(GenericPeer, CrashImagesRecoverWithAcknowledgedOps) {
  const auto p = plan();
  ASSERT_GT(p.crash_ops, 0u) << name() << ": its plan gives no crash run length";
  std::size_t images = 0, recovery = 0, continued = 0;
  for (int run = 0; run < 2; ++run) {
    CrashConfig c;
    c.index = name();
    c.options = p.options;
    c.pool_bytes = 512 << 10;
    c.seed = 100 + static_cast<std::uint64_t>(run);
    c.unit = run && p.word8 ? pm::Unit::word8 : pm::Unit::line64;
    c.ops = p.crash_ops;
    c.key_space = 300;
    c.flush_one_in = 2;
    c.recovery_crash_one_in = 40;
    auto r = run_crash(c);
    ASSERT_FALSE(HasFailure()) << "run " << run;
    images += r.images;
    recovery += r.recovery_images;
    continued += r.continued_images;
  }
  std::printf("%s crash images: %zu (%zu in recovery, %zu continued)\n", name().c_str(), images,
              recovery, continued);
  EXPECT_GE(images, 10000u);
  EXPECT_GT(continued, 0u);
}

}  // namespace
}  // namespace dptree::testing
