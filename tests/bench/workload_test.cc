// Workload generation: deterministic per seed, the mixes and distributions it promises.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "bench/keys.h"
#include "bench/workload.h"
#include "dptree/error.h"

namespace dptree::bench {
namespace {

StreamParams params(const std::string& workload, std::uint64_t seed, std::uint64_t records = 10000,
                    unsigned threads = 1) {
  StreamParams p;
  const Workload& w = find_workload(workload);
  p.mix = w.mix;
  p.keys = {records, threads, w.distribution, 0.99, -1};
  p.scan = {1, 100};
  p.seed = seed;
  return p;
}

std::vector<Op> ops(const StreamParams& p, unsigned thread, int n) {
  OpStream s(p, thread);
  std::vector<Op> out;
  for (int i = 0; i < n; ++i) out.push_back(s.next());
  return out;
}

bool same(const std::vector<Op>& a, const std::vector<Op>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].kind != b[i].kind || a[i].key != b[i].key || a[i].value != b[i].value ||
        a[i].length != b[i].length)
      return false;
  return true;
}

TEST(Workload, SameSeedSameOperations) {
  for (const char* w : {"mixed", "ycsb_a", "ycsb_d", "ycsb_e", "ycsb_f"}) {
    auto a = ops(params(w, 42), 0, 5000);
    auto b = ops(params(w, 42), 0, 5000);
    EXPECT_TRUE(same(a, b)) << w;
    EXPECT_FALSE(same(a, ops(params(w, 43), 0, 5000))) << w << ": the seed must matter";
  }
}

TEST(Workload, ThreadsGetIndependentStreams) {
  auto p = params("mixed", 7, 10000, 4);
  auto t0 = ops(p, 0, 2000);
  EXPECT_FALSE(same(t0, ops(p, 1, 2000)));
  // A thread's stream does not depend on what other threads do: regenerating it alone is equal.
  EXPECT_TRUE(same(ops(p, 1, 2000), ops(p, 1, 2000)));
}

TEST(Workload, MixSharesAreRespected) {
  auto p = params("mixed", 1);
  std::map<OpKind, int> count;
  const int n = 200000;
  for (const Op& op : ops(p, 0, n)) ++count[op.kind];
  EXPECT_NEAR(count[OpKind::read] * 100.0 / n, 50, 1);
  EXPECT_NEAR(count[OpKind::update] * 100.0 / n, 20, 1);
  EXPECT_NEAR(count[OpKind::insert] * 100.0 / n, 20, 1);
  EXPECT_NEAR(count[OpKind::scan] * 100.0 / n, 10, 1);
  EXPECT_EQ(count[OpKind::remove], 0);
}

TEST(Workload, InsertsAreNewAndDisjointAcrossThreads) {
  const std::uint64_t records = 5000;
  std::set<Key> preloaded;
  for (std::uint64_t id = 0; id < records; ++id)
    preloaded.insert(KeyGenerator::key_of(id, Distribution::uniform));
  std::set<Key> inserted;
  for (unsigned t = 0; t < 4; ++t) {
    auto p = params("insert_only", 3, records, 4);
    for (const Op& op : ops(p, t, 3000)) {
      ASSERT_EQ(op.kind, OpKind::insert);
      EXPECT_FALSE(preloaded.count(op.key));
      EXPECT_TRUE(inserted.insert(op.key).second) << "key inserted twice";
    }
  }
  EXPECT_EQ(inserted.size(), 4u * 3000u);
}

TEST(Workload, ReadsHitExistingKeys) {
  // Single thread, no removes: every read targets a preloaded key or one this thread inserted.
  auto p = params("mixed", 11, 2000);
  std::set<Key> live;
  for (std::uint64_t id = 0; id < 2000; ++id)
    live.insert(KeyGenerator::key_of(id, Distribution::uniform));
  for (const Op& op : ops(p, 0, 20000)) {
    if (op.kind == OpKind::insert)
      live.insert(op.key);
    else
      EXPECT_TRUE(live.count(op.key)) << "operation on a key that was never inserted";
  }
}

