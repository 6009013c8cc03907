// The runner end to end on the volatile indexes and on a minimal persistent test index.
#include "bench/runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"

namespace dptree::bench {
namespace {

RunSpec small(const std::string& index, const std::string& workload) {
  RunSpec s;
  s.index = index;
  s.workload = find_workload(workload);
  s.records = 2000;
  s.ops = 6000;
  s.pm_mode = pm::Mode::dram;
  s.sample_rate = 0.5;
  return s;
}

TEST(Runner, RunsTheRequestedOperations) {
  for (const char* index : {"btree", "stdmap"}) {
    RunSpec s = small(index, "mixed");
    RunResult r = run(s);
    EXPECT_EQ(r.ops, 6000u);
    const auto inserts = r.ops_by_kind[static_cast<int>(OpKind::insert)];
    EXPECT_GT(inserts, 0u);
    // Inserts add new keys and nothing removes: the index ends with exactly this many.
    EXPECT_EQ(r.final_records, 2000u + inserts) << index;
    // Single thread, no removes: every lookup hits.
    EXPECT_EQ(r.reads_found, r.ops_by_kind[static_cast<int>(OpKind::read)]) << index;
    EXPECT_GT(r.latency_ns.samples, 0u);
    EXPECT_LE(r.latency_ns.p50, r.latency_ns.p99);
    EXPECT_LE(r.latency_ns.p99, r.latency_ns.max);
    EXPECT_GT(r.dram_bytes, 0u);
    EXPECT_FALSE(r.recovery_seconds.has_value());
    EXPECT_EQ(r.pm_mode, "dram");
    // The process's CPU time over the run: the worker's at least, and it was busy throughout.
    EXPECT_GT(r.cpu_seconds, 0) << index;
  }
}

TEST(Runner, SameSeedSameRun) {
  RunSpec s = small("btree", "ycsb_d");
  RunResult a = run(s), b = run(s);
  for (std::size_t k = 0; k < kOpKinds; ++k) EXPECT_EQ(a.ops_by_kind[k], b.ops_by_kind[k]);
  EXPECT_EQ(a.reads_found, b.reads_found);
  EXPECT_EQ(a.final_records, b.final_records);
}

// One operation in every 1 / rate is timed (a fixed stride from a random first one in each
// batch): exactly half at 0.5, none at 0. Drawing the operations is timed apart.
TEST(Runner, SamplesOneOperationInEveryStride) {
  RunSpec s = small("btree", "read_only");
  RunResult r = run(s);
  EXPECT_EQ(r.latency_ns.samples, 3000u);
  EXPECT_GT(r.stream_seconds, 0);
  s.sample_rate = 0;
  r = run(s);
  EXPECT_EQ(r.latency_ns.samples, 0u);
  EXPECT_EQ(r.ops, 6000u);
}

// The tight loop runs the stream a run of the same spec would: lookups of present keys all
// found (their values summed), inserts of new keys that later runs on the load count.
TEST(Runner, TightLoopRunsTheRunsOperations) {
  RunSpec reads = small("btree", "read_only"), writes = small("btree", "insert_only");
  auto loaded = load(reads, {writes, writes});
  const TightResult t = run_tight(*loaded, reads);
  EXPECT_EQ(t.ops, 6000u);
  EXPECT_NE(t.checksum, 0u) << "every lookup's value is used";
  EXPECT_GT(t.throughput_mops, 0);
  EXPECT_EQ(run_tight(*loaded, writes).ops, 6000u);
  const RunResult r = run_on(*loaded, writes);
  EXPECT_EQ(r.final_records, 2000u + 6000u + 6000u) << "the loop's inserts were new keys";
  EXPECT_THROW(run_tight(*loaded, small("btree", "mixed")), Error) << "one kind of operation";
}

TEST(Runner, SeveralThreadsShareTheOperations) {
  RunSpec s = small("btree", "insert_only");
  s.threads = 2;
  s.pin = true;
  RunResult r = run(s);
  EXPECT_EQ(r.ops, 6000u);
  EXPECT_EQ(r.final_records, 8000u) << "threads insert disjoint keys";
}

// --load-once: runs share one preload; each starts from what the earlier ones left and its
// inserts are keys no earlier run added (else the counts below would fall short).
TEST(Runner, RunsOnASharedLoadAddNewKeysEachTime) {
  for (unsigned threads : {1u, 2u}) {
    const char* index = threads == 1 ? "btree" : "olc-btree";
    std::vector<RunSpec> runs;
    for (const char* w : {"insert_only", "mixed", "insert_only", "read_only"}) {
      runs.push_back(small(index, w));
      runs.back().threads = threads;
    }
    auto loaded = load(runs.front(), runs);
    std::uint64_t expect = 2000;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      RunResult r = run_on(*loaded, runs[i]);
      EXPECT_EQ(r.records, expect) << index << " run " << i;
      EXPECT_EQ(r.shared_load, i > 0);
      EXPECT_EQ(r.preload_seconds > 0, i == 0) << "only the first run reports the preload";
      expect += r.ops_by_kind[static_cast<int>(OpKind::insert)];
      EXPECT_EQ(r.final_records, expect) << index << " run " << i;
      if (threads == 1) {
        EXPECT_EQ(r.reads_found, r.ops_by_kind[static_cast<int>(OpKind::read)]) << index;
      }
    }
    EXPECT_GT(expect, 2000u + 2 * 6000u);
  }
}

TEST(Runner, ASharedLoadRefusesARunItWasNotLoadedFor) {
  RunSpec s = small("btree", "read_only");
  auto loaded = load(s, {s});
  RunSpec other = s;
  other.index = "stdmap";
  EXPECT_THROW(run_on(*loaded, other), Error);
  other = s;
  other.records = 10;
  EXPECT_THROW(run_on(*loaded, other), Error);
  EXPECT_NO_THROW(run_on(*loaded, s));
}

TEST(Runner, TimedRunStops) {
  RunSpec s = small("btree", "read_only");
  s.ops = 0;
  s.seconds = 0.05;
  RunResult r = run(s);
  // It ran until its duration had passed (not for a count of operations), then stopped; the
  // duration is wall time, the drawing of operations that `seconds` leaves out included.
  EXPECT_GT(r.ops, 0u);
  EXPECT_GE(r.seconds + r.stream_seconds, s.seconds);
  // Every operation counted once, each a lookup of a loaded key, and nothing written.
  EXPECT_EQ(r.ops_by_kind[static_cast<int>(OpKind::read)], r.ops);
  EXPECT_EQ(r.reads_found, r.ops);
  EXPECT_EQ(r.final_records, s.records);
  EXPECT_GT(r.latency_ns.samples, 0u);
}

TEST(Runner, RefusesThreadsOnANonConcurrentIndex) {
  RunSpec s = small("stdmap", "read_only");
  s.threads = 2;
  try {
    run(s);
    FAIL() << "stdmap ran on 2 threads";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not safe for concurrent use"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--threads 1"), std::string::npos);
  }
}

