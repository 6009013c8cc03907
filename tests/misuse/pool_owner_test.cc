// One owner per pool: a second index created or opened on a Pool that a live index holds is
// refused (Errc::in_use, naming the pool), through every index that stores data in a pool, and
// every write the first index acknowledged survives a close and reopen.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "dptree/cdptree.h"
#include "dptree/dptree.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "dptree/tips.h"

namespace {

using namespace dptree;

void expect_in_use(const std::function<void()>& second, const std::string& who) {
  try {
    second();
    ADD_FAILURE() << who << ": a second index on a held pool was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::in_use) << who << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("pool '<memory>' is already held by a live"),
              std::string::npos)
        << who << ": " << e.what();
  }
}

TEST(PoolOwner, ASecondIndexOnAHeldPoolIsRefusedAndNoWriteIsLost) {
  int persistent = 0;
  for (const IndexInfo& info : registered_indexes()) {
    if (!info.persistent) continue;
    ++persistent;
    SCOPED_TRACE(info.name);
    auto pool = pm::Pool::create_in_memory(std::size_t{64} << 20);
    IndexConfig c;
    c.pool = pool.get();
    auto first = info.create(c);
    for (Key k = 1; k <= 100; ++k) first->upsert(k, k * 7);
    // Through the registry, and through each public API that can open this pool.
    expect_in_use([&] { info.create(c); }, info.name);
    expect_in_use([&] { DPTree<>::open(*pool); }, info.name + " then DPTree::open");
    expect_in_use([&] { DPTree<>::create(*pool); }, info.name + " then DPTree::create");
    expect_in_use([&] { CDPTree::open(*pool); }, info.name + " then CDPTree::open");
    expect_in_use([&] { CDPTree::create(*pool); }, info.name + " then CDPTree::create");
    // The first index goes on as if nothing happened.
    for (Key k = 101; k <= 200; ++k) first->upsert(k, k * 7);
    first.reset();
    auto again = info.create(c);  // opens, and so recovers, what the first left
    for (Key k = 1; k <= 200; ++k) ASSERT_EQ(again->lookup(k), std::optional<Value>(k * 7)) << k;
    const auto r = again->check();
    EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems.front());
  }
  EXPECT_GE(persistent, 8) << "dptree, cdptree, tips-btree and the five peers";
}

}  // namespace
