// The concurrent DPTree (§3) on one thread: options, the shared model fixture (with merges
// inline and in the background, reopening now and then), recovery with 1 and 2 threads
// giving identical contents, the §3.4 in-place update and delete. Crash tests: crash_test.cc.
#include "dptree/cdptree.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <random>

#include "cdptree/merge_pool.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/testing/phases.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

std::map<std::string, std::string> small(std::map<std::string, std::string> extra = {}) {
  std::map<std::string, std::string> o{
      {"leaf_capacity", "8"},    {"log_partitions", "4"},     {"log_page_size", "1024"},
      {"merge_ratio", "0.5"},    {"min_merge_records", "64"}, {"psize", "2"},
      {"background_merge", "0"}, {"merge_threads", "1"},      {"recovery_threads", "1"}};
  for (auto& [k, v] : extra) o[k] = v;
  return o;
}

TEST(CDPTreeOptions, DefaultsAreThePapers) {
  CDPTreeOptions o;
  EXPECT_EQ(o.log_partitions, 64u);
  EXPECT_DOUBLE_EQ(o.merge_ratio, 0.07);
  EXPECT_DOUBLE_EQ(o.bloom_error_rate, 0.03);
  EXPECT_EQ(o.leaf_bytes, 8192u);
  EXPECT_EQ(o.log_page_size, 65536u);
  auto pool = pm::Pool::create_in_memory(8u << 20);
  auto t = CDPTree::create(*pool);
  EXPECT_GT(t->stats().leaf_capacity, 300u);  // as many 16-byte slots as fit 8 KB
  EXPECT_LE(t->stats().leaf_capacity, 512u);
}

