// FPTree with several threads (its lock fallback path): writers on disjoint key sets and a
// scanning reader at once, small leaves so that splits race with leaf operations; the result
// must equal what each writer did, and check() must pass. Run under ThreadSanitizer too.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "dptree/pm/persist.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

TEST(FPTreeConcurrency, DisjointWritersWithScanningReader) {
  ASSERT_TRUE(find_index("fptree").concurrent);
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(16u << 20);
  auto idx = make_index("fptree", pool.get(), {{"leaf_capacity", "8"}});
  constexpr unsigned kWriters = 3;
  constexpr Key kPerWriter = 3000;
  std::vector<std::map<Key, Value>> want(kWriters);
  std::atomic<bool> done{false};
  std::atomic<std::size_t> scans{0}, bad_scans{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kWriters; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      auto& m = want[t];
      for (Key i = 0; i < kPerWriter; ++i) {
        Key k = i * kWriters + t;  // writer t owns the keys equal to t modulo kWriters
        Value v = rng() % 1000000;
        switch (rng() % 4) {
          case 0:
            if (idx->insert(k, v) != !m.count(k)) ADD_FAILURE() << "insert " << k;
            m.emplace(k, v);
            break;
          case 1:
            if (idx->remove(k) != m.count(k)) ADD_FAILURE() << "remove " << k;
            m.erase(k);
            break;
          default:
            idx->upsert(k, v);
            m[k] = v;
        }
        Key probe = (rng() % (i + 1)) * kWriters + t;
        auto got = idx->lookup(probe);
        auto it = m.find(probe);
        if (got != (it == m.end() ? std::nullopt : std::optional<Value>(it->second)))
          ADD_FAILURE() << "lookup " << probe;
      }
    });
  threads.emplace_back([&] {
    std::mt19937_64 rng(99);
    while (!done.load()) {
      std::vector<KV> out;
      idx->scan(rng() % (kPerWriter * kWriters), 40, out);
      for (std::size_t i = 1; i < out.size(); ++i)
        if (out[i].first <= out[i - 1].first) ++bad_scans;
      ++scans;
    }
  });
  for (unsigned t = 0; t < kWriters; ++t) threads[t].join();
  done = true;
  threads.back().join();
  EXPECT_EQ(bad_scans.load(), 0u) << "a scan was not strictly ascending";
  EXPECT_GT(scans.load(), 0u);
  std::map<Key, Value> all;
  for (auto& m : want) all.insert(m.begin(), m.end());
  expect_same_contents(*idx, all, "after the threads");
  expect_check_ok(*idx, "after the threads");
  EXPECT_GT(idx->stats().extra[0].second, 100) << "leaves: splits raced with leaf operations";
}

}  // namespace
}  // namespace dptree::testing
