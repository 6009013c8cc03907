// The bloom filters in front of the buffer tree (§2.1; the tree itself is btree.h's, tested in
// tests/bench/btree_test.cc): no false negative, and a false-positive rate near the one they
// were sized for.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "engine/bloom.h"

namespace dptree::detail {
namespace {

template <class Filter>
double false_positive_rate(const Filter& f, std::size_t added) {
  std::size_t fp = 0;
  const std::size_t probes = 200000;
  for (u64 k = 0; k < probes; ++k) fp += f.may_contain(k * 2 + 1 + 2 * added);  // never added
  return static_cast<double>(fp) / probes;
}

TEST(Bloom, NoFalseNegativesAndTheRateItWasSizedFor) {
  for (double rate : {0.01, 0.03, 0.1}) {
    const std::size_t n = 50000;
    Bloom b;
    b.reset(n, rate);
    ConcurrentBloom cb(n, rate);
    for (u64 i = 0; i < n; ++i) {
      b.add(i * 2);
      cb.add(i * 2);
    }
    for (u64 i = 0; i < n; ++i) {
      ASSERT_TRUE(b.may_contain(i * 2)) << "false negative at " << i * 2;
      ASSERT_TRUE(b.may_contain_hashed(hash_key(i * 2)));
      ASSERT_TRUE(cb.may_contain(i * 2));
    }
    const double got = false_positive_rate(b, n);
    EXPECT_LT(got, rate * 1.5) << "sized for " << rate;
    EXPECT_GT(got, rate / 10) << "a filter far below its rate is larger than it needs to be";
    EXPECT_EQ(false_positive_rate(cb, n), got) << "both filters set the same bits";
  }
}

TEST(Bloom, ConcurrentAddsAreAllSeen) {
  ConcurrentBloom cb(40000, 0.03);
  std::vector<std::thread> ts;
  for (u64 t = 0; t < 4; ++t)
    ts.emplace_back([&cb, t] {
      for (u64 i = 0; i < 10000; ++i) cb.add(i * 4 + t);
    });
  for (auto& th : ts) th.join();
  for (u64 k = 0; k < 40000; ++k) ASSERT_TRUE(cb.may_contain(k)) << k;
}

// A retired filter hands its pages back a part a call, each part ending on a page boundary;
// afterwards its pages read as zero, so no key is found but those of pages it kept (a calloc'd
// filter's first and last pages, which may be shared with the allocator's neighbours).
TEST(Bloom, RetiredFilterHandsBackItsPagesInParts) {
  ConcurrentBloom b(1 << 20, 0.01);
  for (u64 k = 0; k < (1 << 20); ++k) b.add(k);
  const std::size_t part = 256 << 10;
  std::size_t calls = 1;
  while (b.drop_pages(part)) ++calls;
  const std::size_t parts = (b.dram_bytes() + part - 1) / part;  // one more if a part ends early
  EXPECT_GE(calls, parts);                                       // on its page's boundary
  EXPECT_LE(calls, parts + 1);
  std::size_t found = 0;
  for (u64 k = 0; k < (1 << 20); ++k) found += b.may_contain(k);
  EXPECT_LT(found, (1u << 20) / 100) << "of " << b.dram_bytes() << " bytes";
  EXPECT_FALSE(b.drop_pages(part));
}

// A large filter is a mapping of its own (page-aligned, zero) every time, also after an
// earlier one was written and freed: glibc's calloc would serve the second from its heap.
TEST(Bloom, LargeFilterWordsAreFreshPagesEveryTime) {
  const std::size_t n = (std::size_t{8} << 20) / 8;
  for (int round = 0; round < 3; ++round) {
    auto w = zeroed_words(n);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(w.get()) % 4096, 0u) << "round " << round;
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < n; i += 509) nonzero += w.get()[i] != 0;
    EXPECT_EQ(nonzero, 0u) << "round " << round;
    for (std::size_t i = 0; i < n; ++i) w.get()[i] = ~u64{0};
  }
  auto small = zeroed_words(16);
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(small.get()[i], 0u);
}

}  // namespace
}  // namespace dptree::detail
