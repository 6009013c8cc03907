// LB+-Tree-specific tests (the generic model and crash runs are in generic_peers_test.cc): entry
// moving and splits happen, and what 8-byte units break.
#include <gtest/gtest.h>

#include <cstdio>

#include "baselines/broken_images.h"
#include "dptree/error.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

TEST(LBTree, EntryMovingAndSplits) {
  ModelConfig c;
  c.index = "lbtree";
  c.ops = 20000;
  c.key_space = 3000;
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_GT(r.extra["entry_moves"], 100);
  EXPECT_GT(r.extra["splits"], 100);
}

// IndexConfig::threads = 1: no inner or leaf lock is taken; the same model holds.
TEST(LBTree, OneThreadConfiguration) {
  // Three reopens: the one-thread index recovers too.
  ModelConfig c = model_config("lbtree", 2, 20000, 3000, ModelConfig{}.check_every, 6000);
  c.threads = 1;
  auto r = run_model(c);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(r.reopens, 3u);
  EXPECT_GT(r.records, 1000u);
}

// The line-0 insert writes entry, fingerprint and bitmap into one line and flushes it once:
// if only 8-byte words reach PM whole, the bitmap can land without the entry.
TEST(LBTree, Line0InsertNeedsWholeLines) {
  EXPECT_GT(broken_in_8_byte_units("lbtree", 43), 0u)
      << "expected a torn line-0 insert to break an image";
}

}  // namespace
}  // namespace dptree::testing
