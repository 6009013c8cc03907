// FPTree's string form beyond the generic string fixtures (tests/strings/): a full pool, and
// key words and blobs a damaged pool may hold, which the open refuses with Error(corrupt).
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "baselines/fptree/layout.h"
#include "dptree/error.h"
#include "dptree/pm/buffer.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "dptree/string_index.h"
#include "fixtures/model_fixture.h"

namespace dptree {
namespace {

namespace fp = baselines::fptree;

std::unique_ptr<StringIndex> open_strings(pm::Pool& pool) {
  IndexConfig c;
  c.pool = &pool;
  c.options = {{"leaf_capacity", "8"}};
  return find_index("fptree").create_string(c);
}

std::string key_of(int i) {           // lengths 1..200, distinct
  std::string k = std::to_string(i);  // appended, not `a + b`: GCC 12's -O3 -Wrestrict
  k.append(static_cast<std::size_t>(i % 200), char('a' + i % 26));  // misfires on that
  return k;
}

// A pool holding 40 keys over several leaves, closed.
std::unique_ptr<pm::Pool> filled_pool() {
  auto pool = pm::Pool::create_in_memory(std::size_t{1} << 20);
  auto idx = open_strings(*pool);
  for (int i = 0; i < 40; ++i) idx->upsert(key_of(i), Value(i));
  return pool;
}

std::unique_ptr<pm::Pool> copy_of(const pm::Pool& p) {
  return pm::Pool::open_image(
      pm::Image{pm::Buffer::copy_of(std::span(static_cast<const std::byte*>(p.base()), p.size()))});
}

// Damages a copy of `p` with `damage` (given the first leaf) and expects the open refused.
void expect_refused(const pm::Pool& p, const std::function<void(pm::Pool&, fp::Leaf*)>& damage,
                    const std::string& says) {
  auto q = copy_of(p);
  auto* root = q->root<fp::Root>();
  damage(*q, q->at<fp::Leaf>(root->chain.first));
  try {
    open_strings(*q);
    ADD_FAILURE() << "the damaged pool was accepted (" << says << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::corrupt) << e.what();
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

int first_valid_slot(const fp::Leaf* l) {
  return std::countr_zero(l->bitmap);
}

TEST(FPTreeStrings, DamagedKeyWordsAndBlobsAreRefused) {
  pm::set_mode(pm::Mode::dram);
  auto pool = filled_pool();
  ASSERT_TRUE(open_strings(*copy_of(*pool))->check().ok);
  auto slot_word = [](fp::Leaf* l) -> fp::u64& { return fp::kvs(l)[first_valid_slot(l)].key; };
  expect_refused(
      *pool, [&](pm::Pool&, fp::Leaf* l) { slot_word(l) = 0; }, "not a slot");
  expect_refused(
      *pool, [&](pm::Pool&, fp::Leaf* l) { slot_word(l) += 8 << 4; }, "");
  expect_refused(
      *pool, [&](pm::Pool& q, fp::Leaf*) { q.root<fp::Root>()->form = 9; }, "key form 9");
  expect_refused(
      *pool, [&](pm::Pool& q, fp::Leaf* l) { *q.at<fp::u64>(slot_word(l) & ~15ull) = 5000; },
      "of length 5000");
  expect_refused(
      *pool,
      [&](pm::Pool&, fp::Leaf* l) {
        const int i = first_valid_slot(l);
        const int j = std::countr_zero(l->bitmap & (l->bitmap - 1));
        fp::kvs(l)[j].key = fp::kvs(l)[i].key;
      },
      "shares a key blob");
  expect_refused(
      *pool, [&](pm::Pool&, fp::Leaf* l) { slot_word(l) = (slot_word(l) & ~15ull) | 9; },
      "not a slot");
}

// Keys of 1,024 bytes fill a small pool: the insert that finds no room throws pool_full and
// changes nothing; every key acknowledged before is there, also after reopening, and removes
// free their blobs for the keys that come back.
TEST(FPTreeStrings, FullPoolIsAnErrorAndLosesNothing) {
  pm::set_mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(std::size_t{512} << 10);
  std::map<std::string, Value> model;
  auto big = [](int i) { return std::to_string(i) + std::string(1020, 'k'); };
  {
    auto idx = open_strings(*pool);
    for (int i = 0;; ++i) {
      try {
        ASSERT_TRUE(idx->insert(big(i), Value(i)));
        model[big(i)] = Value(i);
      } catch (const Error& e) {
        ASSERT_EQ(e.code(), Errc::pool_full) << e.what();
        EXPECT_FALSE(idx->lookup(big(i)).has_value());
        break;
      }
      ASSERT_LT(i, 1000) << "the pool never filled";
    }
    EXPECT_GT(model.size(), 20u);
    testing::expect_check_ok(*idx, "after the full pool");
  }
  auto idx = open_strings(*pool);
  for (const auto& [k, v] : model) ASSERT_EQ(idx->lookup(k), std::optional<Value>(v));
  testing::expect_check_ok(*idx, "reopened");
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(idx->remove(big(i)));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(idx->insert(big(i), 1));  // into the freed blobs
  testing::expect_check_ok(*idx, "after removes and inserts");
}

}  // namespace
}  // namespace dptree
