// ROART's concurrency (lock-free readers, one writer at a time, slots reused only after the
// readers that may hold them have left) under the shared stress fixture: more threads than
// cores on one shared key space, leaf arrays splitting and running empty while other threads
// look up and scan; and the concurrent crash fixture. Runs under ThreadSanitizer too (label
// concurrency).
#include <gtest/gtest.h>

#include "baselines/roart/roart.h"
#include "baselines/stats_watch.h"
#include "fixtures/concurrent_crash_fixture.h"
#include "fixtures/stress_fixture.h"

namespace dptree::testing {
namespace {

TEST(RoartConcurrency, SharedKeysWithSplitsAndScans) {
  StatsWatch splits{"array_splits"};
  expect_stress_with_scans(peer_stress("roart", 1, 3000), {&splits});
}

// Removes empty leaf arrays and nodes while readers walk through them.
TEST(RoartConcurrency, RemoveHeavyAcrossLeafArrays) {
  expect_remove_heavy(peer_stress("roart", 2, 3000));
}

TEST(RoartConcurrency, CrashWhileThreadsWrite) {
  ConcurrentCrashConfig c;
  c.index = "roart";
  c.phase = [] { return std::string(roart_current_phase()); };
  c.ops_per_thread = 800;
  auto r = run_concurrent_crash(c);
  std::printf("images %zu, %zu mid-run, %zu in recovery, %zu continued\n", r.images,
              r.mid_run_images, r.recovery_images, r.continued_images);
  EXPECT_GE(r.images, 400u);
  EXPECT_GE(r.mid_run_images, 100u);
  EXPECT_GT(r.continued_images, 0u);
  EXPECT_GT(r.per_phase["publish"], 0u);
}

}  // namespace
}  // namespace dptree::testing
