// WORT's crash consistency: the steps of its writes, each crashed.
//  - A split that puts a new node above an existing one publishes the new node, then rewrites
//    the old node's header; a crash between the two leaves a stale header, which recovery
//    finds (its depth is not the node's depth) and rebuilds from a key below. Likewise a
//    collapse, which moves a node up.
//  - Random workloads crashed at their flushes and fences in every phase, in 64-byte and
//    8-byte units (WORT claims only 8-byte failure atomicity), with crashes inside recovery.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "baselines/wort/wort.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

struct SimMode {
  SimMode() { pm::set_mode(pm::Mode::sim); }
  ~SimMode() { pm::set_mode(pm::Mode::dram); }
};

// Runs `op` on a WORT holding `keys` (key = value) and opens the image captured at each of
// its flushes and fences: every one recovers to a checked trie holding `keys` with the op
// either not done or done (`after`). Returns the recovered images that had a header fixed;
// `header_phase_images` counts those captured between the publish and the header rewrite.
std::size_t crash_every_event(const std::vector<Key>& keys, const std::function<void(Index&)>& op,
                              const std::map<Key, Value>& after, pm::Unit unit,
                              std::size_t& header_phase_images) {
  SimMode mode;
  auto pool = pm::Pool::create_in_memory(1 << 20);
  auto idx = make_index("wort", pool.get(), {});
  std::map<Key, Value> before;
  for (Key k : keys) idx->upsert(k, k), before[k] = k;
  std::vector<std::pair<pm::Image, std::string>> images;
  std::uint64_t seed = 1;
  pool->sim()->set_hook([&](const pm::Event& e) {
    std::string phase = wort_current_phase();
    // Nothing that was flushed but not fenced lands, nor anything evicted: the image is
    // exactly what the fences made durable.
    images.emplace_back(e.sim->capture({seed++, 0.0, 0.0, unit}), phase);
    images.emplace_back(e.sim->capture({seed++, 1.0, 1.0, unit}), phase);
  });
  op(*idx);
  pool->sim()->set_hook(nullptr);
  idx.reset();
  std::size_t fixed = 0;
  for (auto& [img, phase] : images) {
    auto p = pm::Pool::open_image(std::move(img));
    auto r = recover_or_fail("wort", *p, {}, "image in phase " + phase);
    if (!r) continue;
    expect_check_ok(*r, "image in phase " + phase);
    std::vector<KV> all;
    r->scan(0, 100, all);
    std::map<Key, Value> got(all.begin(), all.end());
    EXPECT_TRUE(got == before || got == after) << "image in phase " << phase;
    if (extra_stat(*r, "headers_fixed") > 0) {
      ++fixed;
      if (phase == "header") ++header_phase_images;
    }
    // A second open finds nothing left to fix: the rewrite was made durable.
    r.reset();
    r = make_index("wort", p.get(), {});
    EXPECT_EQ(extra_stat(*r, "headers_fixed"), 0) << "image in phase " << phase;
  }
  return fixed;
}

TEST(WortCrash, SplitAboveANodeCrashedBetweenPublishAndHeader) {
  for (pm::Unit unit : {pm::Unit::line64, pm::Unit::word8}) {
    std::size_t in_header = 0;
    // The node of 0x10.. 0x12 branches at digit 15 with a 14-digit prefix; 0x100 leaves that
    // prefix at digit 13, so the new node goes above it and its header is rewritten.
    std::size_t fixed = crash_every_event(
        {0x10, 0x11, 0x12}, [](Index& i) { i.upsert(0x100, 0x100); },
        {{0x10, 0x10}, {0x11, 0x11}, {0x12, 0x12}, {0x100, 0x100}}, unit, in_header);
    ASSERT_FALSE(HasFailure());
    EXPECT_GT(in_header, 0u) << "no image between the publish and the header rewrite";
    EXPECT_GE(fixed, in_header);
  }
}

TEST(WortCrash, CollapseCrashedBetweenPublishAndHeader) {
  for (pm::Unit unit : {pm::Unit::line64, pm::Unit::word8}) {
    std::size_t in_header = 0;
    // Removing 0x100 leaves its node one child, the node of 0x10..0x12, which moves up.
    std::size_t fixed = crash_every_event(
        {0x10, 0x11, 0x12, 0x100}, [](Index& i) { i.remove(0x100); },
        {{0x10, 0x10}, {0x11, 0x11}, {0x12, 0x12}}, unit, in_header);
    ASSERT_FALSE(HasFailure());
    EXPECT_GT(in_header, 0u) << "no image between the publish and the header rewrite";
    EXPECT_GE(fixed, in_header);
  }
}

// Random workloads on small keys (long shared prefixes: headers hold 12 of them) and on keys
// spread over 40 bits, crashed in every phase of WORT's writes.
class WortCrashRuns : public ::testing::TestWithParam<SeedUnit> {};

TEST_P(WortCrashRuns, EveryPhaseRecovers) {
  auto c = crash_config("wort", GetParam(), [] { return std::string(wort_current_phase()); });
  c.pool_bytes = 512 << 10;
  c.ops = 4000;
  c.key_space = GetParam().seed % 2 ? 300 : std::uint64_t{1} << 40;
  c.flush_one_in = 2;
  c.recovery_crash_one_in = 1;          // only a recovery that fixes a header writes: cheap
  if (c.key_space > 300) c.ops = 2000;  // removes and updates rarely hit: few ops suffice
  auto r = expect_crashes_everywhere(c, {"alloc", "leaf", "node", "fence", "publish", "header"});
  if (c.key_space == 300) expect_crashed_in({"value", "unlink"}, r.per_phase);
}

INSTANTIATE_TEST_SUITE_P(Wort, WortCrashRuns,
                         ::testing::Values(SeedUnit{1, pm::Unit::line64},
                                           SeedUnit{2, pm::Unit::word8},
                                           SeedUnit{3, pm::Unit::word8}),
                         seed_unit_name);

}  // namespace
}  // namespace dptree::testing
