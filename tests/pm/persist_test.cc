#include "dptree/pm/persist.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "dptree/error.h"
#include "dptree/pm/store.h"

namespace dptree::pm {
namespace {

struct ModeGuard {
  Mode saved = mode();
  explicit ModeGuard(Mode m) {
    set_mode(m);
    reset_counters();
  }
  ~ModeGuard() { set_mode(saved); }
};

alignas(64) unsigned char buf[64 * 64];

TEST(Persist, FlushCountsEveryOverlappedLine) {
  ModeGuard g(Mode::dram);
  flush(buf + 60, 200);  // bytes 60..259 touch lines 0..4
  EXPECT_EQ(counters().total().lines, 5u);
  EXPECT_EQ(counters().total().bytes, 5u * 64);
  flush(buf, 64);      // exactly one line
  flush(buf + 63, 2);  // straddles two lines
  flush(buf, 0);       // nothing
  EXPECT_EQ(counters().total().lines, 8u);
  EXPECT_EQ(counters().total().fences, 0u);
  persist(buf, 1);
  EXPECT_EQ(counters().total().lines, 9u);
  EXPECT_EQ(counters().total().fences, 1u);
}

TEST(Persist, EveryModeRunsAndCountsTheSame) {
  for (Mode m : {Mode::pmem, Mode::eadr, Mode::dram}) {
    ModeGuard g(m);
    persist(buf, 4 * 64);
    fence();
    EXPECT_EQ(counters().total().lines, 4u) << to_string(m);
    EXPECT_EQ(counters().total().fences, 2u) << to_string(m);
  }
}

TEST(Persist, CategoriesSplitAndNest) {
  ModeGuard g(Mode::dram);
  {
    CategoryScope log(Category::log);
    flush(buf, 64);
    {
      CategoryScope alloc(Category::alloc);
      persist(buf, 128);
    }
    fence();
  }
  flush(buf, 64);
  auto c = counters();
  EXPECT_EQ(c[Category::log].lines, 1u);
  EXPECT_EQ(c[Category::log].fences, 1u);
  EXPECT_EQ(c[Category::alloc].lines, 2u);
  EXPECT_EQ(c[Category::alloc].fences, 1u);
  EXPECT_EQ(c[Category::other].lines, 1u);
  EXPECT_EQ(c.total().lines, 4u);
}

TEST(Persist, ResetZeroesAndSnapshotsSubtract) {
  ModeGuard g(Mode::dram);
  flush(buf, 640);
  auto before = counters();
  flush(buf, 128);
  fence();
  auto d = counters() - before;
  EXPECT_EQ(d.total().lines, 2u);
  EXPECT_EQ(d.total().fences, 1u);
  reset_counters();
  EXPECT_EQ(counters().total().lines, 0u);
}

// Counters of several threads, including exited ones, sum exactly.
TEST(Persist, ThreadCountersSumExactly) {
  ModeGuard g(Mode::dram);
  constexpr int kThreads = 4, kIters = 10000;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([] {
      alignas(64) unsigned char local[256];
      for (int i = 0; i < kIters; ++i) {
        flush(local, 3 * 64);
        fence();
        (void)counters();  // a concurrent reader must not disturb the writers
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(counters().total().lines, std::uint64_t{kThreads} * kIters * 3);
  EXPECT_EQ(counters().total().fences, std::uint64_t{kThreads} * kIters);
}

// count_persists() is inline: a thread whose first count is one must still enlist its
// counters, so that counters() sees them while it runs and after it exits.
TEST(Persist, CountPersistsAsAThreadsFirstCountIsSummed) {
  ModeGuard g(Mode::dram);
  reset_counters();
  std::atomic<int> stage{0};
  std::thread t([&] {
    CategoryScope log(Category::log);
    count_persists(5, 1);
    count_persists(2, 2);
    stage = 1;
    while (stage.load() != 2) std::this_thread::yield();
  });
  while (stage.load() != 1) std::this_thread::yield();
  EXPECT_EQ(counters()[Category::log].lines, 7u) << "while the thread runs";
  EXPECT_EQ(counters()[Category::log].fences, 3u);
  stage = 2;
  t.join();
  EXPECT_EQ(counters()[Category::log].lines, 7u) << "after it exits";
  EXPECT_EQ(counters()[Category::log].fences, 3u);
}

// The form that names its category charges that category whatever scope is open, on the
// thread's first count too, and leaves the thread's category as it was.
TEST(Persist, CountPersistsToACategoryIgnoresTheScope) {
  ModeGuard g(Mode::dram);
  reset_counters();
  std::thread t([] {
    CategoryScope log(Category::log);
    count_persists(4, 1, Category::node);  // the thread's first count
    count_persists(1, 1, Category::node);
    count_persists(2, 0);  // the scope's category, still log
  });
  t.join();
  EXPECT_EQ(counters()[Category::node].lines, 5u);
  EXPECT_EQ(counters()[Category::node].fences, 2u);
  EXPECT_EQ(counters()[Category::log].lines, 2u);
  EXPECT_EQ(counters()[Category::log].fences, 0u);
}

TEST(Persist, ParseModeNamesTheAcceptedValues) {
  EXPECT_EQ(parse_mode("eadr"), Mode::eadr);
  EXPECT_EQ(parse_mode("sim"), Mode::sim);
  try {
    parse_mode("nvdimm");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("pmem, eadr, dram or sim"), std::string::npos) << e.what();
  }
}

// The inline line persist is for where persist() is exactly clwb + sfence; every other mode,
// and emulated delays, must take the counted path that runs them.
TEST(Persist, InlinePersistOnlyWherePersistIsClwbAndSfence) {
  for (Mode m : {Mode::eadr, Mode::dram, Mode::sim}) {
    ModeGuard g(m);
    EXPECT_FALSE(inline_persist()) << to_string(m);
  }
  ModeGuard g(Mode::pmem);
  EXPECT_EQ(inline_persist(), flush_instruction() == FlushInstruction::clwb);
  set_delays(100, 0);
  EXPECT_FALSE(inline_persist()) << "a flush delay";
  set_delays(0, 100);
  EXPECT_FALSE(inline_persist()) << "a fence delay";
  set_delays(0, 0);
  if (!inline_persist()) GTEST_SKIP() << "no clwb on this CPU";
  {
    CategoryScope node(Category::node);
    for (int i = 0; i < 3; ++i) persist_line_inline(buf + 64 * i);
    count_persists(3, 2);
  }
  EXPECT_EQ(counters()[Category::node].lines, 3u);
  EXPECT_EQ(counters()[Category::node].fences, 2u);
  EXPECT_EQ(counters().total().bytes, 3u * 64);
}

TEST(Persist, DetectsAFlushInstruction) {
  auto f = flush_instruction();
  EXPECT_TRUE(f == FlushInstruction::clwb || f == FlushInstruction::clflushopt ||
              f == FlushInstruction::clflush);
}

}  // namespace
}  // namespace dptree::pm

namespace dptree::pm {
namespace {

// An empty vector's data() may be null: storing its zero bytes is a no-op, never a memcpy
// from null (UndefinedBehaviorSanitizer reported one when a recovery rebuilt an empty leaf's
// order array from a thread's never-grown scratch vector).
TEST(Store, ZeroBytesFromAnEmptyVectorStoreNothing) {
  std::vector<std::uint16_t> empty;
  std::uint64_t word = 42;
  store_bytes(&word, empty.data(), empty.size() * sizeof(std::uint16_t));
  store_bytes(&word, nullptr, 0);
  EXPECT_EQ(word, 42u);
}

}  // namespace
}  // namespace dptree::pm
