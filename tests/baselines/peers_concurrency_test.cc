// FAST_FAIR (lock-free search, per-node write locks) and FPTree (its lock fallback path) with
// several threads: writers on disjoint key sets and a scanning reader at once, small nodes so
// that splits race with searches and shifts; the result must equal what each writer did, and
// check() must pass. Then the shared stress fixture: every thread on one key space, every
// read checked against the writes that overlapped it, recovery checked at the end. Run under
// ThreadSanitizer too.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "dptree/pm/persist.h"
#include "fixtures/model_fixture.h"
#include "fixtures/stress_fixture.h"

namespace dptree::testing {
namespace {

struct Small {
  const char* index;
  std::map<std::string, std::string> options;  // small nodes: many splits
};
const Small kSmall[] = {{"fptree", {{"leaf_capacity", "8"}}},
                        {"fastfair", {{"node_bytes", "128"}}}};  // 3 entries per node

class PeerConcurrency : public ::testing::TestWithParam<Small> {};

TEST_P(PeerConcurrency, DisjointWritersWithScanningReader) {
  ASSERT_TRUE(find_index(GetParam().index).concurrent);
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(16u << 20);
  auto idx = make_index(GetParam().index, pool.get(), GetParam().options);
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
  EXPECT_GT(idx->stats().extra[0].second, 100) << "nodes: splits raced with node operations";
}

// Every operation kind on one shared key space: lookups meet shifts in both directions,
// in-place updates and splits of the same nodes.
TEST_P(PeerConcurrency, StressSharedKeys) {
  pm::set_mode(pm::Mode::dram);
  StressConfig c;
  c.index = GetParam().index;
  c.options = GetParam().options;
  c.threads = 4;
  c.ops_per_thread = 12000;
  c.key_space = 3000;
  c.seed = 7;
  const StressResult r = run_stress(c);
  EXPECT_EQ(r.failures, 0u);
  EXPECT_GT(r.reads, 0u);
  EXPECT_GT(r.scans, 0u);
}

// Mostly inserts into a growing key space: leaf splits cascade into inner splits and the root
// grows while other threads descend, insert into parents and scan.
TEST_P(PeerConcurrency, StressGrowingTree) {
  pm::set_mode(pm::Mode::dram);
  StressConfig c;
  c.index = GetParam().index;
  c.options = GetParam().options;
  c.threads = 4;
  c.ops_per_thread = 8000;
  c.key_space = 40000;
  c.seed = 11;
  c.upsert_pct = 30;
  c.insert_pct = 40;
  c.update_pct = 5;
  c.remove_pct = 5;
  c.scan_pct = 5;
  c.during = [](Index& i) { (void)i.lookup(12345); };
  const StressResult r = run_stress(c);
  EXPECT_EQ(r.failures, 0u);
  EXPECT_GT(r.writes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Peers, PeerConcurrency, ::testing::ValuesIn(kSmall),
                         [](const auto& p) { return std::string(p.param.index); });

}  // namespace
}  // namespace dptree::testing