TEST(CDPTreeOptions, BadOptionsGiveClearErrors) {
  auto msg = [](std::map<std::string, std::string> m) {
    try {
      CDPTreeOptions::from_map(m);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg({{"bogus", "1"}}).find("recovery_threads"), std::string::npos);
  EXPECT_NE(msg({{"merge_threads", "x"}}).find("not a whole number"), std::string::npos);
  EXPECT_NE(msg({{"merge_ratio", "1.5"}}).find("(0, 1)"), std::string::npos);
  EXPECT_NE(msg({{"log_partitions", "0"}}).find("1..4096"), std::string::npos);
  EXPECT_NE(msg({{"background_merge", "yes"}}).find("0 or 1"), std::string::npos);
  EXPECT_NE(msg({{"log_page_size", "1000"}}).find("multiple of 1024"), std::string::npos);
  EXPECT_NE(msg({{"inplace_delete", "on"}}).find("inplace_delete='on' is not a boolean"),
            std::string::npos);
  EXPECT_NE(msg({{"bogus", "1"}}).find("inplace_delete"), std::string::npos);
  EXPECT_TRUE(CDPTreeOptions{}.inplace_delete);  // the paper's §3.4
  EXPECT_FALSE(CDPTreeOptions::from_map({{"inplace_delete", "0"}}).inplace_delete);
  auto o = CDPTreeOptions::from_map({{"recovery_threads", "2"}, {"merge_threads", "3"}});
  EXPECT_EQ(o.recovery_threads, 2u);
  EXPECT_EQ(o.merge_threads, 3u);
  EXPECT_NE(msg({{"merge_nice", "20"}}).find("0..19"), std::string::npos);
  CDPTreeOptions direct;
  direct.merge_nice = 20;
  EXPECT_THROW(direct.validate(), Error);
  EXPECT_EQ(CDPTreeOptions::from_map({{"merge_nice", "7"}}).merge_nice, 7u);
  EXPECT_EQ(CDPTreeOptions{}.merge_nice, 0u);
}

// merge_nice: the pool's threads run at it, and the caller of a batch keeps its own.
TEST(CDPTreeMergePool, WorkersRunAtTheNiceAsked) {
  auto nice_here = [] {
    errno = 0;
    return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  };
  const int mine = nice_here();
  if (mine > 12) GTEST_SKIP() << "this process already runs at nice " << mine;
  cdp::MergePool pool(1, static_cast<unsigned>(mine) + 7);
  std::promise<int> seen;
  pool.post([&] { seen.set_value(nice_here()); });
  EXPECT_EQ(seen.get_future().get(), mine + 7);
  EXPECT_EQ(nice_here(), mine);
}

TEST(CDPTree, RefusesADPTreePoolAndBadValues) {
  auto pool = pm::Pool::create_in_memory(4u << 20);
  auto d = make_index("dptree", pool.get(), {});
  d.reset();
  EXPECT_THROW(make_index("cdptree", pool.get(), {}), Error);
  auto p2 = pm::Pool::create_in_memory(4u << 20);
  auto c = make_index("cdptree", p2.get(), small());
  EXPECT_THROW(c->upsert(1, ~Value{0}), Error);
}

TEST(CDPTree, ModelInlineMerges) {
  ModelConfig c;
  c.index = "cdptree";
  // Removes in place add no buffer entries: a lower trigger keeps merges frequent.
  c.options = small({{"merge_ratio", "0.05"}, {"min_merge_records", "40"}});
  c.ops = 20000;
  c.reopen_every = 7000;  // the counters below are the last instance's (6000 ops)
  auto r = run_model(c);
  EXPECT_GT(r.extra["merges"], 8);
  EXPECT_GT(r.extra["merge_wait_max_ms"], 0) << "a write waits for the merge it runs inline";
  EXPECT_GT(r.extra["merge_partitions"], r.extra["merges"]);  // several partitions each
  EXPECT_GT(r.extra["splits"], 0);
  EXPECT_GT(r.extra["inplace_updates"], 0);
  EXPECT_GT(r.extra["inplace_deletes"], 0);  // removes took the §3.4 path, checked by the model
  EXPECT_GT(r.extra["lazy_rebuilds"], 0);
}

TEST(CDPTree, ModelBackgroundParallelMerges) {
  ModelConfig c;
  c.index = "cdptree";
  c.options = small({{"background_merge", "1"},
                     {"merge_threads", "3"},
                     {"recovery_threads", "2"},
                     {"merge_ratio", "0.1"}});
  c.ops = 20000;
  c.reopen_every = 7000;
  auto r = run_model(c);
  EXPECT_GT(r.extra["merges"], 2);
}

// merge_steps: each merge runs a partition at a time between the writes (reads and scans
// meet the Middle and a half-merged base meanwhile), with reopens while a merge is half done.
TEST(CDPTree, ModelMergeInSteps) {
  ModelConfig c;
  c.index = "cdptree";
  c.options = small({{"merge_steps", "1"}, {"merge_ratio", "0.2"}});
  c.ops = 20000;
  c.reopen_every = 7000;
  auto r = run_model(c);
  EXPECT_GT(r.extra["merges"], 2);
  EXPECT_GT(r.extra["merge_steps_run"], 3 * r.extra["merges"]) << "merges must run in steps";
}

// A merge in steps seen half done: the Middle holds the last Front's writes while later
// writes go to the new Front, every key reads its latest value from whichever holds it, a
// scan returns all of them in order, and the merge ends within the writes that follow.
TEST(CDPTree, MergeInStepsServesReadsHalfDone) {
  auto pool = pm::Pool::create_in_memory(16u << 20);
  CDPTreeOptions o = CDPTreeOptions::from_map(small({{"merge_steps", "1"}}));
  auto t = CDPTree::create(*pool, o);
  std::map<Key, Value> model;
  std::size_t half_done = 0, i = 0;
  for (; i < 20000 && half_done < 50; ++i) {
    const Key k = (i * 7919) % 5000;
    t->upsert(k, i + 1);
    model[k] = i + 1;
    if (t->stats().middle_entries == 0) continue;
    ++half_done;
    for (Key q = 0; q < 5000; q += 97) {
      auto it = model.find(q);
      ASSERT_EQ(t->lookup(q), it == model.end() ? std::nullopt : std::optional<Value>(it->second))
          << "key " << q << " after write " << i;
    }
    std::vector<KV> all;
    t->scan(0, ~std::size_t{0}, all);
    ASSERT_EQ((std::map<Key, Value>(all.begin(), all.end())), model) << "after write " << i;
  }
  EXPECT_EQ(half_done, 50u) << "no write found a merge half done";
  for (std::size_t j = 0; j < 5000 && t->stats().middle_entries != 0; ++j, ++i) {
    const Key k = (i * 7919) % 5000;
    t->upsert(k, i + 1);
    model[k] = i + 1;
  }
  EXPECT_EQ(t->stats().middle_entries, 0u) << "the writes did not finish the merge";
  EXPECT_TRUE(t->check().ok);
}

// The first merge cuts an empty base's entries into ranges of PSize leaves' worth (here 11
// entries). Its top ranges hold only removes (keys inserted and removed in the Front), so
// they make no leaf: the last leaf made must still end at the largest key, and keys above
// every merged one are found, inserted and merged after it. In steps and whole.
TEST(CDPTree, EmptyBaseMergedInRangesEndsAtTheLargestKey) {
  for (const char* steps : {"0", "1"}) {
    SCOPED_TRACE(std::string("merge_steps=") + steps);
    auto pool = pm::Pool::create_in_memory(8u << 20);
    auto t = CDPTree::create(*pool, CDPTreeOptions::from_map(small({{"merge_steps", steps},
                                                                    {"min_merge_records", "100000"},
                                                                    {"inplace_delete", "0"}})));
    for (Key k = 0; k < 100; ++k) t->upsert(k, k + 1);
    for (Key k = 60; k < 100; ++k) ASSERT_TRUE(t->remove(k));
    t->merge();
    EXPECT_EQ(t->stats().front_entries, 0u);
    EXPECT_GT(t->stats().leaves, 1u);
    auto problems = [](const CheckReport& r) {
      std::string all;
      for (const auto& p : r.problems) all += p + "; ";
      return all;
    };
    ASSERT_TRUE(t->check().ok) << problems(t->check());
    for (Key k = 0; k < 100; ++k)
      EXPECT_EQ(t->lookup(k), k < 60 ? std::optional<Value>(k + 1) : std::nullopt) << k;
    t->upsert(~Key{0} - 1, 7);
    t->upsert(1000, 8);
    t->merge();
    ASSERT_TRUE(t->check().ok) << problems(t->check());
    EXPECT_EQ(t->lookup(~Key{0} - 1), std::optional<Value>(7));
    EXPECT_EQ(t->lookup(1000), std::optional<Value>(8));
    std::vector<KV> all;
    t->scan(0, ~std::size_t{0}, all);
    EXPECT_EQ(all.size(), 62u);
  }
}

TEST(CDPTreeOptions, MergeStepsNeedTheWriterToMerge) {
  try {
    CDPTreeOptions::from_map({{"merge_steps", "1"}});
    ADD_FAILURE() << "merge_steps=1 with a background merge was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("background_merge=0"), std::string::npos) << e.what();
  }
}

// split=thirds against the model, merges inline and in the background on three workers, with
// reopens, removes in place and partitions of 4 leaves (most leaves have a neighbour to split
// with): pair splits counted on every thread (the workers' too).
TEST(CDPTree, ModelSplittingInThirds) {
  for (const char* background : {"0", "1"}) {
    SCOPED_TRACE(std::string("background_merge=") + background);
    ModelConfig c;
    c.index = "cdptree";
    c.options = small({{"split", "thirds"},
                       {"psize", "4"},
                       {"background_merge", background},
                       {"merge_threads", "3"},
                       {"merge_ratio", "0.1"}});
    c.ops = 20000;
    c.reopen_every = 7000;
    const std::size_t pairs_before = dptree_pair_splits_total();
    auto r = run_model(c);
    EXPECT_GT(r.extra["merges"], 2);
    EXPECT_GT(r.extra["splits"], 0);
    EXPECT_GT(dptree_pair_splits_total(), pairs_before) << "no leaf split with its neighbour";
  }
}

// One §3.4 path switched off: the model holds, the path is never taken, the other one is.
struct InPlaceOff {
  const char* name;
  const char* option;  // switched off
  const char* off;     // its counter
  const char* on;      // the other path's counter
  int remove_weight;
};

class CDPTreeInPlaceOff : public ::testing::TestWithParam<InPlaceOff> {};

TEST_P(CDPTreeInPlaceOff, Model) {
  ModelConfig c;
  c.index = "cdptree";
  c.options = small({{GetParam().option, "0"}});
  c.ops = 8000;
  c.remove_weight = GetParam().remove_weight;
  auto r = run_model(c);
  EXPECT_EQ(r.extra[GetParam().off], 0);
  EXPECT_GT(r.extra[GetParam().on], 0);
}

INSTANTIATE_TEST_SUITE_P(Paths, CDPTreeInPlaceOff,
                         ::testing::Values(InPlaceOff{"WithoutInPlaceUpdates", "inplace_update",
                                                      "inplace_updates", "inplace_deletes",
                                                      ModelConfig{}.remove_weight},
                                           InPlaceOff{"WithoutInPlaceDeletes", "inplace_delete",
                                                      "inplace_deletes", "inplace_updates", 40}),
                         [](const auto& i) { return std::string(i.param.name); });

// Removes in place of most keys, then merges: leaves emptied of live keys are consolidated
// or dropped, the rest split when reinserted; the model is checked throughout.
TEST(CDPTree, ModelMostlyRemovesInPlace) {
  ModelConfig c;
  c.index = "cdptree";
  c.options = small({{"merge_ratio", "0.2"}});
  c.ops = 12000;
  c.remove_weight = 50;
  c.reopen_every = 5000;
  auto r = run_model(c);
  EXPECT_GT(r.extra["inplace_deletes"], 100);
  EXPECT_GT(r.extra["consolidations"], 0);
}

std::map<Key, Value> contents(const CDPTree& t) {
  std::vector<KV> all;
  t.scan(0, ~std::size_t{0}, all);
  return {all.begin(), all.end()};
}

// Parallel recovery (§4.5): the same pool recovered with 1 and with 2 threads holds the same
// keys and values, and both pass check().
TEST(CDPTree, RecoveryWithOneAndTwoThreadsIsIdentical) {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("cdptree_rec_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::map<Key, Value> model;
  {
    auto pool = pm::Pool::create(dir / "a.pool", 32u << 20);
    CDPTreeOptions o;
    o.leaf_capacity = 32;
    o.log_partitions = 16;
    o.log_page_size = 4096;
    o.min_merge_records = 3000;
    o.background_merge = false;
    auto t = CDPTree::create(*pool, o);
    std::mt19937_64 rng(9);
    for (int i = 0; i < 40000; ++i) {
      Key k = rng() % 20000;
      if (rng() % 5 == 0) {
        t->remove(k);
        model.erase(k);
      } else {
        Value v = rng() % 1000000;
        t->upsert(k, v);
        model[k] = v;
      }
    }
    ASSERT_GT(t->stats().front_entries, 100u);  // the log holds work to replay
  }
  fs::copy_file(dir / "a.pool", dir / "b.pool");
  std::map<Key, Value> got[2];
  for (int i = 0; i < 2; ++i) {
    auto pool = pm::Pool::open(dir / (i ? "b.pool" : "a.pool"));
    CDPTreeOptions o;
    o.recovery_threads = i + 1;
    auto t = CDPTree::open(*pool, o);
    got[i] = contents(*t);
    auto r = t->check();
    EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
    EXPECT_EQ(t->stats().restart_count, 1u);
  }
  EXPECT_EQ(got[0], got[1]);
  EXPECT_EQ(got[0], model);
  fs::remove_all(dir);
}

// A new tree of keys 0..499 (value = key), merged: all in the base tree.
std::unique_ptr<CDPTree> base_only(pm::Pool& pool, const CDPTreeOptions& o) {
  auto t = CDPTree::create(pool, o);
  for (Key k = 0; k < 500; ++k) t->upsert(k, k);
  t->merge();
  EXPECT_EQ(t->stats().front_entries, 0u) << "the merge left records in the Front";
  return t;
}

// §3.4: a key only in the base tree is updated in place, and the update is durable.
TEST(CDPTree, WordSizedUpdateInPlaceIsDurable) {
  auto pool = pm::Pool::create_in_memory(8u << 20);
  CDPTreeOptions o = CDPTreeOptions::from_map(small());
  {
    auto t = base_only(*pool, o);
    auto before = t->stats();
    EXPECT_TRUE(t->update(7, 70));
    t->overwrite(8, 80);
    auto after = t->stats();
    EXPECT_EQ(after.inplace_updates, before.inplace_updates + 2);
    EXPECT_EQ(after.front_entries, 0u);  // no log record, no buffer entry
    EXPECT_EQ(t->lookup(7), std::optional<Value>(70));
    EXPECT_FALSE(t->update(100000, 1));  // absent: nothing written
    EXPECT_EQ(t->stats().front_entries, 0u);
    t->upsert(9, 90);  // a blind upsert never searches the base tree: logged into the Front
    EXPECT_EQ(t->stats().inplace_updates, after.inplace_updates);
    EXPECT_EQ(t->stats().front_entries, 1u);
    t->overwrite(100001, 5);  // believed present but absent: written as an upsert
    EXPECT_EQ(t->stats().front_entries, 2u);
  }
  auto t = CDPTree::open(*pool, o);
  EXPECT_EQ(t->lookup(7), std::optional<Value>(70));
  EXPECT_EQ(t->lookup(8), std::optional<Value>(80));
  EXPECT_EQ(t->lookup(9), std::optional<Value>(90));
  EXPECT_EQ(t->lookup(100001), std::optional<Value>(5));
  EXPECT_TRUE(t->check().ok);
}

double fact(const CheckReport& r, const std::string& name) {
  for (auto& [n, x] : r.facts)
    if (n == name) return x;
  ADD_FAILURE() << "check() reports no fact " << name;
  return -1;
}

// §3.4 delete: a key only in the base tree is deleted with the tombstone bit in place (no
// log record, no buffer entry), durably; a second remove, an update and lookups see it
// absent; the next merge drops the entry, and the key can be inserted again.
TEST(CDPTree, WordSizedDeleteInPlaceIsDurableAndMergedAway) {
  auto pool = pm::Pool::create_in_memory(8u << 20);
  CDPTreeOptions o = CDPTreeOptions::from_map(small());
  {
    auto t = base_only(*pool, o);
    auto before = t->stats();
    ASSERT_EQ(before.base_records, 500u);
    EXPECT_TRUE(t->remove(7));
    EXPECT_TRUE(t->remove(8));
    auto after = t->stats();
    EXPECT_EQ(after.inplace_deletes, before.inplace_deletes + 2);
    EXPECT_EQ(after.front_entries, 0u);  // no log record, no buffer entry
    EXPECT_EQ(after.records, 498u);
    EXPECT_EQ(after.base_records, 498u);
    EXPECT_EQ(t->lookup(7), std::nullopt);
    EXPECT_FALSE(t->remove(7));      // absent now: reported absent, nothing written
    EXPECT_FALSE(t->update(7, 70));  // not resurrected by an update in place
    EXPECT_FALSE(t->remove(100000));
    EXPECT_EQ(t->stats().inplace_deletes, after.inplace_deletes);
    EXPECT_EQ(t->stats().front_entries, 0u);
    std::vector<KV> got;
    t->scan(5, 4, got);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[1].first, 6u);
    EXPECT_EQ(got[2].first, 9u);    // 7 and 8 skipped
    EXPECT_TRUE(t->insert(8, 81));  // logged: the Front's entry hides the base tombstone
    EXPECT_EQ(t->lookup(8), std::optional<Value>(81));
    auto r = t->check();
    EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
    EXPECT_EQ(fact(r, "base_tombstones"), 2);
  }
  {
    // A restart (a crash: nothing is written on close): the tombstones are durable; the
    // metadata is rebuilt lazily, and keys 7 and 8 stay as they were.
    auto t = CDPTree::open(*pool, o);
    EXPECT_EQ(t->lookup(7), std::nullopt);
    EXPECT_EQ(t->lookup(8), std::optional<Value>(81));
    EXPECT_EQ(t->stats().records, 499u);
    auto r = t->check();
    EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
    EXPECT_EQ(fact(r, "base_tombstones"), 2);
    EXPECT_TRUE(t->remove(9));  // in place, also after the restart
    EXPECT_EQ(t->stats().inplace_deletes, 1u);
    t->merge();  // the first merge after the restart scans every leaf
    r = t->check();
    EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
    EXPECT_EQ(fact(r, "base_tombstones"), 0);
    EXPECT_EQ(fact(r, "base_records"), 498);
    EXPECT_EQ(t->stats().base_records, 498u);
    EXPECT_EQ(t->lookup(8), std::optional<Value>(81));
    EXPECT_TRUE(t->insert(7, 70));
    EXPECT_TRUE(t->remove(10));  // in place, then merged away by a merge that marks leaves
    t->merge();
    EXPECT_EQ(t->lookup(7), std::optional<Value>(70));
    EXPECT_EQ(t->lookup(10), std::nullopt);
    r = t->check();
    EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
    EXPECT_EQ(fact(r, "base_tombstones"), 0);
    EXPECT_EQ(fact(r, "base_records"), 498);
  }
}

// The guard of §3.4: a key with an entry in the Front (here an upsert whose log record is
// live) is deleted by a logged tombstone, never in place, so the log never holds a record
// older than a tombstone written in place; after a restart the replay cannot resurrect it.
TEST(CDPTree, DeleteOfAKeyInTheFrontIsLogged) {
  auto pool = pm::Pool::create_in_memory(8u << 20);
  // No in-place update: the upsert below must leave a Front entry (and a log record).
  CDPTreeOptions o =
      CDPTreeOptions::from_map(small({{"min_merge_records", "100000"}, {"inplace_update", "0"}}));
  {
    auto t = CDPTree::create(*pool, o);
    for (Key k = 0; k < 300; ++k) t->upsert(k, k);
    t->merge();
    t->upsert(5, 55);  // k in base, then a logged upsert: Front entry
    ASSERT_EQ(t->stats().front_entries, 1u);
    EXPECT_TRUE(t->remove(5));
    EXPECT_EQ(t->stats().inplace_deletes, 0u);
    EXPECT_EQ(t->stats().front_entries, 1u);  // the tombstone replaced the upsert
    EXPECT_TRUE(t->remove(6));                // only in the base: in place
    EXPECT_EQ(t->stats().inplace_deletes, 1u);
  }
  auto t = CDPTree::open(*pool, o);  // replays the log holding 5's upsert and tombstone
  EXPECT_EQ(t->lookup(5), std::nullopt);
  EXPECT_EQ(t->lookup(6), std::nullopt);
  EXPECT_EQ(t->stats().records, 298u);
  EXPECT_TRUE(t->check().ok);
}

// With inplace_delete=0 every remove is logged, and a pool with tombstones in place from an
// earlier run is still read and merged correctly.
TEST(CDPTree, InPlaceDeleteOffLogsEveryRemove) {
  auto pool = pm::Pool::create_in_memory(8u << 20);
  CDPTreeOptions on = CDPTreeOptions::from_map(small());
  CDPTreeOptions off = CDPTreeOptions::from_map(small({{"inplace_delete", "0"}}));
  {
    auto t = CDPTree::create(*pool, on);
    for (Key k = 0; k < 300; ++k) t->upsert(k, k);
    t->merge();
    EXPECT_TRUE(t->remove(1));
    EXPECT_EQ(t->stats().inplace_deletes, 1u);
  }
  auto t = CDPTree::open(*pool, off);
  EXPECT_TRUE(t->remove(2));
  EXPECT_EQ(t->stats().inplace_deletes, 0u);
  EXPECT_EQ(t->stats().front_entries, 1u);
  EXPECT_EQ(t->lookup(1), std::nullopt);
  t->merge();
  auto r = t->check();
  EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems[0]);
  EXPECT_EQ(fact(r, "base_tombstones"), 0);
  EXPECT_EQ(fact(r, "base_records"), 298);
}

}  // namespace
}  // namespace dptree::testing
