// The shared stress fixture (tests/fixtures/stress_fixture.h) passes a correct concurrent
// index and catches broken ones: an index that serves stale reads, one that loses writes, one
// that invents values and one whose scans pass over a key. Without these a stress test of a real
// index could pass vacuously.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "fixtures/stress_fixture.h"

namespace dptree::testing {
namespace {

enum class Fault { stale_reads, lost_writes, invented_values, scans_skip };

// `btree` (correct and concurrent) with one fault injected.
class Faulty final : public Index {
 public:
  Faulty(std::unique_ptr<Index> inner, Fault f) : inner_(std::move(inner)), fault_(f) {}
  std::string name() const override { return "faulty"; }
  void upsert(Key k, Value v) override {
    if (fault_ == Fault::lost_writes && ++writes_ % 50 == 0) return;
    inner_->upsert(k, v);
  }
  bool insert(Key k, Value v) override { return inner_->insert(k, v); }
  bool update(Key k, Value v) override { return inner_->update(k, v); }
  bool remove(Key k) override { return inner_->remove(k); }
  std::optional<Value> lookup(Key k) const override {
    if (fault_ == Fault::stale_reads) {
      // Remembers the first answer for key 7 and keeps giving it.
      if (k != 7) return inner_->lookup(k);
      std::lock_guard g(mu_);
      if (!frozen_) frozen_ = inner_->lookup(k);
      return *frozen_;
    }
    auto got = inner_->lookup(k);
    if (fault_ == Fault::invented_values && got && k % 97 == 3) return *got + 1;
    return got;
  }
  std::size_t scan(Key s, std::size_t n, std::vector<KV>& out) const override {
    if (fault_ != Fault::scans_skip) return inner_->scan(s, n, out);
    // Drops the entries of keys 200-209, as a scan that missed a component would.
    std::vector<KV> all;
    inner_->scan(s, n + 10, all);
    std::size_t got = 0;
    for (const auto& kv : all)
      if ((kv.first < 200 || kv.first >= 210) && got < n) {
        out.push_back(kv);
        ++got;
      }
    return got;
  }
  IndexStats stats() const override { return inner_->stats(); }

 private:
  std::unique_ptr<Index> inner_;
  Fault fault_;
  std::atomic<std::size_t> writes_{0};
  mutable std::mutex mu_;
  mutable std::optional<std::optional<Value>> frozen_;
};

void register_faulty(const std::string& name, Fault f) {
  for (const auto& i : registered_indexes())
    if (i.name == name) return;
  register_index(IndexInfo{name, "test only", false, true, [f](const IndexConfig& c) {
                             return std::make_unique<Faulty>(find_index("btree").create(c), f);
                           }});
}

StressConfig small(const std::string& index) {
  StressConfig c;
  c.index = index;
  c.pool_bytes = 0;
  c.threads = 4;
  c.ops_per_thread = 4000;
  c.key_space = 400;
  return c;
}

TEST(StressFixture, PassesACorrectConcurrentIndex) {
  std::atomic<std::size_t> peeks{0};
  auto c = small("btree");
  c.during = [&](Index& idx) {
    idx.stats();
    ++peeks;
  };
  auto r = run_stress(c);
  EXPECT_EQ(r.failures, 0u);
  EXPECT_EQ(r.ops, 4u * 4000u);
  EXPECT_GT(r.reads, 1000u);
  EXPECT_GT(r.scans, 100u);
  EXPECT_GT(r.writes, 4000u);
  EXPECT_GT(r.during_calls, 0u);
  EXPECT_FALSE(r.final_state.empty());
}

// Runs the fixture with gtest's failures captured; returns how many it reported.
std::size_t failures_reported(const std::string& index) {
  ::testing::TestPartResultArray results;
  std::size_t counted = 0;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    counted = run_stress(small(index)).failures;
  }
  EXPECT_GT(results.size(), 0) << index << ": no gtest failure was reported";
  return counted;
}

TEST(StressFixture, CatchesStaleReads) {
  register_faulty("faulty-stale", Fault::stale_reads);
  EXPECT_GT(failures_reported("faulty-stale"), 0u);
}

TEST(StressFixture, CatchesLostWrites) {
  register_faulty("faulty-lost", Fault::lost_writes);
  EXPECT_GT(failures_reported("faulty-lost"), 0u);
}

TEST(StressFixture, CatchesInventedValues) {
  register_faulty("faulty-invented", Fault::invented_values);
  EXPECT_GT(failures_reported("faulty-invented"), 0u);
}

TEST(StressFixture, CatchesScansThatPassOverAKey) {
  register_faulty("faulty-scans", Fault::scans_skip);
  EXPECT_GT(failures_reported("faulty-scans"), 0u);
}

}  // namespace
}  // namespace dptree::testing
