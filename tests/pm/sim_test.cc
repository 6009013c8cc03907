#include "dptree/pm/sim.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"

namespace dptree::pm {
namespace {

class Sim : public ::testing::Test {
 protected:
  void SetUp() override {
    set_mode(Mode::sim);
    pool_ = Pool::create_in_memory(1 << 20);
    // A cache-line-aligned scratch area inside the heap (no allocator needed for these tests).
    off_ = pool_->allocator().reserve(4096);
  }
  void TearDown() override {
    pool_.reset();
    set_mode(Mode::dram);
  }
  std::uint64_t* word(std::size_t i) const { return pool_->at<std::uint64_t>(off_) + i; }
  static std::uint64_t word_in(const Image& img, std::uint64_t off, std::size_t i) {
    std::uint64_t v;
    std::memcpy(&v, img.bytes.data() + off + i * 8, 8);
    return v;
  }
  Image capture(std::uint64_t seed, double p_evict, double p_pending = 0.5,
                Unit unit = Unit::line64) const {
    return pool_->sim()->capture(CaptureOptions{seed, p_evict, p_pending, unit});
  }

  std::unique_ptr<Pool> pool_;
  std::uint64_t off_ = 0;
};

TEST_F(Sim, UnflushedStoreLostWithoutEvictionKeptWithIt) {
  *word(0) = 42;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    EXPECT_EQ(word_in(capture(seed, 0.0), off_, 0), 0u);
    EXPECT_EQ(word_in(capture(seed, 1.0), off_, 0), 42u);
  }
}

TEST_F(Sim, FlushedUnfencedLineIsDecidedBySeed) {
  *word(0) = 7;
  flush(word(0), 8);
  int kept = 0, dropped = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    auto v = word_in(capture(seed, 0.0, 0.5), off_, 0);
    ASSERT_TRUE(v == 0 || v == 7);
    (v == 7 ? kept : dropped)++;
    EXPECT_EQ(word_in(capture(seed, 0.0, 0.5), off_, 0), v) << "same seed, same image";
  }
  EXPECT_GT(kept, 50);
  EXPECT_GT(dropped, 50);
  EXPECT_EQ(word_in(capture(1, 0.0, 0.0), off_, 0), 0u);
  EXPECT_EQ(word_in(capture(1, 0.0, 1.0), off_, 0), 7u);
}

TEST_F(Sim, FencedLineAlwaysSurvives) {
  *word(3) = 99;
  persist(word(3), 8);
  for (std::uint64_t seed = 0; seed < 50; ++seed)
    EXPECT_EQ(word_in(capture(seed, 0.0, 0.0), off_, 3), 99u);
  EXPECT_EQ(pool_->sim()->pending_lines(), 0u);
}

// clwb writes back the line as it is at the flush; a later store is not covered by the fence.
TEST_F(Sim, FenceMakesTheFlushedContentDurableNotLaterStores) {
  *word(0) = 1;
  flush(word(0), 8);
  *word(0) = 2;
  fence();
  EXPECT_EQ(word_in(capture(0, 0.0), off_, 0), 1u);
  EXPECT_EQ(word_in(capture(0, 1.0), off_, 0), 2u);
}

TEST_F(Sim, WordUnitTearsLinesAndLineUnitNever) {
  int torn = 0;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    for (std::size_t i = 0; i < 8; ++i) *word(i) = seed * 100 + i + 1;
    auto img8 = capture(seed, 0.5, 0.5, Unit::word8);
    auto img64 = capture(seed, 0.5, 0.5, Unit::line64);
    int fresh8 = 0, fresh64 = 0;
    for (std::size_t i = 0; i < 8; ++i) {
      fresh8 += word_in(img8, off_, i) == seed * 100 + i + 1;
      fresh64 += word_in(img64, off_, i) == seed * 100 + i + 1;
    }
    EXPECT_TRUE(fresh64 == 0 || fresh64 == 8) << fresh64;
    torn += fresh8 > 0 && fresh8 < 8;
    persist(word(0), 64);
  }
  EXPECT_GT(torn, 50);
}

// A fence orders only the calling thread's flushes.
TEST_F(Sim, FenceOfAnotherThreadDoesNotPersistMyFlush) {
  *word(0) = 5;
  flush(word(0), 8);
  std::thread([&] {
    *word(8) = 6;  // another line, flushed and fenced by the other thread
    persist(word(8), 8);
  }).join();
  auto img = capture(0, 0.0, 0.0);
  EXPECT_EQ(word_in(img, off_, 0), 0u);
  EXPECT_EQ(word_in(img, off_, 8), 6u);
  fence();
  EXPECT_EQ(word_in(capture(0, 0.0, 0.0), off_, 0), 5u);
}

// Coherence: once another thread has made a newer copy of a line durable, this thread's older
// unfenced snapshot of the line can no longer land over it; a newer snapshot still can.
TEST_F(Sim, OlderSnapshotNeverLandsOverANewerDurableLine) {
  *word(0) = 1;
  flush(word(0), 8);  // this thread's snapshot: 1, never fenced
  std::thread([&] {
    *word(1) = 2;  // same line
    persist(word(1), 8);
  }).join();
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    auto img = capture(seed, 0.0, 1.0);
    EXPECT_EQ(word_in(img, off_, 0), 1u);
    EXPECT_EQ(word_in(img, off_, 1), 2u) << "the older snapshot (word 1 = 0) landed last";
  }
  *word(1) = 3;
  flush(word(1), 8);  // a newer snapshot of the line by this thread lands over the durable one
  EXPECT_EQ(word_in(capture(0, 0.0, 1.0), off_, 1), 3u);
  EXPECT_EQ(word_in(capture(0, 0.0, 0.0), off_, 1), 2u);
}

// The hook runs before each event takes effect; a capture at the k-th fence sees exactly what
// was fenced before it, and the image opens as a pool (with its own simulator) inside the hook.
TEST_F(Sim, HookCapturesAtTheKthFenceAndImagesOpen) {
  std::vector<std::uint64_t> seen;
  const auto fences_before = pool_->sim()->fence_events();
  pool_->sim()->set_hook([&](const Event& e) {
    if (e.kind != EventKind::fence) return;
    auto pool = Pool::open_image(capture(e.seq, 0.0, 0.0));
    seen.push_back(*(pool->at<std::uint64_t>(off_)));
    ASSERT_NE(pool->sim(), nullptr);
    persist(pool->at<std::uint64_t>(off_), 8);  // events of the image do not re-enter the hook
  });
  for (std::uint64_t i = 1; i <= 5; ++i) {
    *word(0) = i;
    persist(word(0), 8);
  }
  pool_->sim()->set_hook(nullptr);
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(pool_->sim()->fence_events() - fences_before, 5u);
  EXPECT_GE(pool_->sim()->flush_events(), 5u);
}

TEST_F(Sim, ImageOfACleanPoolIsTheWorkingImage) {
  *word(1) = 11;
  persist(word(1), 8);
  auto img = capture(3, 0.0, 0.0);
  EXPECT_EQ(std::memcmp(img.bytes.data(), pool_->base(), pool_->size()), 0);
}

}  // namespace
}  // namespace dptree::pm
