// DPTree over string keys under the crash simulator: a random workload over mixed-length keys
// (string_keys.h) on a `sim` pool, a crash image captured at every fence and at one in 8
// flushes, with random eviction of dirty units, in 64-byte and 8-byte atomicity. Every image
// is opened (recovery runs) and must pass check() (leaf key bytes reached exactly once, no
// leaked block, the log decodes) and hold every acknowledged write, the write in flight all
// or nothing. Some images have their recovery crashed at every event; some keep working and
// are crashed again. DPTREE_CRASH_SCALE multiplies the workload.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "dptree/pm/pool.h"
#include "dptree/pm/sim.h"
#include "dptree/testing/phases.h"
#include "fixtures/crash_fixture.h"
#include "string_keys.h"

namespace dptree::testing {
namespace {

using Model = std::map<std::string, Value>;

struct Inflight {
  bool active = false;
  std::string key;
  std::optional<Value> before, after;
};

class StringCrashRun {
 public:
  StringCrashRun(std::uint64_t seed, pm::Unit unit)
      : seed_(seed), unit_(unit), rng_(seed * 7919 + 1), keys_(mixed_string_keys(160, seed)) {}

  void run(std::size_t ops) {
    struct ModeScope {
      ModeScope() { pm::set_mode(pm::Mode::sim); }
      ~ModeScope() { pm::set_mode(pm::Mode::dram); }
    } mode;
    auto pool = pm::Pool::create_in_memory(2u << 20);
    auto idx = make_string_index(*pool, small_string_options());
    Model model;
    workload(*pool, *idx, model, ops, seed_, 0);
  }

  std::map<std::string, std::size_t> per_phase;
  std::size_t images = 0, recovery_images = 0, continued_images = 0;

 private:
  pm::CaptureOptions capture_options(std::uint64_t seq) {
    static const double evict[] = {0.0, 0.1, 0.5, 1.0};
    return pm::CaptureOptions{seq * 1000003 + rng_(), evict[rng_() % 4], (rng_() % 3) * 0.5, unit_};
  }

  void workload(pm::Pool& pool, StringIndex& idx, Model& model, std::size_t ops, std::uint64_t seed,
                int depth) {
    Inflight fl;
    pool.sim()->set_hook([&](const pm::Event& e) {
      if (e.kind == pm::EventKind::flush && rng_() % 8 != 0) return;
      if (depth && rng_() % 3 != 0) return;
      ++per_phase[to_string(dptree_current_phase())];
      continued_images += depth;
      guard("an image", [&] { verify(e.sim->capture(capture_options(e.seq)), model, fl, depth); });
    });
    std::mt19937_64 rng(seed);
    for (std::size_t op = 0; op < ops && !::testing::Test::HasFailure(); ++op) {
      const std::string& k = keys_[rng() % keys_.size()];
      const Value v = rng() % 1000000007;
      auto m = model.find(k);
      std::optional<Value> before;
      if (m != model.end()) before = m->second;
      fl = Inflight{true, k, before, before};
      const int r = static_cast<int>(rng() % 100);
      if (r < 25) {
        fl.after.reset();
        EXPECT_EQ(idx.remove(k), before.has_value());
      } else if (r < 40) {
        if (!before) fl.after = v;
        EXPECT_EQ(idx.insert(k, v), !before.has_value());
      } else if (r < 50) {
        if (before) fl.after = v;
        EXPECT_EQ(idx.update(k, v), before.has_value());
      } else if (r < 90) {
        fl.after = v;
        idx.upsert(k, v);
      } else {
        EXPECT_EQ(idx.lookup(k), before);
      }
      if (fl.after)
        model[k] = *fl.after;
      else
        model.erase(k);
      fl.active = false;
    }
    pool.sim()->set_hook(nullptr);
  }