// A minimal persistent index: a DRAM map, plus every upsert appended to a PM array with one
// flush and one fence. Enough to check the runner's pool handling and PM counters.
struct Root {
  std::uint64_t count;  // entries follow the 64-byte header, 16 bytes each: 4 per cache line
  std::uint64_t pad[7];
  KV* entries() { return reinterpret_cast<KV*>(this + 1); }
};

class PmLogIndex final : public Index {
 public:
  static constexpr std::size_t kBytes = 4 << 20;
  explicit PmLogIndex(pm::Pool& pool) {
    root_ = pool.root<Root>();
    if (!root_) {
      auto blk = pool.allocator().reserve(kBytes);
      std::memset(pool.at(blk), 0, kBytes);
      pm::persist(pool.at(blk), kBytes);
      pool.allocator().activate(pool.root_word(), blk);
      root_ = pool.root<Root>();
    }
    for (std::uint64_t i = 0; i < root_->count; ++i)
      map_[root_->entries()[i].first] = root_->entries()[i].second;
  }
  std::string name() const override { return "test_pmlog"; }
  void upsert(Key k, Value v) override {
    KV& e = root_->entries()[root_->count];
    e = {k, v};
    pm::persist(&e, sizeof(e));
    ++root_->count;  // counted only to rebuild on open; not persisted, to keep 1 flush per op
    map_[k] = v;
  }
  bool insert(Key k, Value v) override {
    if (map_.count(k)) return false;
    upsert(k, v);
    return true;
  }
  bool update(Key k, Value v) override {
    if (!map_.count(k)) return false;
    upsert(k, v);
    return true;
  }
  bool remove(Key k) override { return map_.erase(k) > 0; }
  std::optional<Value> lookup(Key k) const override {
    auto it = map_.find(k);
    return it == map_.end() ? std::nullopt : std::optional<Value>(it->second);
  }
  std::size_t scan(Key, std::size_t, std::vector<KV>&) const override { return 0; }
  IndexStats stats() const override {
    IndexStats s;
    s.records = map_.size();
    s.pm_bytes = kBytes;
    s.dram_bytes = map_.size() * 64;
    return s;
  }

