// One owner per pool: a second index created or opened on a Pool that a live index holds is
// refused (Errc::in_use, naming the pool), through every index that stores data in a pool, and
// every write the first index acknowledged survives a close and reopen. A pool that holds
// another index is refused by every factory, in either key form, and left unwritten.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

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

// The pool's bytes, to tell that nothing was written.
std::string bytes_of(const pm::Pool& pool) {
  const auto* b = reinterpret_cast<const char*>(pool.base());
  return std::string(b, b + pool.size());
}

// A persistent index in one key form: its factory, and a write and a read of key i.
struct Form {
  const IndexInfo* info;
  bool strings;
  std::string name() const { return info->name + (strings ? " (string keys)" : ""); }
};

std::vector<Form> persistent_forms() {
  std::vector<Form> out;
  for (const IndexInfo& info : registered_indexes()) {
    if (!info.persistent) continue;
    out.push_back({&info, false});
    if (info.create_string) out.push_back({&info, true});
  }
  return out;
}

// Opens (or creates) the form's index in the pool and writes or checks keys 1..n.
void fill_or_expect(const Form& f, IndexConfig& c, Key n, bool write) {
  if (f.strings) {
    auto idx = f.info->create_string(c);
    for (Key k = 1; k <= n; ++k) {
      const std::string key = "key-" + std::to_string(k);
      if (write)
        idx->upsert(key, k * 3);
      else
        ASSERT_EQ(idx->lookup(key), std::optional<Value>(k * 3)) << f.name() << " key " << k;
    }
    return;
  }
  auto idx = f.info->create(c);
  for (Key k = 1; k <= n; ++k) {
    if (write)
      idx->upsert(k, k * 3);
    else
      ASSERT_EQ(idx->lookup(k), std::optional<Value>(k * 3)) << f.name() << " key " << k;
  }
}

// Every persistent index's factory, in either key form, refuses a pool that holds another
// index (or its own in the other form) with wrong_index and writes nothing to it: `dptree
// check --repair` asks each in turn on the shared mapping of a pool file.
TEST(PoolOwner, AnotherIndexsPoolIsRefusedAndNotWritten) {
  const auto forms = persistent_forms();
  for (const Form& owner : forms) {
    SCOPED_TRACE(owner.name());
    auto pool = pm::Pool::create_in_memory(std::size_t{12} << 20);
    IndexConfig c;
    c.pool = pool.get();
    fill_or_expect(owner, c, 300, true);
    const std::string before = bytes_of(*pool);
    for (const Form& other : forms) {
      if (other.info == owner.info && other.strings == owner.strings) continue;
      try {
        if (other.strings)
          other.info->create_string(c);
        else
          other.info->create(c);
        ADD_FAILURE() << other.name() << " opened a pool of " << owner.name();
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), Errc::wrong_index) << other.name() << ": " << e.what();
      }
      ASSERT_TRUE(bytes_of(*pool) == before)
          << other.name() << " wrote to a pool of " << owner.name();
    }
    fill_or_expect(owner, c, 300, false);
  }
}

}  // namespace
