// ROART through the generic fixtures (generic_peer_fixture.h: model runs with reopens, bad
// input, crash images in 64-byte and 8-byte units; tests/strings/ runs the string form) and its
// own cases: integer keys that share long prefixes, a node grown through every kind and
// emptied, and the two forms kept apart in a pool (roart_records_test has the floor query).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "baselines/generic_peer_fixture.h"
#include "baselines/trie_strings.h"
#include "dptree/error.h"
#include "dptree/string_index.h"
#include "fixtures/model_fixture.h"
#include "fixtures/named_stats.h"

namespace dptree::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Index, GenericPeer, ::testing::Values("roart"), IndexParamName());

TEST(Roart, RegisteredConcurrentWithAStringForm) {
  PmModeScope mode(pm::Mode::dram);
  const auto& info = find_index("roart");
  EXPECT_TRUE(info.persistent);
  EXPECT_TRUE(info.concurrent);
  ASSERT_TRUE(info.create_string);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  auto idx = make_index("roart", pool.get(), {}, 1);
  idx->upsert(~Key{0}, ~Value{0});
  idx->upsert(0, 1);
  EXPECT_EQ(idx->lookup(~Key{0}), std::optional<Value>(~Value{0}));
  EXPECT_EQ(idx->lookup(0), std::optional<Value>(1));
}

// Integer keys that share all but their last bytes, or their first ones: prefix splits and
// scans that start inside a prefix.
TEST(Roart, IntegerKeysWithLongSharedPrefixesMatchStdMap) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(16 << 20);
  auto idx = make_index("roart", pool.get(), {});
  std::map<Key, Value> model;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 6000; ++i) {
    Key k = i % 3 == 0   ? rng()
            : i % 3 == 1 ? (0xABCDEF0123ull << 24) | (rng() & 0xFFFF)
                         : Key(rng() & 0xFFF) << 52;
    Value v = rng();
    idx->upsert(k, v);
    model[k] = v;
  }
  expect_check_ok(*idx, "after inserts");
  expect_same_contents(*idx, model, "after inserts");
  idx.reset();
  idx = make_index("roart", pool.get(), {});
  expect_same_contents(*idx, model, "after reopening");
  for (int i = 0; i < 200; ++i) {
    Key start = i % 2 ? (0xABCDEF0123ull << 24) | (rng() & 0xFFFFF) : rng();
    std::vector<KV> out;
    idx->scan(start, 50, out);
    auto it = model.lower_bound(start);
    for (const auto& kv : out) {
      ASSERT_NE(it, model.end());
      ASSERT_EQ(kv, KV(it->first, it->second)) << "scan from " << start;
      ++it;
    }
    ASSERT_TRUE(out.size() == 50 || it == model.end());
  }
}

// A node made by a leaf-array split with two children grows through every kind (N4, N16,
// N48, N256) as keys with new bytes arrive; removes then empty it and it goes.
TEST(Roart, NodesGrowThroughEveryKindAndGoWhenEmptied) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(8 << 20);
  auto idx = open_strings("roart", pool.get(), 1);
  std::map<std::string, Value> model;
  auto put = [&](std::string k) {
    idx->upsert(k, k.size());
    model[k] = k.size();
  };
  for (int i = 0; i < 65; ++i) put(std::string("g") + char(i % 2) + std::to_string(i));
  for (int b = 2; b < 256; ++b) put(std::string("g") + char(b) + "x");
  EXPECT_GE(NamedStats(idx->stats().extra)["grows"], 3);
  expect_string_check_ok(*idx, "after growing");
  idx.reset();
  idx = open_strings("roart", pool.get(), 1);
  std::vector<StringKV> all;
  idx->scan(std::string(1, '\0'), 1000, all);
  ASSERT_EQ(all.size(), model.size());
  auto it = model.begin();
  for (const auto& kv : all) ASSERT_EQ(kv.first, (it++)->first);
  for (const auto& [k, v] : model) ASSERT_TRUE(idx->remove(k)) << k;
  EXPECT_EQ(idx->stats().records, 0u);
  EXPECT_EQ(NamedStats(idx->stats().extra)["nodes"], 0);
  EXPECT_EQ(NamedStats(idx->stats().extra)["leaf_arrays"], 0);
  expect_string_check_ok(*idx, "after removing everything");
}

TEST(Roart, RefusesBadStringKeysAndTheOtherForm) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  {
    auto idx = open_strings("roart", pool.get());
    EXPECT_THROW(idx->upsert("", 1), Error);
    EXPECT_THROW(idx->lookup(std::string(kStringKeyMaxBytes + 1, 'x')), Error);
    idx->upsert(std::string(kStringKeyMaxBytes, 'x'), 2);
    EXPECT_EQ(idx->lookup(std::string(kStringKeyMaxBytes, 'x')), std::optional<Value>(2));
  }
  try {
    make_index("roart", pool.get(), {});
    ADD_FAILURE() << "a string pool opened with integer keys";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::wrong_index);
    EXPECT_NE(std::string(e.what()).find("--key-type string"), std::string::npos) << e.what();
  }
  auto ints = pm::Pool::create_in_memory(1 << 20);
  make_index("roart", ints.get(), {})->upsert(1, 1);
  EXPECT_THROW(open_strings("roart", ints.get()), Error);
}

}  // namespace
}  // namespace dptree::testing
