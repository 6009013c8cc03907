// uTree's coordinated concurrency control under the shared stress fixture
// (tests/fixtures/stress_fixture.h): more threads than cores on one shared key space, small
// array leaves so that many leaf boundaries exist, where a list link is shared by the writers
// of two leaves (lock-free CAS, put-del conflicts) and array leaves split while other threads
// read. Runs under ThreadSanitizer too (label concurrency).
#include <gtest/gtest.h>

#include "baselines/stats_watch.h"
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

}  // namespace
}  // namespace dptree::testing
