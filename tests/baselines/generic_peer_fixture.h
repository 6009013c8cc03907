// The B+-tree peers CAWBT, uTree and LB+-Tree through the generic fixtures
// (tests/fixtures/): model-based runs with nodes small enough that the structure grows many
// times (asserted), reopen (recovery rebuilds the volatile part), bad input, and crash
// simulation with at least 10,000 images per index. The tests are parameterized by Peer;
// each binary instantiates them for its indexes (generic_peers_test.cc: utree and lbtree,
// generic_cawbt_test.cc: cawbt, whose crash run is the slowest) so that each stays well
// within its time under ASan. Index-specific tests are in <index>_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <ostream>
#include <string>

#include "dptree/error.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

struct Peer {
  std::string name;
  std::map<std::string, std::string> small;  // options for small nodes
  std::string grown;                         // IndexStats::extra that counts nodes made
  double grown_min;
  pm::Unit second_unit;   // unit of the second crash run (word8 where the index claims it)
  std::size_t crash_ops;  // per run: enough operations for 10,000 images over two runs
};
void PrintTo(const Peer& p, std::ostream* os) {
  *os << p.name;
}
// Names each instance of GenericPeer after its index.
struct PeerName {
  std::string operator()(const ::testing::TestParamInfo<Peer>& i) const { return i.param.name; }
};

class GenericPeer : public ::testing::TestWithParam<Peer> {};

TEST_P(GenericPeer, ModelManySplitsAndReopens) {
  for (std::uint64_t seed : {1, 2, 3}) {
    auto c = model_config(GetParam().name, seed, 30000, 3000, 3000, 7000);
    c.options = GetParam().small;
    auto r = run_model(c);
    ASSERT_FALSE(HasFailure()) << "seed " << seed;
    EXPECT_GT(r.extra[GetParam().grown], GetParam().grown_min) << "the structure grew by splits";
    EXPECT_GE(r.reopens, 4u);
  }
}

TEST_P(GenericPeer, ModelMostlyRemoves) {
  for (std::uint64_t seed : {51, 52, 53}) {
    auto c = model_config(GetParam().name, seed, 15000, 400, 500, 3000);
    c.remove_weight = 45;
    run_model(c);
    ASSERT_FALSE(HasFailure()) << "seed " << seed;
  }
}

TEST_P(GenericPeer, RefusesBadInput) {
  pm::set_mode(pm::Mode::dram);
  const std::string& name = GetParam().name;
  EXPECT_FALSE(find_index(name).description.empty());
  EXPECT_TRUE(find_index(name).persistent);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  EXPECT_THROW(make_index(name, nullptr, {}), Error);
  EXPECT_THROW(make_index(name, pool.get(), {{"no_such_option", "1"}}), Error);
  // A pool whose root belongs to another index is refused, not reinterpreted.
  make_index(name == "utree" ? "lbtree" : "utree", pool.get(), {}).reset();
  EXPECT_THROW(make_index(name, pool.get(), {}), Error);
}

TEST_P(GenericPeer, CrashImagesRecoverWithAcknowledgedOps) {
  std::size_t images = 0, recovery = 0, continued = 0;
  for (int run = 0; run < 2; ++run) {
    CrashConfig c;
    c.index = GetParam().name;
    c.options = GetParam().small;
    c.pool_bytes = 512 << 10;
    c.seed = 100 + static_cast<std::uint64_t>(run);
    c.unit = run ? GetParam().second_unit : pm::Unit::line64;
    c.ops = GetParam().crash_ops;
    c.key_space = 300;
    c.flush_one_in = 2;
    c.recovery_crash_one_in = 40;
    auto r = run_crash(c);
    ASSERT_FALSE(HasFailure()) << "run " << run;
    images += r.images;
    recovery += r.recovery_images;
    continued += r.continued_images;
  }
  std::printf("%s crash images: %zu (%zu in recovery, %zu continued)\n", GetParam().name.c_str(),
              images, recovery, continued);
  EXPECT_GE(images, 10000u);
  EXPECT_GT(continued, 0u);
}

}  // namespace
}  // namespace dptree::testing
