// The string buffer's shard lock (cdptree/shard_lock.h): writers exclude each other and the
// readers, readers share it. Run under TSan too (label concurrency): the guarded fields are
// plain, so a missing happens-before is a reported race, not just a wrong count.
#include "cdptree/shard_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace dptree::cdp {
namespace {

TEST(ShardLock, WritersExcludeEachOtherAndReaders) {
  ShardLock mu;
  long a = 0, b = 0;  // kept equal by every writer
  std::atomic<long> torn{0};
  constexpr int kWriters = 3, kReaders = 2, kWrites = 20000;
  std::vector<std::thread> ts;
  std::atomic<int> writing{kWriters}, started{0};
  for (int w = 0; w < kWriters; ++w)
    ts.emplace_back([&] {
      while (started.load() < kReaders) std::this_thread::yield();  // readers in the race
      for (int i = 0; i < kWrites; ++i) {
        std::unique_lock lk(mu);
        ++a;
        ++b;
      }
      --writing;
    });
  for (int r = 0; r < kReaders; ++r)
    ts.emplace_back([&] {
      for (bool first = true; first || writing.load() > 0; first = false) {
        {
          std::shared_lock lk(mu);
          if (a != b) ++torn;
        }
        if (first) ++started;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(a, long{kWriters} * kWrites);
  EXPECT_EQ(b, a);
  EXPECT_EQ(torn.load(), 0);
}

TEST(ShardLock, ReadersShareItAndKeepWritersOut) {
  ShardLock mu;
  std::shared_lock r1(mu);
  EXPECT_TRUE(mu.try_lock_shared());  // a second reader at once
  EXPECT_FALSE(mu.try_lock());        // no writer while they read
  mu.unlock_shared();
  r1.unlock();
  ASSERT_TRUE(mu.try_lock());
  EXPECT_FALSE(mu.try_lock_shared());  // no reader while a writer holds it
  EXPECT_FALSE(mu.try_lock());
  mu.unlock();
  EXPECT_TRUE(mu.try_lock_shared());
  mu.unlock_shared();
}

}  // namespace
}  // namespace dptree::cdp
