// PACTree through the generic fixtures (generic_peer_fixture.h: model runs with reopens, bad
// input, crash images in 64-byte and 8-byte units, crashes in recovery; tests/strings/ runs the
// string form) and its own cases: a search layer that lags the data layer (anchors not yet
// inserted are found by walking right, and a reopen inserts them), and the two forms kept
// apart in a pool.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "baselines/generic_peer_fixture.h"
#include "baselines/pactree/pactree_index.h"
#include "baselines/trie_strings.h"
#include "dptree/error.h"
#include "fixtures/model_fixture.h"
#include "fixtures/named_stats.h"

namespace dptree::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Index, GenericPeer, ::testing::Values("pactree"), IndexParamName());

TEST(PacTree, RegisteredConcurrentWithAStringForm) {
  pm::set_mode(pm::Mode::dram);
  const auto& info = find_index("pactree");
  EXPECT_TRUE(info.persistent);
  EXPECT_TRUE(info.concurrent);
  ASSERT_TRUE(info.create_string);
}

// Splits hand their anchors to the background updater; before drain() some may be missing
// from the search layer, and every key must still be found. After a close (the updater
// finishes its queue) and a reopen, check() finds every anchor in the search layer.
TEST(PacTree, LaggingSearchLayerStillFindsEveryKey) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(32 << 20);
  auto idx = make_index("pactree", pool.get(), {});
  std::map<Key, Value> model;
  std::mt19937_64 rng(9);
  for (int i = 0; i < 20000; ++i) {
    Key k = rng();
    idx->upsert(k, i);
    model[k] = i;
    if (i % 97 == 0) {
      ASSERT_EQ(idx->lookup(k), std::optional<Value>(i));
    }
  }
  for (const auto& [k, v] : model) ASSERT_EQ(idx->lookup(k), std::optional<Value>(v));
  idx->drain();
  auto r = idx->check();
  ASSERT_TRUE(r.ok) << r.problems[0];
  EXPECT_EQ(NamedStats(r.facts)["anchors_not_in_search_layer"], 0);
  EXPECT_GT(NamedStats(idx->stats().extra)["splits"], 300);
  idx.reset();
  idx = make_index("pactree", pool.get(), {});
  expect_same_contents(*idx, model, "after reopening");
}

TEST(PacTree, RefusesTheOtherForm) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  open_strings("pactree", pool.get())->upsert("a", 1);
  try {
    make_index("pactree", pool.get(), {});
    ADD_FAILURE() << "a string pool opened with integer keys";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::wrong_index);
  }
  auto s = open_strings("pactree", pool.get());
  EXPECT_THROW(s->upsert("", 1), Error);
  EXPECT_THROW(s->upsert(std::string(kStringKeyMaxBytes + 1, 'k'), 1), Error);
}

}  // namespace
}  // namespace dptree::testing