  void verify(pm::Image img, const Model& model, const Inflight& fl, int depth) {
    if (::testing::Test::HasFailure()) return;
    ++images;
    const bool crash_recovery = depth == 0 && ++n_recovery_ % 150 == 0;
    const bool keep_working = depth == 0 && ++n_continue_ % 80 == 0;
    std::vector<pm::Image> inner;
    pm::Simulator::Hook hook;
    if (crash_recovery)
      hook = [&](const pm::Event& e) {
        ++per_phase["recovery"];
        inner.push_back(e.sim->capture(capture_options(e.seq)));
      };
    const std::string where = "image " + std::to_string(images);
    auto pool = pm::Pool::open_image(std::move(img), hook);
    std::unique_ptr<StringIndex> idx;
    guard(where + ": recovery", [&] { idx = make_string_index(*pool, small_string_options()); });
    pool->sim()->set_hook(nullptr);
    if (!idx) return;
    Model seen = expect_state(*idx, model, fl, where);
    for (auto& im : inner) {
      ++images;
      ++recovery_images;
      auto p2 = pm::Pool::open_image(std::move(im));
      std::unique_ptr<StringIndex> i2;
      guard(where + ", crashed in recovery",
            [&] { i2 = make_string_index(*p2, small_string_options()); });
      if (i2) expect_state(*i2, model, fl, where + ", crashed in recovery");
      if (::testing::Test::HasFailure()) return;
    }
    if (keep_working && !::testing::Test::HasFailure())
      workload(*pool, *idx, seen, 100, rng_(), depth + 1);
  }

  Model expect_state(const StringIndex& idx, const Model& model, const Inflight& fl,
                     const std::string& where) {
    Model got;
    const CheckReport r = idx.check();
    if (!r.ok) {
      ADD_FAILURE() << where << " (phase " << to_string(dptree_current_phase())
                    << "): check() failed: " << r.problems.front();
      return got;
    }
    std::vector<StringKV> all;
    idx.scan(std::string(1, '\0'), model.size() + 10, all);
    for (auto& kv : all) got.insert(kv);
    for (const auto& [k, v] : model)
      if (!(fl.active && k == fl.key) && (!got.contains(k) || got[k] != v)) {
        ADD_FAILURE() << where << ": an acknowledged key of " << k.size()
                      << " bytes lost or changed";
        return got;
      }
    for (const auto& [k, v] : got)
      if (!(fl.active && k == fl.key) && !model.contains(k)) {
        ADD_FAILURE() << where << ": a key of " << k.size() << " bytes never acknowledged";
        return got;
      }
    if (fl.active) {
      std::optional<Value> now;
      if (auto g = got.find(fl.key); g != got.end()) now = g->second;
      if (now != fl.before && now != fl.after)
        ADD_FAILURE() << where << ": the key in flight holds neither its old nor its new value";
      if (idx.lookup(fl.key) != now) ADD_FAILURE() << where << ": lookup disagrees with scan";
    }
    return got;
  }

  std::uint64_t seed_;
  pm::Unit unit_;
  std::mt19937_64 rng_;
  std::vector<std::string> keys_;
  std::size_t n_recovery_ = 0, n_continue_ = 0;
};

class DPTreeStringCrash : public ::testing::TestWithParam<SeedUnit> {};

TEST_P(DPTreeStringCrash, EveryImageRecoversWithAcknowledgedOps) {
  StringCrashRun run(GetParam().seed, GetParam().unit);
  run.run(400 * crash_scale());
  ASSERT_FALSE(HasFailure());
  std::printf("images %zu (recovery %zu, continued %zu):%s\n", run.images, run.recovery_images,
              run.continued_images, phase_counts(run.per_phase).c_str());
  expect_crashed_in({"log_append", "merge_start", "upsert_merge", "flush", "version_flip",
                     "garbage_collection", "recovery"},
                    run.per_phase);
  EXPECT_GT(run.recovery_images, 0u);
  EXPECT_GT(run.continued_images, 0u);
}

INSTANTIATE_TEST_SUITE_P(Units, DPTreeStringCrash,
                         ::testing::Values(SeedUnit{1, pm::Unit::line64},
                                           SeedUnit{2, pm::Unit::word8}),
                         seed_unit_name);

}  // namespace
}  // namespace dptree::testing