TEST(Workload, ReadAbsentMissesEveryKey) {
  // Fig. 10's unsuccessful lookups: no read may hit a preloaded key or one inserted meanwhile,
  // under every distribution (sequential keys are the ids themselves).
  for (auto d : {Distribution::uniform, Distribution::sequential}) {
    auto p = params("read_absent", 3, 2000);
    p.keys.distribution = d;
    p.mix.insert = 20;
    p.mix.read = 80;
    std::set<Key> live;
    for (std::uint64_t id = 0; id < 2000; ++id) live.insert(KeyGenerator::key_of(id, d));
    std::set<Key> read;
    for (const Op& op : ops(p, 0, 20000)) {
      if (op.kind == OpKind::insert) {
        EXPECT_FALSE(read.count(op.key)) << "an insert reused a key read as absent";
        live.insert(op.key);
      } else {
        ASSERT_EQ(op.kind, OpKind::read);
        EXPECT_FALSE(live.count(op.key)) << "an absent lookup hit an existing key";
        read.insert(op.key);
      }
    }
    EXPECT_GT(read.size(), 15000u) << "absent keys should be spread, not one key repeated";
  }
}

TEST(Workload, AbsentReadsShareIsRespected) {
  auto p = params("read_only", 9, 5000);
  p.mix.absent_reads = 30;
  std::set<Key> live;
  for (std::uint64_t id = 0; id < 5000; ++id)
    live.insert(KeyGenerator::key_of(id, Distribution::uniform));
  int missing = 0;
  const int n = 20000;
  for (const Op& op : ops(p, 0, n)) missing += live.count(op.key) ? 0 : 1;
  EXPECT_NEAR(missing / double(n), 0.30, 0.02);
  // Without the option the stream is the plain one: every lookup hits.
  for (const Op& op : ops(params("read_only", 9, 5000), 0, n)) EXPECT_TRUE(live.count(op.key));
}

TEST(Workload, AbsentReadsShareIsValidated) {
  Mix m{.read = 100};
  m.absent_reads = 101;
  EXPECT_THROW(m.validate(), Error);
  m.absent_reads = -1;
  EXPECT_THROW(m.validate(), Error);
  m.absent_reads = 100;
  EXPECT_NO_THROW(m.validate());
}

TEST(Workload, ScanLengthsStayInRange) {
  auto p = params("ycsb_e", 5);
  std::set<std::uint32_t> lengths;
  for (const Op& op : ops(p, 0, 50000))
    if (op.kind == OpKind::scan) {
      EXPECT_GE(op.length, 1u);
      EXPECT_LE(op.length, 100u);
      lengths.insert(op.length);
    }
  EXPECT_EQ(lengths.size(), 100u) << "every length in [1, 100] should occur";
}

TEST(Workload, NamesAreForgiving) {
  EXPECT_EQ(find_workload("InsertOnly").name, "insert_only");
  EXPECT_EQ(find_workload("read-update").name, "read_update");
  EXPECT_EQ(find_workload("YCSB-A").name, "ycsb_a");
  try {
    find_workload("nope");
    FAIL() << "unknown workload accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scan_insert"), std::string::npos) << e.what();
  }
}

TEST(Workload, CustomMixMustSumTo100) {
  EXPECT_NO_THROW(custom_workload({.read = 60, .insert = 40}));
  EXPECT_THROW(custom_workload({.read = 60, .insert = 30}), Error);
  EXPECT_THROW(custom_workload({.read = 120, .insert = -20}), Error);
}

TEST(Distributions, UniformCoversTheKeySpaceEvenly) {
  KeyGenerator g({1000, 1, Distribution::uniform, 0.99, -1}, 0);
  Rng rng(9);
  std::vector<int> bins(10);
  const int n = 100000;
  for (int i = 0; i < n; ++i) ++bins[g.existing_id(rng) / 100];
  for (int b : bins) EXPECT_NEAR(b, n / 10, n / 10 * 0.05);
}

