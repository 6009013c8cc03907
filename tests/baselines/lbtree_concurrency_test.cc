// LB+-Tree's concurrency (leaf locks, optimistic leaf reads, inner nodes under the no-RTM
// reader-writer lock) under the shared stress fixture (tests/fixtures/stress_fixture.h):
// more threads than cores on one shared key space, so leaf splits, entry moves and in-place
// updates race with lookups and scans. Runs under ThreadSanitizer too (label concurrency).
#include <gtest/gtest.h>

#include "fixtures/stats_watch.h"
#include "fixtures/stress_fixture.h"

namespace dptree::testing {
namespace {

TEST(LBTreeConcurrency, SharedKeysWithSplitsAndScans) {
  StatsWatch splits{"splits"}, moves{"entry_moves"};
  expect_stress_with_scans(peer_stress("lbtree", 1, 4000), {&splits, &moves});
}

TEST(LBTreeConcurrency, RemoveHeavy) {
  expect_remove_heavy(peer_stress("lbtree", 2, 4000));
}

}  // namespace
}  // namespace dptree::testing
