// uTree's coordinated concurrency control under the shared stress fixture
// (tests/fixtures/stress_fixture.h): more threads than cores on one shared key space, small
// array leaves so that many leaf boundaries exist, where a list link is shared by the writers
// of two leaves (lock-free CAS, put-del conflicts) and array leaves split while other threads
// read. Runs under ThreadSanitizer too (label concurrency).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "fixtures/key_kinds.h"
#include "fixtures/stats_watch.h"
#include "fixtures/stress_fixture.h"

namespace dptree::testing {
namespace {

StressConfig utree(std::uint64_t seed) {
  auto c = peer_stress("utree", seed, 3000);
  c.options = {{"leaf_slots", "16"}};
  return c;
}

TEST(UTreeConcurrency, SharedKeysWithSplitsAndScans) {
  StatsWatch leaves{"array_leaves"};
  expect_stress_with_scans(utree(1), {&leaves});
}

// Many removes and inserts over a sparse key space: leaves run empty, so an insert's
// predecessor is often several leaves to the left and being removed at the same time.
TEST(UTreeConcurrency, RemoveHeavyAcrossLeafBoundaries) {
  expect_remove_heavy(utree(2));
}

// The threads insert ascending keys drawn from one counter: all of them write the last array
// leaf, so threads wait on its lock while it splits and then hold a leaf whose upper half
// has moved to a sibling that the inner nodes may not name yet. Each key must land in the
// leaf whose range holds it (check()) and be found.
TEST(UTreeConcurrency, InsertsFollowASplitLeafToItsSibling) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(64 << 20);
  auto idx = make_index("utree", pool.get(), {{"leaf_slots", "16"}}, 4);
  constexpr Key kKeys = 80000;
  std::atomic<Key> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (Key k; (k = next.fetch_add(1)) < kKeys;) idx->insert(k, k * 3);
    });
  for (auto& th : threads) th.join();
  const auto r = idx->check();
  ASSERT_TRUE(r.ok) << r.problems.front();
  for (Key k = 0; k < kKeys; ++k) ASSERT_EQ(idx->lookup(k), k * 3) << k;
}

}  // namespace
}  // namespace dptree::testing
