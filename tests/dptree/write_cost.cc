// Measures DPTree's PM write cost per insert (the paper's Table 1): cache lines flushed and
// fences per insert, split by log / alloc / node, for N random 8-byte-key inserts in `dram`
// mode (counters count what the algorithm asks for in every mode). Options as for
// `dptree bench --option k=v` (e.g. merge_mode=out_of_place value_bytes=56 for Figure 8d).
// Also prints insert and lookup throughput and the time to reopen (recover) the tree.
//   usage: dptree_write_cost [N=1000000] [mode=dram] [key=value ...]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "dptree/dptree.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"

using namespace dptree;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  pm::set_mode(pm::parse_mode(argc > 2 ? argv[2] : "dram"));
  std::map<std::string, std::string> opts;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    auto eq = a.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "option '%s': give key=value\n", argv[i]);
      return 2;
    }
    opts[a.substr(0, eq)] = a.substr(eq + 1);
  }
  auto o = DPTreeOptions::from_map(opts);  // validates, with a clear error
  std::size_t entry = (o.key_bytes ? o.key_bytes : 8) + (o.value_bytes ? o.value_bytes : 8);
  auto pool = pm::Pool::create_in_memory(std::max<std::size_t>(64u << 20, n * (10 * entry + 96)));
  IndexConfig cfg;
  cfg.pool = pool.get();
  cfg.options = opts;
  auto t = find_index("dptree").create(cfg);
  std::mt19937_64 rng(42);
  std::vector<Key> keys(n);
  for (auto& k : keys) k = rng();
  pm::reset_counters();
  auto before = pm::counters();
  auto t0 = Clock::now();
  for (std::size_t i = 0; i < n; ++i) t->upsert(keys[i], i);
  double ins_s = std::chrono::duration<double>(Clock::now() - t0).count();
  auto d = pm::counters() - before;
  std::printf("%zu random inserts, %zu-byte entries, mode %s", n, entry,
              std::string(pm::to_string(pm::mode())).c_str());
  for (auto& [k, v] : opts) std::printf(" %s=%s", k.c_str(), v.c_str());
  std::printf("\n%-6s %10s %10s\n", "", "flush/op", "fence/op");
  for (auto c : {pm::Category::log, pm::Category::alloc, pm::Category::node, pm::Category::other})
    std::printf("%-6s %10.3f %10.3f\n", std::string(pm::to_string(c)).c_str(),
                static_cast<double>(d[c].lines) / static_cast<double>(n),
                static_cast<double>(d[c].fences) / static_cast<double>(n));
  std::printf("%-6s %10.3f %10.3f\n", "total",
              static_cast<double>(d.total().lines) / static_cast<double>(n),
              static_cast<double>(d.total().fences) / static_cast<double>(n));
  auto s = t->stats();
  for (auto& [k, v] : s.extra)
    if (k == "merges" || k == "leaves" || k == "splits" || k == "kept_splits" ||
        k == "consolidations")
      std::printf("%s %.0f ", k.c_str(), v);
  std::printf("pm %zu B dram %zu B\n", s.pm_bytes, s.dram_bytes);
  std::printf("insert %.3f Mops/s\n", static_cast<double>(n) / ins_s / 1e6);
  t0 = Clock::now();
  std::size_t found = 0;
  for (std::size_t i = 0; i < n; ++i) found += t->lookup(keys[(i * 7919) % n]).has_value();
  double look_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("lookup %.3f Mops/s (found %zu of %zu)\n", static_cast<double>(n) / look_s / 1e6,
              found, n);
  t.reset();
  t0 = Clock::now();
  t = find_index("dptree").create(cfg);
  std::printf("recovery (open) %.3f ms\n",
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  return found == n ? 0 : 1;
}
