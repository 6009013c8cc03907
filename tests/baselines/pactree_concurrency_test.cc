// PACTree's concurrency (lock-free readers, writers locking one data node, a background
// updater inserting split anchors into the search layer) under the shared stress fixture.
// concurrent_crash_test crashes it while threads write. Runs under ThreadSanitizer too (label
// concurrency).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "baselines/pactree/pactree_index.h"
#include "fixtures/stats_watch.h"
#include "fixtures/stress_fixture.h"

namespace dptree::testing {
namespace {

TEST(PacTreeConcurrency, SharedKeysWithSplitsAndScans) {
  StatsWatch splits{"splits"};
  expect_stress_with_scans(peer_stress("pactree", 1, 40000), {&splits});
}

TEST(PacTreeConcurrency, RemoveHeavy) {
  expect_remove_heavy(peer_stress("pactree", 2, 3000));
}

}  // namespace
}  // namespace dptree::testing
