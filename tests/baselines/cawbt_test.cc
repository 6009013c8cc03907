// CAWBT-specific tests (the generic model and crash runs are in generic_peers_test.cc): its
// registration states its assumption, tombstoned separators, and a demonstration that 8-byte
// atomicity (what x86 promises) breaks it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "baselines/broken_images.h"
#include "dptree/error.h"
#include "fixtures/crash_fixture.h"
#include "fixtures/model_fixture.h"

namespace dptree::testing {
namespace {

TEST(Cawbt, RegisteredWithItsAssumption) {
  const auto& info = find_index("cawbt");
  EXPECT_TRUE(info.persistent);
  EXPECT_NE(info.description.find("assumes 64-byte atomic writes"), std::string::npos);
}

TEST(Cawbt, SequentialAndReverseInsertsThenDeleteAll) {
  PmModeScope mode(pm::Mode::dram);
  for (bool reverse : {false, true}) {
    auto pool = pm::Pool::create_in_memory(4 << 20);
    auto idx = make_index("cawbt", pool.get(), {});
    for (Key i = 0; i < 5000; ++i) ASSERT_TRUE(idx->insert(reverse ? 5000 - i : i + 1, i));
    expect_check_ok(*idx, "after inserts");
    std::vector<KV> out;
    EXPECT_EQ(idx->scan(0, 10000, out), 5000u);
    for (std::size_t i = 1; i < out.size(); ++i) ASSERT_LT(out[i - 1].first, out[i].first);
    // Deleted separators stay behind as tombstones: invisible to lookup and scan.
    for (Key i = 1; i <= 5000; ++i) ASSERT_TRUE(idx->remove(i));
    out.clear();
    EXPECT_EQ(idx->scan(0, 10000, out), 0u);
    for (Key i = 1; i <= 5000; i += 97) EXPECT_FALSE(idx->lookup(i));
    EXPECT_EQ(idx->stats().records, 0u);
    expect_check_ok(*idx, "after removing everything");
    EXPECT_TRUE(idx->insert(2500, 7));
    EXPECT_EQ(idx->lookup(2500), std::optional<Value>(7));
    idx.reset();
    idx = make_index("cawbt", pool.get(), {});  // reopen: tombstones rebuilt as such
    EXPECT_EQ(idx->stats().records, 1u);
    EXPECT_EQ(idx->lookup(2500), std::optional<Value>(7));
    expect_check_ok(*idx, "after reopen");
  }
}

TEST(Cawbt, RefusesValuesWithTheTombstoneBit) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  auto idx = make_index("cawbt", pool.get(), {});
  EXPECT_EQ(idx->max_value(), (Value{1} << 63) - 1);
  EXPECT_THROW(idx->upsert(1, idx->max_value() + 1), Error);
  EXPECT_FALSE(idx->lookup(1));
}

// CAWBT rewrites a whole 64-byte node and flushes it once; x86 only promises that an aligned
// 8-byte word reaches PM whole. With 8-byte units a crash can leave half a shifted node (IDs
// moved, pointers not) or a torn split record, which recovery or check() then reports. The
// fixture's failures are intercepted and counted: this test passes only if some image broke.
TEST(Cawbt, BreaksWith8ByteAtomicity) {
  EXPECT_GT(broken_in_8_byte_units("cawbt", 21), 0u)
      << "expected torn 64-byte node writes to break an image";
}

}  // namespace
}  // namespace dptree::testing
