// For the stress and crash tests: a watch that records, from the fixture's `during` thread,
// the first and the last value of one IndexStats::extra figure seen while the workers ran
// (the fixtures' own figures come from the reopened index). How much of it a watch sees
// depends on scheduling: the peers print it; the DPTree tests assert only that a figure
// moved at all (merges ran, deletes took the in-place path). Also the peers' shared stress
// runs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#include "dptree/index.h"
#include "fixtures/stress_fixture.h"

namespace dptree::testing {

struct StatsWatch {
  std::string figure;
  std::atomic<double> first{-1}, last{-1};  // -1: never seen
  void see(const IndexStats& s) {
    for (const auto& [k, v] : s.extra)
      if (k == figure) {
        double none = -1;
        first.compare_exchange_strong(none, v);
        last = v;
      }
  }
  void operator()(Index& idx) { see(idx.stats()); }
};

// A fixture's `during`: one stats() read seen by every watch, then `pause`.
inline std::function<void(Index&)> watch_during(
    std::initializer_list<StatsWatch*> watches,
    std::chrono::milliseconds pause = std::chrono::milliseconds(0)) {
  return [ws = std::vector<StatsWatch*>(watches), pause](Index& idx) {
    IndexStats s = idx.stats();
    for (StatsWatch* w : ws) w->see(s);
    if (pause.count()) std::this_thread::sleep_for(pause);
  };
}

// A peer's stress run: more threads than cores, 12000 operations each on `key_space` keys.
inline StressConfig peer_stress(const std::string& index, std::uint64_t seed,
                                std::uint64_t key_space) {
  StressConfig c;
  c.index = index;
  c.pool_bytes = 16u << 20;
  c.threads = 4;
  c.ops_per_thread = 12000;
  c.key_space = key_space;
  c.seed = seed;
  return c;
}

// Runs `c` watching `watches`: no failures, scans raced with the writes; prints what the
// watches saw (a diagnostic).
inline void expect_stress_with_scans(StressConfig c, std::initializer_list<StatsWatch*> watches) {
  c.during = watch_during(watches);
  auto r = run_stress(c);
  EXPECT_EQ(r.failures, 0u);
  EXPECT_GT(r.scans, 1000u);
  for (const StatsWatch* w : watches)
    std::printf("%s seen while running: %.0f -> %.0f\n", w->figure.c_str(), w->first.load(),
                w->last.load());
}

// Many removes and inserts over a smaller key space, so leaves run empty and refill: no
// failures, and the writes happened.
inline void expect_remove_heavy(StressConfig c) {
  c.key_space = 1500;
  c.upsert_pct = 15;
  c.insert_pct = 25;
  c.update_pct = 5;
  c.remove_pct = 35;
  c.scan_pct = 10;
  auto r = run_stress(c);
  EXPECT_EQ(r.failures, 0u);
  EXPECT_GT(r.writes, 10000u);
}

}  // namespace dptree::testing