 private:
  Root* root_ = nullptr;
  std::map<Key, Value> map_;
};

void register_test_index() {
  static bool done = false;
  if (done) return;
  done = true;
  register_index({"test_pmlog", "test only", true, false, [](const IndexConfig& c) {
                    if (!c.pool) throw Error(Errc::invalid_argument, "test_pmlog needs a pool");
                    return std::unique_ptr<Index>(new PmLogIndex(*c.pool));
                  }});
}

std::filesystem::path temp_pool(const char* tag) {
  return pm::default_pool_dir() / ("dptree-runner-test-" + std::to_string(getpid()) + tag);
}

TEST(Runner, PersistentIndexGetsAPoolAndCountsFlushes) {
  register_test_index();
  RunSpec s = small("test_pmlog", "insert_only");
  s.records = 1000;
  s.ops = 4000;
  s.pool_path = temp_pool("a");
  s.recovery = true;
  RunResult r = run(s);
  EXPECT_DOUBLE_EQ(r.flushes_per_op, 1.0);
  EXPECT_DOUBLE_EQ(r.fences_per_op, 1.0);
  EXPECT_DOUBLE_EQ(r.pm_bytes_written_per_op, 64.0);
  EXPECT_EQ(r.pm_bytes, PmLogIndex::kBytes);
  EXPECT_TRUE(r.recovery_seconds.has_value());
  EXPECT_TRUE(r.pool_open_seconds.has_value()) << "the pool's open is timed apart";
  EXPECT_EQ(r.pool, s.pool_path.string());
  EXPECT_FALSE(std::filesystem::exists(s.pool_path)) << "the pool is removed after the run";
}

// Every run records the machine state beside its figures: the pool's file system as
// /proc/mounts has it, the THP settings as single values, the load around the timed phase.
TEST(Runner, RecordsTheMachineState) {
  register_test_index();
  RunSpec s = small("test_pmlog", "insert_only");
  s.pool_path = temp_pool("machine");
  const MachineState m = run(s).machine;
  EXPECT_FALSE(m.kernel.empty());
  EXPECT_GE(m.cores, 1u);
  EXPECT_EQ(m.pool_dir, s.pool_path.parent_path().string());
  EXPECT_FALSE(m.pool_fs.empty()) << "every folder is under some mount";
  for (const std::string* thp : {&m.thp_enabled, &m.thp_defrag, &m.thp_shmem_enabled})
    EXPECT_EQ(thp->find_first_of("[] "), std::string::npos) << *thp << ": one selected value";
  EXPECT_GE(m.load1_before, 0.0);
  EXPECT_GE(m.load1_after, 0.0);
}

TEST(Runner, KeepLeavesThePoolAndAnExistingPoolIsRefused) {
  register_test_index();
  RunSpec s = small("test_pmlog", "read_only");
  s.pool_path = temp_pool("b");
  s.keep_pool = true;
  run(s);
  EXPECT_TRUE(std::filesystem::exists(s.pool_path));
  // Running again on the kept file is refused and leaves it alone.
  s.keep_pool = false;
  EXPECT_THROW(run(s), Error);
  EXPECT_TRUE(std::filesystem::exists(s.pool_path)) << "a refused pool must not be deleted";
  std::filesystem::remove(s.pool_path);
}

