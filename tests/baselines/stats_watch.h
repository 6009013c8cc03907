// For the peers' stress tests: a watch that records, from the stress fixture's `during`
// thread, the first and the last value of one IndexStats::extra figure seen while the workers
// ran (a diagnostic: how much of it a watch sees depends on scheduling, so tests print it
// rather than assert it), and the remove-heavy mix they share.
#pragma once

#include <atomic>
#include <string>

#include "dptree/index.h"
#include "fixtures/stress_fixture.h"

namespace dptree::testing {

struct StatsWatch {
  std::string figure;
  std::atomic<double> first{-1}, last{-1};
  void operator()(Index& idx) {
    for (const auto& [k, v] : idx.stats().extra)
      if (k == figure) {
        double none = -1;
        first.compare_exchange_strong(none, v);
        last = v;
      }
  }
};

// Many removes and inserts over a smaller key space: leaves run empty and refill.
inline void make_remove_heavy(StressConfig& c) {
  c.key_space = 1500;
  c.upsert_pct = 15;
  c.insert_pct = 25;
  c.update_pct = 5;
  c.remove_pct = 35;
  c.scan_pct = 10;
}

}  // namespace dptree::testing