TEST(Distributions, ZipfianFollowsItsLaw) {
  const std::uint64_t items = 1000;
  const double theta = 0.99;
  Zipfian z(items, theta);
  Rng rng(2024);
  std::vector<int> freq(items);
  const int n = 400000;
  for (int i = 0; i < n; ++i) ++freq[z.next(rng)];
  const double zeta = Zipfian::zeta(items, theta);
  // Gray et al.'s generator is exact for the two hottest ranks: P(r) = 1 / ((r+1)^theta zeta).
  for (int r : {0, 1}) {
    const double want = n / (std::pow(r + 1, theta) * zeta);
    EXPECT_NEAR(freq[r], want, want * 0.05) << "rank " << r;
  }
  // Beyond them it approximates the power law: the hottest 1% of the items take about their
  // share of the mass (38% at theta 0.99; a uniform draw would give 1%) ...
  auto law = [&](int from, int to) {  // P(rank in [from, to))
    double m = 0;
    for (int r = from + 1; r <= to; ++r) m += 1.0 / std::pow(r, theta);
    return m / zeta;
  };
  auto share = [&](int from, int to) {
    long c = 0;
    for (int r = from; r < to; ++r) c += freq[r];
    return static_cast<double>(c) / n;
  };
  EXPECT_NEAR(share(0, 10), law(0, 10), 0.03);
  // ... and the mass per decade of ranks follows it too (about equal decades at theta ~ 1).
  EXPECT_NEAR(share(10, 100) / share(100, 1000), law(10, 100) / law(100, 1000), 0.15);
  for (int r = 0; r + 1 < 5; ++r) EXPECT_GT(freq[r], freq[r + 1]) << "hotter ranks come first";
  EXPECT_THROW(Zipfian(10, 1.0), Error);
  EXPECT_THROW(Zipfian(10, -0.1), Error);
}

TEST(Distributions, ZipfianGrowsIncrementally) {
  Zipfian a(500, 0.8);
  a.grow(800);
  EXPECT_NEAR(a.zetan(), Zipfian::zeta(800, 0.8), 1e-9);
  EXPECT_EQ(a.items(), 800u);
}

TEST(Distributions, LatestFavoursTheNewestKeys) {
  const std::uint64_t records = 1000;
  KeyGenerator g({records, 1, Distribution::latest, 0.99, -1}, 0);
  for (int i = 0; i < 100; ++i) g.new_id();  // 100 inserts: ids 1000 .. 1099 are the newest
  const std::uint64_t visible = g.visible();
  ASSERT_EQ(visible, 1100u);
  Rng rng(77);
  const int n = 200000;
  int newest = 0, top10pct = 0;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t id = g.existing_id(rng);
    if (id == 1099) ++newest;
    if (id >= 1000 - 10) ++top10pct;  // the 100 inserted + the 10 newest preloaded = 10%
  }
  const double zeta = Zipfian::zeta(visible, 0.99);
  EXPECT_NEAR(static_cast<double>(newest) / n, 1 / zeta, 0.01);
  double want = 0;
  for (int r = 1; r <= 110; ++r) want += 1.0 / std::pow(r, 0.99);
  EXPECT_NEAR(static_cast<double>(top10pct) / n, want / zeta, 0.03);  // uniform: 0.10
}

TEST(Distributions, SequentialWalksInOrderAndWraps) {
  KeyGenerator g({100, 2, Distribution::sequential, 0.99, -1}, 1);
  Rng rng(1);
  std::uint64_t prev = g.existing_id(rng);
  EXPECT_EQ(prev, 50u) << "thread 1 of 2 starts half-way";
  for (int i = 0; i < 49; ++i) {
    const std::uint64_t id = g.existing_id(rng);
    EXPECT_EQ(id, prev + 1);
    prev = id;
  }
  EXPECT_EQ(g.existing_id(rng), 0u) << "wraps at the end of the visible ids";
  EXPECT_EQ(KeyGenerator::key_of(5, Distribution::sequential), 5u) << "sequential keys are ids";
}

TEST(Distributions, ParseNamesTheAcceptedValues) {
  EXPECT_EQ(parse_distribution("latest"), Distribution::latest);
  try {
    parse_distribution("gaussian");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("zipfian"), std::string::npos);
  }
}

}  // namespace
}  // namespace dptree::bench
