// ROART's concurrency (lock-free readers; writers that lock their target, and the word's
// holder when they swing its word, and validate them; slots reused only after every traversal that
// may hold them has ended) under the shared stress fixture: more threads than cores on one shared
// key space, leaf arrays splitting and running empty while other threads look up and scan; and
// string writers splitting prefixes under a reader. concurrent_crash_test crashes it while threads
// write. Runs under ThreadSanitizer too (label concurrency).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "baselines/roart/arena_set.h"
#include "baselines/roart/roart.h"
#include "baselines/slab/slab_arena.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "dptree/string_index.h"
#include "fixtures/named_stats.h"
#include "fixtures/stats_watch.h"
#include "fixtures/stress_fixture.h"

namespace dptree::testing {
namespace {

TEST(RoartConcurrency, SharedKeysWithSplitsAndScans) {
  StatsWatch splits{"array_splits"};
  expect_stress_with_scans(peer_stress("roart", 1, 40000), {&splits});
}

// String keys that share long prefixes, so writers split prefixes, grow nodes and split
// leaf arrays under each other while a reader looks up keys no writer touches (each must be
// found every time, with its value) and scans (keys must come in order).
TEST(RoartConcurrency, StringWritersSplitPrefixesWhileAReaderLooks) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(64 << 20);
  IndexConfig cfg;
  cfg.pool = pool.get();
  auto idx = find_index("roart").create_string(cfg);
  // Each writer's keys start with its number, so the two write disjoint keys; their third
  // byte (i / 100) takes new values as i grows, so nodes grow through every kind.
  auto key = [](unsigned t, unsigned i) {
    std::string k = std::to_string(t) + "/" + char(i / 100) + "/user/" +
                    std::string(i % 7 * 3, 'p') + "/" + std::to_string(i * 2654435761u % 100000);
    return i % 5 == 0 ? k.substr(0, 3 + i % 11) : k;
  };
  for (unsigned i = 0; i < 2000; ++i) idx->upsert("stable/" + std::to_string(i), i);
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> misses{0}, disorder{0};
  std::thread reader([&] {
    for (unsigned n = 0; !stop.load(); ++n) {
      unsigned i = n % 2000;
      if (idx->lookup("stable/" + std::to_string(i)) != std::optional<Value>(i)) ++misses;
      if (n % 50 == 0) {
        std::vector<StringKV> out;
        idx->scan(key(n % 2, n), 40, out);
        for (std::size_t j = 1; j < out.size(); ++j) disorder += !(out[j - 1].first < out[j].first);
      }
    }
  });
  std::vector<std::map<std::string, Value>> models(2);
  std::vector<std::thread> writers;
  for (unsigned t = 0; t < 2; ++t)
    writers.emplace_back([&, t] {
      for (unsigned i = 0; i < 6000; ++i) {
        std::string k = key(t, i % 3000);
        if (i % 4 == 3) {
          idx->remove(k);
          models[t].erase(k);
        } else {
          idx->upsert(k, i);
          models[t][k] = i;
        }
      }
    });
  for (auto& w : writers) w.join();
  stop = true;
  reader.join();
  EXPECT_EQ(misses.load(), 0u);
  EXPECT_EQ(disorder.load(), 0u);
  for (unsigned t = 0; t < 2; ++t)
    for (const auto& [k, v] : models[t]) ASSERT_EQ(idx->lookup(k), std::optional<Value>(v)) << k;
  auto r = idx->check();
  EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
  EXPECT_EQ(idx->stats().records, 2000 + models[0].size() + models[1].size());
  NamedStats st(idx->stats().extra);
  std::printf("array splits %.0f, node grows %.0f, prefix splits %.0f\n", st["array_splits"],
              st["grows"], st["prefix_splits"]);
  EXPECT_GE(st["array_splits"], 200);
  EXPECT_GE(st["grows"], 2);
  EXPECT_GE(st["prefix_splits"], 3);
}

// ROART's per-thread runs (arena_set.h): more threads than thread slots take slots at once.
// Every slot goes to one thread; threads of different slots never share a page (nor so a
// cache line); the slots the runs hold and have not handed out count neither as used in the
// stats nor as leaked in check(), which still sees one slot the caller loses.
TEST(RoartConcurrency, ThreadsTakeSlotsFromRunsOfTheirOwn) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(256 << 20);
  auto* root = static_cast<std::uint64_t*>(
      baselines::open_arena_root(*pool, 64, 0x736e'7572'7473'6574ull, "the runs test"));
  baselines::roart::ArenaSet<2> arenas;
  arenas.create(
      *pool, root + 2, root[1], +[](int a) -> std::size_t { return a == 0 ? 32 : 512; },
      /*concurrent=*/true, /*runs=*/true);
  arenas.open();
  arenas.finish();
  constexpr unsigned kThreads = baselines::roart::kThreadSlots + 6;
  constexpr std::size_t kTakes[2] = {300, 20};
  struct Taken {
    std::size_t slot = 0;
    std::vector<std::uint64_t> offs[2];
  };
  std::vector<Taken> taken(kThreads);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      taken[t].slot = baselines::roart::thread_slot();
      for (int a = 0; a < 2; ++a)
        for (std::size_t i = 0; i < kTakes[a]; ++i) taken[t].offs[a].push_back(arenas.take(a));
    });
  for (auto& th : threads) th.join();
  std::set<std::uint64_t> all;
  std::map<std::uint64_t, std::size_t> page_slot;  // page -> the thread slot whose slots it holds
  for (const auto& tk : taken)
    for (const auto& offs : tk.offs)
      for (std::uint64_t off : offs) {
        EXPECT_TRUE(all.insert(off).second) << "slot " << off << " handed out twice";
        auto [it, fresh] = page_slot.emplace(off / 4096, tk.slot);
        EXPECT_EQ(it->second, tk.slot) << "page of slot " << off << " shared by two threads";
      }
  const auto used = arenas.usage().used;
  EXPECT_EQ(used[0], kThreads * kTakes[0]);
  EXPECT_EQ(used[1], kThreads * kTakes[1]);
  baselines::roart::ArenaSet<2>::Counts reached{kThreads * kTakes[0], kThreads * kTakes[1]};
  CheckReport ok;
  arenas.check_slots(reached, "the test", ok);
  EXPECT_TRUE(ok.ok) << (ok.problems.empty() ? "" : ok.problems[0]);
  --reached[0];
  CheckReport leak;
  arenas.check_slots(reached, "the test", leak);
  EXPECT_FALSE(leak.ok);
}

// Removes empty leaf arrays and nodes while readers walk through them.
TEST(RoartConcurrency, RemoveHeavyAcrossLeafArrays) {
  expect_remove_heavy(peer_stress("roart", 2, 3000));
}

}  // namespace
}  // namespace dptree::testing
