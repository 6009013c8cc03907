// The allocator under several threads at once (oversubscribed on 2 cores to force
// interleavings); run by the ThreadSanitizer build too. Afterwards, and after reopening the
// pool image, the live blocks are exactly the blocks the threads' slot tables reference.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "dptree/error.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "pm/root_table.h"

namespace dptree::pm {
namespace {

constexpr std::size_t kThreads = 4, kSlots = 128, kSteps = 4000;

void expect_live_equals_referenced(Pool& pool) {
  auto* table = pool.root<std::uint64_t>();
  std::set<std::uint64_t> referenced;
  for (std::size_t i = 0; i < kThreads * kSlots; ++i)
    if (table[i]) {
      EXPECT_TRUE(referenced.insert(table[i]).second) << "block used twice";
    }
  std::set<std::uint64_t> live;
  pool.allocator().for_each_live_block([&](std::uint64_t off, std::size_t) {
    if (off != *pool.root_word()) live.insert(off);
  });
  EXPECT_EQ(live, referenced);
}

TEST(AllocatorConcurrency, ThreadsReserveActivateFreeWithoutLossOrDoubleUse) {
  set_mode(Mode::dram);
  auto pool = Pool::create_in_memory(16 << 20);
  auto& a = pool->allocator();
  auto* table = make_root_table(*pool, kThreads * kSlots);

  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      std::uint64_t* mine = table + t * kSlots;  // each thread owns its slots
      const std::size_t sizes[] = {64, 200, 1024, 4096, 8192, 65536, 100000};
      for (std::size_t step = 0; step < kSteps; ++step) {
        auto& slot = mine[rng() % kSlots];
        if (slot) {
          a.free(&slot);
          continue;
        }
        const auto b = reserve_unless_full(a, sizes[rng() % std::size(sizes)]);
        if (!b) continue;
        *pool->at<std::uint64_t>(*b) = *b ^ t;  // a block is written by its owner only
        flush(pool->at<std::uint64_t>(*b), 8);
        a.activate(&slot, *b);
      }
    });
  for (auto& th : threads) th.join();

  for (std::size_t t = 0; t < kThreads; ++t)
    for (std::size_t s = 0; s < kSlots; ++s)
      if (auto b = table[t * kSlots + s]) {
        EXPECT_EQ(*pool->at<std::uint64_t>(b), b ^ t);
      }
  expect_live_equals_referenced(*pool);
  auto reopened = Pool::open_image(Image{Buffer::copy_of({pool->base(), pool->size()})});
  expect_live_equals_referenced(*reopened);
}

}  // namespace
}  // namespace dptree::pm
