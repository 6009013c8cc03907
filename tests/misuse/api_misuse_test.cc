// The mistakes an integrator makes with the C++ API: each throws dptree::Error of its own kind
// with a message naming the problem, at once, and leaves the pool folder as it was.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cdptree/cdptree_impl.h"  // CRoot, to damage a stored setting
#include "dptree/cdptree.h"
#include "dptree/dptree.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "format/layout.h"  // Root, to damage a stored setting
#include "misuse/folder.h"

namespace {

using namespace dptree;
using dptree::test::listing;
using dptree::test::TempDir;

struct Case {
  const char* what;
  std::function<void(const TempDir&)> call;
  Errc kind;
  std::string says;
};

std::unique_ptr<pm::Pool> memory_pool() {
  return pm::Pool::create_in_memory(std::size_t{16} << 20);
}

// A pool with a DPTree made and closed: the next open recovers it.
std::unique_ptr<pm::Pool> pool_with_dptree() {
  auto p = memory_pool();
  auto t = DPTree<>::create(*p);
  t->upsert(1, 1);
  return p;
}

std::unique_ptr<pm::Pool> pool_with_cdptree() {
  auto p = memory_pool();
  auto t = CDPTree::create(*p);
  t->upsert(1, 1);
  return p;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // Sizes that would wrap or cannot be mapped.
      {"create_in_memory(SIZE_MAX - 100)",
       [](const TempDir&) { pm::Pool::create_in_memory(SIZE_MAX - 100); }, Errc::invalid_argument,
       "in-memory pool size 18446744073709551515 is out of range"},
      {"create_in_memory(64 TiB)",
       [](const TempDir&) { pm::Pool::create_in_memory(pm::kMaxPoolSize); }, Errc::invalid_argument,
       "larger than this machine's memory"},
      {"create(path, SIZE_MAX)", [](const TempDir& d) { pm::Pool::create(d / "p.pool", SIZE_MAX); },
       Errc::invalid_argument, "pool size 18446744073709551615 is out of range"},
      {"create(path, 0)", [](const TempDir& d) { pm::Pool::create(d / "p.pool", 0); },
       Errc::invalid_argument, "pool size 0 is out of range"},
      {"create(path, 32 TiB) beyond the free space",
       [](const TempDir& d) { pm::Pool::create(d / "p.pool", std::size_t{32} << 40); },
       Errc::pool_full, "bytes free"},
      {"create(a folder, 1 MiB)",
       [](const TempDir& d) { pm::Pool::create(d.path, std::size_t{1} << 20); },
       Errc::already_exists, "is a folder"},
      {"create(in a missing folder)",
       [](const TempDir& d) { pm::Pool::create(d / "no/p.pool", std::size_t{1} << 20); },
       Errc::not_found, "check that the folder exists"},
      {"open(a folder)", [](const TempDir& d) { pm::Pool::open(d.path); }, Errc::not_a_pool,
       "is a folder"},
      {"open(a pool file a second time in this process)",
       [](const TempDir& d) {
         auto first = pm::Pool::create(d / "twice.pool", std::size_t{1} << 20);
         struct Remove {
           std::string p;
           ~Remove() { std::filesystem::remove(p); }
         } remove{d / "twice.pool"};
         pm::Pool::open(d / "twice.pool");
       },
       Errc::locked, "already open through another Pool in this process"},
      // Options out of range, caught before anything is derived from them.
      {"CDPTree leaf_bytes=0",
       [](const TempDir&) {
         CDPTreeOptions o;
         o.leaf_bytes = 0;
         CDPTree::create(*memory_pool(), o);
       },
       Errc::invalid_argument, "leaf_bytes=0 is out of range"},
      {"DPTree min_merge_records=2^62",
       [](const TempDir&) {
         DPTreeOptions o;
         o.min_merge_records = std::size_t{1} << 62;
         DPTree<>::create(*memory_pool(), o);
       },
       Errc::invalid_argument, "min_merge_records=4611686018427387904 is out of range"},
      {"DPTree log_page_size=2^40",
       [](const TempDir&) {
         DPTreeOptions o;
         o.log_page_size = std::size_t{1} << 40;
         DPTree<>::create(*memory_pool(), o);
       },
       Errc::invalid_argument, "log_page_size=1099511627776 is out of range"},
      // The pool holds nothing, another index, or the same index of other widths.
      {"DPTree::open on an empty pool", [](const TempDir&) { DPTree<>::open(*memory_pool()); },
       Errc::not_found, "is empty (it holds no index)"},
      {"DPTree::open on a fastfair pool",
       [](const TempDir&) {
         auto p = memory_pool();
         IndexConfig c;
         c.pool = p.get();
         find_index("fastfair").create(c);
         DPTree<>::open(*p);
       },
       Errc::wrong_index, "holds another index, not a DPTree"},
      {"CDPTree::open on a DPTree pool", [](const TempDir&) { CDPTree::open(*pool_with_dptree()); },
       Errc::wrong_index, "holds another index, not a concurrent DPTree"},
      {"DPTree<16, 8>::open on a DPTree<8, 8>",
       [](const TempDir&) { DPTree<16, 8>::open(*pool_with_dptree()); }, Errc::wrong_index,
       "holds a DPTree of 8-byte keys"},
      // Damaged: the root word points to no live block.
      {"DPTree::open with a damaged root word",
       [](const TempDir&) {
         auto p = pool_with_dptree();
         const std::uint64_t good = *p->root_word();
         *p->root_word() = good + 8;
         try {
           DPTree<>::open(*p);
         } catch (...) {
           *p->root_word() = good;
           throw;
         }
       },
       Errc::corrupt, "its root word (in the pool header) points to offset"},
      // A stored setting out of range: the pool's, not the caller's.
      {"DPTree::open with a stored leaf capacity of 1",
       [](const TempDir&) {
         auto p = pool_with_dptree();
         p->root<detail::Root>()->leaf_capacity = 1;
         DPTree<>::open(*p);
       },
       Errc::stored_setting, "stores a setting out of range (DPTree option leaf_capacity=1"},
      {"CDPTree::open with 0 stored log partitions",
       [](const TempDir&) {
         auto p = pool_with_cdptree();
         p->root<cdp::CRoot>()->partitions = 0;
         CDPTree::open(*p);
       },
       Errc::stored_setting, "stores a setting out of range (CDPTree option log_partitions=0"},
      // A second index on a pool that a live one holds.
      {"DPTree::create on a pool a live DPTree holds",
       [](const TempDir&) {
         auto p = memory_pool();
         auto first = DPTree<>::create(*p);
         DPTree<>::create(*p);
       },
       Errc::in_use, "pool '<memory>' is already held by a live DPTree in this process"},
  };
  return all;
}

TEST(ApiMisuse, EachMistakeThrowsItsOwnKindAndLeavesNothing) {
  TempDir dir("api-misuse");
  const auto before = listing(dir.path);
  for (const Case& c : cases()) {
    try {
      c.call(dir);
      ADD_FAILURE() << c.what << ": accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), c.kind) << c.what << ": " << to_string(e.code()) << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos)
          << c.what << " said: " << e.what();
    }
    EXPECT_EQ(listing(dir.path), before) << c.what << " left something behind";
  }
}

}  // namespace
