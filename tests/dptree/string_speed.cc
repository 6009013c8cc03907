// Not a test: DPTree's string form beside its integer form in one run. N random 8-byte
// integer keys are upserted and looked up through the integer form, then the same keys as
// 8-byte big-endian strings (the "u64be" key set) through the string form, then random keys
// of L bytes; each prints Mops/s, flushes and fences per insert and PM bytes per record.
//   usage: dptree_string_speed [N=1000000] [mode=pmem] [L=16 ...]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"

using namespace dptree;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

template <class Idx, class K>
void measure(const char* what, Idx& t, const std::vector<K>& keys) {
  const std::size_t n = keys.size();
  pm::reset_counters();
  auto before = pm::counters();
  auto t0 = Clock::now();
  for (std::size_t i = 0; i < n; ++i) t.upsert(keys[i], i);
  const double ins = seconds_since(t0);
  auto d = pm::counters() - before;
  std::size_t lines = 0, fences = 0;
  for (auto c : {pm::Category::log, pm::Category::alloc, pm::Category::node, pm::Category::other}) {
    lines += d[c].lines;
    fences += d[c].fences;
  }
  std::mt19937_64 rng(7);
  std::size_t found = 0;
  t0 = Clock::now();
  for (std::size_t i = 0; i < n; ++i) found += t.lookup(keys[rng() % n]).has_value();
  const double look = seconds_since(t0);
  const auto s = t.stats();
  std::printf(
      "%-22s insert %6.3f Mops/s  lookup %6.3f Mops/s  flush/ins %.3f  fence/ins %.3f  "
      "PM B/rec %.1f  (found %zu of %zu)\n",
      what, static_cast<double>(n) / ins / 1e6, static_cast<double>(n) / look / 1e6,
      static_cast<double>(lines) / static_cast<double>(n),
      static_cast<double>(fences) / static_cast<double>(n),
      static_cast<double>(s.pm_bytes) / static_cast<double>(s.records), found, n);
}

std::string be(std::uint64_t x) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>(x >> (56 - 8 * i));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  pm::set_mode(pm::parse_mode(argc > 2 ? argv[2] : "pmem"));
  std::mt19937_64 rng(42);
  std::vector<std::uint64_t> ints(n);
  for (auto& k : ints) k = rng();
  const std::size_t pool_bytes = std::max<std::size_t>(64u << 20, n * 200);
  const IndexInfo& info = find_index("dptree");
  {
    auto pool = pm::Pool::create_in_memory(pool_bytes);
    IndexConfig c;
    c.pool = pool.get();
    auto t = info.create(c);
    measure("u64 (integer form)", *t, ints);
  }
  std::vector<std::string> strs(n);
  for (std::size_t i = 0; i < n; ++i) strs[i] = be(ints[i]);
  {
    auto pool = pm::Pool::create_in_memory(pool_bytes);
    IndexConfig c;
    c.pool = pool.get();
    auto t = info.create_string(c);
    measure("u64be (string form)", *t, strs);
  }
  for (int a = 3; a < argc; ++a) {
    const std::size_t len = std::strtoull(argv[a], nullptr, 10);
    for (auto& s : strs) {
      s.resize(len);
      for (auto& ch : s) ch = static_cast<char>(rng());
    }
    auto pool = pm::Pool::create_in_memory(std::max(pool_bytes, n * (3 * len + 200)));
    IndexConfig c;
    c.pool = pool.get();
    auto t = info.create_string(c);
    measure(("random " + std::to_string(len) + " B (string)").c_str(), *t, strs);
  }
  return 0;
}
