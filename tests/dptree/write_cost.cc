// Measures DPTree's PM write cost per insert (the paper's Table 1): cache lines flushed and
// fences per insert, split by log / alloc / node, for N random 8-byte-key inserts with
// 16-byte entries, in `dram` mode (counters count what the algorithm asks for in every mode).
// Also prints insert and lookup throughput and the time to reopen (recover) the tree.
//   usage: dptree_write_cost [N=1000000] [mode=dram]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "dptree/dptree.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"

using namespace dptree;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  pm::set_mode(pm::parse_mode(argc > 2 ? argv[2] : "dram"));
  auto pool = pm::Pool::create_in_memory(std::max<std::size_t>(64u << 20, n * 160));
  auto t = DPTree<8, 8>::create(*pool);
  std::mt19937_64 rng(42);
  std::vector<Key> keys(n);
  for (auto& k : keys) k = rng();
  pm::reset_counters();
  auto before = pm::counters();
  auto t0 = Clock::now();
  for (std::size_t i = 0; i < n; ++i) t->upsert(keys[i], i);
  double ins_s = std::chrono::duration<double>(Clock::now() - t0).count();
  auto d = pm::counters() - before;
  std::printf("%zu random inserts, 16-byte entries, mode %s\n", n,
              std::string(pm::to_string(pm::mode())).c_str());
  std::printf("%-6s %10s %10s\n", "", "flush/op", "fence/op");
  for (auto c : {pm::Category::log, pm::Category::alloc, pm::Category::node, pm::Category::other})
    std::printf("%-6s %10.3f %10.3f\n", std::string(pm::to_string(c)).c_str(),
                static_cast<double>(d[c].lines) / static_cast<double>(n),
                static_cast<double>(d[c].fences) / static_cast<double>(n));
  std::printf("%-6s %10.3f %10.3f\n", "total",
              static_cast<double>(d.total().lines) / static_cast<double>(n),
              static_cast<double>(d.total().fences) / static_cast<double>(n));
  auto s = t->stats();
  std::printf("merges %zu leaves %zu splits %zu consolidations %zu pm %zu B dram %zu B\n", s.merges,
              s.leaves, s.splits, s.consolidations, s.pm_bytes, s.dram_bytes);
  std::printf("insert %.3f Mops/s\n", static_cast<double>(n) / ins_s / 1e6);
  t0 = Clock::now();
  std::size_t found = 0;
  for (std::size_t i = 0; i < n; ++i) found += t->lookup(keys[(i * 7919) % n]).has_value();
  double look_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("lookup %.3f Mops/s (found %zu of %zu)\n", static_cast<double>(n) / look_s / 1e6,
              found, n);
  t.reset();
  t0 = Clock::now();
  t = DPTree<8, 8>::open(*pool);
  std::printf("recovery (open) %.3f ms, buffer entries replayed %zu\n",
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
              t->stats().buffer_entries);
  return found == n ? 0 : 1;
}
