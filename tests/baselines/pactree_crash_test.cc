// PACTree's split, crashed at each of its steps: the new node is published into its left
// neighbour's `next`, then the moved entries are cleared from the old node, then the anchor
// goes into the search layer. An image between the publish and the clears holds the moved
// keys twice (recovery clears the old node's copies); one before the anchor is in the search
// layer is missing it (recovery inserts it). Each image's recovery is crashed at every one of
// its events, and those images recover too.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "baselines/pactree/pactree_index.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

struct SimMode {
  SimMode() { pm::set_mode(pm::Mode::sim); }
  ~SimMode() { pm::set_mode(pm::Mode::dram); }
};

const std::map<std::string, std::string> kInline = {{"updater", "inline"}};

// Opens `img`: check() passes and the keys are `before` or `after`. Returns the index.
std::unique_ptr<Index> expect_recovers(pm::Pool& pool, const std::map<Key, Value>& before,
                                       const std::map<Key, Value>& after, const std::string& at) {
  auto r = recover_or_fail("pactree", pool, kInline, at);
  if (!r) return r;
  expect_check_ok(*r, at);
  std::vector<KV> all;
  r->scan(0, 1000, all);
  std::map<Key, Value> got(all.begin(), all.end());
  EXPECT_TRUE(got == before || got == after) << at << ": " << got.size() << " keys";
  return r;
}

TEST(PacTreeCrash, SplitCrashedAtEveryStepAndInItsRecovery) {
  for (pm::Unit unit : {pm::Unit::line64, pm::Unit::word8}) {
    SimMode mode;
    auto pool = pm::Pool::create_in_memory(1 << 20);
    auto idx = make_index("pactree", pool.get(), kInline, 1);
    std::map<Key, Value> before, after;
    for (Key k = 1; k <= 62; ++k) idx->upsert(k * 10, k), before[k * 10] = k;  // a full node
    after = before;
    after[5] = 99;  // goes to the lower half
    std::vector<std::pair<pm::Image, std::string>> images;
    std::uint64_t seed = 1;
    pool->sim()->set_hook([&](const pm::Event& e) {
      std::string phase = pactree_current_phase();
      images.emplace_back(e.sim->capture({seed++, 0.0, 0.0, unit}), phase);
      images.emplace_back(e.sim->capture({seed++, 1.0, 1.0, unit}), phase);
    });
    idx->upsert(5, 99);
    pool->sim()->set_hook(nullptr);
    idx.reset();
    std::size_t cleared = 0, anchored = 0, inner_images = 0;
    for (auto& [img, phase] : images) {
      std::vector<pm::Image> inner;
      auto p = pm::Pool::open_image(std::move(img), [&](const pm::Event& e) {
        inner.push_back(e.sim->capture({seed++, 0.5, 0.5, unit}));
      });
      auto r = expect_recovers(*p, before, after, "image in phase " + phase);
      ASSERT_FALSE(HasFailure());
      cleared += extra_stat(*r, "leftovers_cleared") > 0;
      anchored += extra_stat(*r, "anchors_recovered") > 0;
      for (auto& im : inner) {
        ++inner_images;
        auto p2 = pm::Pool::open_image(std::move(im));
        expect_recovers(*p2, before, after, "image in the recovery of one in phase " + phase);
        ASSERT_FALSE(HasFailure());
      }
    }
    EXPECT_GT(cleared, 0u) << "no image between the publish and the clears";
    EXPECT_GT(anchored, 0u) << "no image before the anchor reached the search layer";
    EXPECT_GT(inner_images, 0u) << "no recovery was crashed";
  }
}

}  // namespace
}  // namespace dptree::testing
