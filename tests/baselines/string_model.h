// A model test for the string form of a trie index (ROART, PACTree): random inserts, updates,
// upserts, removes, lookups and scans over keys of mixed lengths that are prefixes of each
// other, against std::map, with check() and a reopen (recovery) after every round.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "dptree/string_index.h"

namespace dptree::testing {

inline std::unique_ptr<StringIndex> open_strings(const std::string& index, pm::Pool* pool,
                                                 unsigned threads = 0) {
  IndexConfig c;
  c.pool = pool;
  c.threads = threads;
  return find_index(index).create_string(c);
}

inline void expect_string_check_ok(const StringIndex& idx, const std::string& where) {
  auto r = idx.check();
  EXPECT_TRUE(r.ok) << where << ": " << (r.problems.empty() ? "" : r.problems[0]);
}

// Keys over a small alphabet (0x00, 0x01, 'a', 0xFF) in the lengths that matter (1, 2, 3, 8,
// 9, 16, 63, 64, 65, 1024), their prefixes and their last-byte variants.
inline std::vector<std::string> mixed_keys(std::mt19937_64& rng, std::size_t n) {
  const char alphabet[] = {'\0', '\1', 'a', '\xff'};
  const std::size_t lengths[] = {1, 8, 9, 63, 64, 65, 1024, 2, 3, 16};
  std::vector<std::string> keys;
  while (keys.size() < n) {
    std::string k(lengths[rng() % 10], 'a');
    for (char& c : k) c = alphabet[rng() % (rng() % 5 == 0 ? 4 : 2)];
    keys.push_back(k);
    keys.push_back(k.substr(0, 1 + rng() % k.size()));
    std::string v = k;
    v.back() = alphabet[rng() % 4];
    keys.push_back(v);
  }
  return keys;
}

inline void expect_scans_like(const StringIndex& idx, const std::map<std::string, Value>& model,
                              const std::vector<std::string>& keys, std::mt19937_64& rng) {
  for (int i = 0; i < 100; ++i) {
    std::string start = keys[rng() % keys.size()];
    if (i % 3 == 0) start += '\0';
    std::size_t count = 1 + rng() % 80;
    std::vector<StringKV> out;
    idx.scan(start, count, out);
    auto it = model.lower_bound(start);
    std::size_t want = 0;
    for (auto j = it; j != model.end() && want < count; ++j) ++want;
    ASSERT_EQ(out.size(), want) << "scan of " << count;
    for (const auto& kv : out) {
      ASSERT_EQ(kv.first, it->first);
      ASSERT_EQ(kv.second, it->second);
      ++it;
    }
  }
}

// One random operation on key k, checked against the model.
inline void string_op(StringIndex& idx, std::map<std::string, Value>& model, const std::string& k,
                      Value v, unsigned op) {
  switch (op % 5) {
    case 0:
      ASSERT_EQ(idx.insert(k, v), !model.contains(k));
      model.try_emplace(k, v);
      break;
    case 1:
      ASSERT_EQ(idx.update(k, v), model.contains(k));
      if (model.contains(k)) model[k] = v;
      break;
    case 2:
      ASSERT_EQ(idx.remove(k), model.erase(k) == 1);
      break;
    default:
      idx.upsert(k, v);
      model[k] = v;
  }
}

inline void run_string_model(const std::string& index, std::uint64_t seed, unsigned threads = 0) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(64 << 20);
  auto idx = open_strings(index, pool.get(), threads);
  std::map<std::string, Value> model;
  std::mt19937_64 rng(seed);
  auto keys = mixed_keys(rng, 3000);
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 6000; ++i) {
      string_op(*idx, model, keys[rng() % keys.size()], rng(), static_cast<unsigned>(rng()));
      ASSERT_FALSE(::testing::Test::HasFailure()) << "round " << round << " op " << i;
    }
    for (const auto& k : keys) {
      auto it = model.find(k);
      ASSERT_EQ(idx->lookup(k), it == model.end() ? std::nullopt : std::optional(it->second))
          << "key of " << k.size() << " bytes, round " << round;
    }
    expect_scans_like(*idx, model, keys, rng);
    expect_string_check_ok(*idx, "round " + std::to_string(round));
    ASSERT_EQ(idx->stats().records, model.size());
    idx.reset();
    idx = open_strings(index, pool.get(), threads);  // reopen: recovery walks and rebuilds
  }
  for (const auto& [k, v] : std::map<std::string, Value>(model)) ASSERT_TRUE(idx->remove(k));
  EXPECT_EQ(idx->stats().records, 0u);
  expect_string_check_ok(*idx, "after removing everything");
}

}  // namespace dptree::testing