// A buffering index pays for the merges its writes cause: the preload is drained before the
// first run, and a run that writes drains inside its timed phase, so DPTree ends every run
// with an empty buffer and the drain's time counted in the run's.
double stat(const RunResult& r, const std::string& key) {
  for (auto& [k, v] : r.index_stats)
    if (k == key) return v;
  ADD_FAILURE() << "no index stat " << key;
  return -1;
}

TEST(Runner, BufferedWritesAreDrainedAndTimed) {
  RunSpec s = small("dptree", "read_only");
  s.records = 5000;
  s.pool_path = temp_pool("c");
  auto loaded = load(s, {s});
  RunResult reads = run_on(*loaded, s);
  EXPECT_EQ(stat(reads, "buffer_entries"), 0.0) << "the preload's buffer was merged first";
  EXPECT_EQ(reads.drain_seconds, 0.0) << "a run without writes drains nothing";
  const double merges_before = stat(reads, "merges");
  s.workload = find_workload("insert_only");
  s.ops = 300;  // far below the merge threshold: only the drain merges them
  RunResult writes = run_on(*loaded, s);
  EXPECT_EQ(stat(writes, "buffer_entries"), 0.0);
  EXPECT_EQ(stat(writes, "merges"), merges_before + 1);
  EXPECT_GT(writes.drain_seconds, 0.0);
  EXPECT_GE(writes.seconds, writes.drain_seconds) << "the drain is part of the run";
  EXPECT_EQ(writes.final_records, 5300u);
}

TEST(Runner, VolatileIndexesNeedNoPool) {
  RunSpec s = small("btree", "read_only");
  s.recovery = true;  // not measured for a volatile index
  RunResult r = run(s);
  EXPECT_TRUE(r.pool.empty());
  EXPECT_FALSE(r.recovery_seconds.has_value());
  EXPECT_EQ(r.flushes_per_op, 0.0);
}

// String keys (bench/string_keys.h) drive the string form of an index.
RunSpec string_run(const std::string& index, const std::string& workload, KeyFormat key) {
  RunSpec s = small(index, workload);
  s.key = key;
  return s;
}

TEST(StringRuns, DriveTheStringForm) {
  for (const KeyFormat& key :
       {KeyFormat{.type = KeyType::string, .set = KeySet::u64be},
        KeyFormat{.type = KeyType::string, .set = KeySet::random, .max_bytes = 100}}) {
    for (const char* w : {"mixed", "ycsb_e", "ycsb_f", "read_only", "insert_only"}) {
      RunResult r = run(string_run("absl-btree", w, key));
      EXPECT_EQ(r.ops, 6000u) << w;
      const auto inserts = r.ops_by_kind[static_cast<int>(OpKind::insert)];
      EXPECT_EQ(r.final_records, 2000u + inserts) << w << ": inserts are new keys";
      // No removes and one thread: every lookup (and read-modify-write) finds its key.
      EXPECT_EQ(r.reads_found, r.ops_by_kind[static_cast<int>(OpKind::read)] +
                                   r.ops_by_kind[static_cast<int>(OpKind::rmw)])
          << w;
      EXPECT_EQ(r.key_type, KeyType::string);
      EXPECT_EQ(r.key_set, key.set);
      EXPECT_EQ(r.key_max_bytes, key.max_bytes);
    }
  }
}

TEST(StringRuns, AbsentReadsMissWithStringKeys) {
  RunResult r =
      run(string_run("absl-btree", "read_absent",
                     KeyFormat{.type = KeyType::string, .set = KeySet::random, .max_bytes = 40}));
  EXPECT_GT(r.ops_by_kind[static_cast<int>(OpKind::read)], 0u);
  EXPECT_EQ(r.reads_found, 0u);
}

TEST(StringRuns, AnIntegerOnlyIndexIsRefusedNamingTheStringOnes) {
  try {
    run(string_run("stdmap", "read_only",
                   KeyFormat{.type = KeyType::string, .set = KeySet::u64be}));
    FAIL() << "stdmap ran string keys";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("absl-btree"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--key-type u64"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dptree::bench
