// The fences of the sync words (sync.h): a guard stores its active bit and then loads the
// global pointer; a publisher stores the pointer, calls heavy_fence() and then reads the
// words. The outcome in which both loads miss the other's store (store buffering) would let a
// scan miss a reader that holds the old pointer, and must never happen.
#include "cdptree/sync.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>

namespace dptree::cdp {
namespace {

TEST(SyncWords, GuardsUseTheAsymmetricFenceWhereTheKernelHasIt) {
  SyncManager sm;
  EXPECT_EQ(sm.mine().asymmetric, asymmetric_fences());
  std::atomic<int*> gp{nullptr};
  Guard<int> g(sm.mine(), kFR, gp);
  EXPECT_EQ(g.get(), nullptr);
  EXPECT_EQ(sm.mine().w[kFR].load(), 0u) << "a null pointer leaves the word inactive";
}

// Waits for `flag` to reach `r`. Both threads hand over every round, so on a loaded machine a
// spinner whose partner is descheduled would burn its whole time slice each round (the test
// once took two minutes beside other work): after a long spin it yields. A short one would
// let the guard arrive late in most rounds, after the scan's store and load, and the rounds
// would no longer overlap (a planted missing fence was then caught in 1 run of 5, against 3
// of 3).
void wait_for(const std::atomic<int>& flag, int r) {
  for (int spins = 0; flag.load(std::memory_order_acquire) != r; ++spins) {
    if (spins > (1 << 16)) std::this_thread::yield();
  }
}

// Spins for a round's own few iterations, so that the two sides' stores meet at varying
// distances (the store-buffering window is a few dozen cycles wide).
void stagger(int round, int salt) {
  unsigned n = (static_cast<unsigned>(round) * 2654435761u + static_cast<unsigned>(salt)) >> 28;
  for (unsigned i = 0; i < n; ++i) asm volatile("");
}

// The store-buffering litmus test, one side as a guard does it (store_active, load), the other
// as a scan does (store, heavy_fence, load). Each round both threads store
// the round's number to their own word, then read the other's; the forbidden outcome is both
// reading an older round. Each line is shared by both caches when a round starts, so a store
// waits in its store buffer for the other copy's invalidation while the load after it hits.
// With heavy_fence reduced to nothing (only the scan's own ordering) it is rare but real: the
// release build of this test saw it in 13 runs of 16 (1-10 rounds of 300,000 each); the
// AddressSanitizer build caught it in 5 runs of 5. Under ThreadSanitizer, whose runtime
// handles every atomic access, it was caught in none of 3 runs of 300,000 rounds: there the
// test checks for data races only, and a few rounds do.
TEST(SyncWords, AGuardAndAScanNeverBothMissTheOther) {
#if defined(__SANITIZE_THREAD__)
  constexpr int kRounds = 20000;
#else
  constexpr int kRounds = 300000;  // a membarrier costs microseconds here
#endif
  alignas(64) std::atomic<int> x{0};
  alignas(64) std::atomic<int> y{0};
  alignas(64) std::atomic<int> go{0};
  alignas(64) std::atomic<int> done{0};
  int r1 = 0, forbidden = 0;
  const bool asym = asymmetric_fences();
  std::thread guard([&] {
    for (int r = 1; r <= kRounds; ++r) {
      wait_for(go, r);
      stagger(r, 1);
      store_active(x, r, asym);  // the guard's own store
      r1 = y.load(std::memory_order_relaxed);
      done.store(r, std::memory_order_release);
    }
  });
  for (int r = 1; r <= kRounds; ++r) {
    go.store(r, std::memory_order_release);
    stagger(r, 7);
    y.store(r, std::memory_order_seq_cst);  // as the publisher stores the new pointer
    heavy_fence();
    const int r2 = x.load(std::memory_order_seq_cst);  // as the scan reads the words
    wait_for(done, r);
    forbidden += r1 != r && r2 != r;
  }
  guard.join();
  EXPECT_EQ(forbidden, 0) << "rounds in which the guard and the scan each missed the other";
}

}  // namespace
}  // namespace dptree::cdp
