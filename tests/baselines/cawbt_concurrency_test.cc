// CAWBT under concurrent use: writers serialise on the global write lock (§3.5), readers
// share it. Two writers on disjoint key sets and a reader; the final contents are exact.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "fixtures/model_fixture.h"
#include "fixtures/stress_fixture.h"

namespace dptree::testing {
namespace {

TEST(CawbtConcurrency, WritersAndReaders) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(8 << 20);
  auto idx = make_index("cawbt", pool.get(), {});
  ASSERT_TRUE(find_index("cawbt").concurrent);
  constexpr Key kPerThread = 4000;
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> bad_scans{0};
  auto writer = [&](Key parity) {
    for (Key i = 0; i < kPerThread; ++i) idx->upsert(i * 2 + parity, i);
    for (Key i = 0; i < kPerThread; i += 3) idx->remove(i * 2 + parity);
  };
  std::thread reader([&] {
    while (!stop.load()) {
      std::vector<KV> out;
      idx->scan(100, 50, out);
      for (std::size_t i = 1; i < out.size(); ++i)
        if (out[i - 1].first >= out[i].first) ++bad_scans;
      if (auto v = idx->lookup(501)) {
        if (*v != 250) ++bad_scans;
      }
    }
  });
  std::thread w0(writer, 0), w1(writer, 1);
  w0.join();
  w1.join();
  stop = true;
  reader.join();
  EXPECT_EQ(bad_scans.load(), 0u);
  expect_check_ok(*idx, "after the threads");
  for (Key k = 0; k < 2 * kPerThread; ++k) {
    Key i = k / 2;
    auto v = idx->lookup(k);
    if (i % 3 == 0) {
      EXPECT_FALSE(v) << k;
    } else {
      ASSERT_TRUE(v) << k;
      EXPECT_EQ(*v, i);
    }
  }
}

}  // namespace
}  // namespace dptree::testing

namespace dptree::testing {
namespace {

// The shared stress fixture: every operation kind on one key space from four threads, reads
// checked against the per-thread write logs on one clock (stress_fixture.h).
TEST(CawbtConcurrency, StressFixture) {
  pm::set_mode(pm::Mode::dram);
  StressConfig c;
  c.index = "cawbt";
  c.pool_bytes = 32u << 20;
  c.ops_per_thread = 5000;
  c.key_space = 3000;
  expect_clean_stress(c);
}

}  // namespace
}  // namespace dptree::testing
