// Bad input to every string-key index: an empty key, a key one byte over max_key_bytes() and
// a value over max_value() are refused by every operation with Error(invalid_argument) naming
// the limit, and change nothing; a key of exactly max_key_bytes() is taken. A persistent
// index's pool holds one form: opening it with the other is a wrong_index error.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "fixtures/model_fixture.h"
#include "strings/string_indexes.h"

namespace dptree::testing {
namespace {

class StringInput : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    pm::set_mode(pm::Mode::dram);
    if (is_persistent(GetParam())) pool_ = pm::Pool::create_in_memory(std::size_t{8} << 20);
    idx_ = make_string_index(GetParam(), pool_.get(), {});
  }

  // Every operation on key k must throw invalid_argument whose message holds `says`.
  void expect_refused(const std::string& k, const std::string& says, const std::string& what) {
    std::vector<StringKV> out;
    const std::vector<std::pair<const char*, std::function<void()>>> ops = {
        {"upsert", [&] { idx_->upsert(k, 1); }},   {"overwrite", [&] { idx_->overwrite(k, 1); }},
        {"insert", [&] { idx_->insert(k, 1); }},   {"update", [&] { idx_->update(k, 1); }},
        {"remove", [&] { idx_->remove(k); }},      {"lookup", [&] { idx_->lookup(k); }},
        {"scan", [&] { idx_->scan(k, 10, out); }},
    };
    for (const auto& [name, op] : ops) expect_invalid(op, says, std::string(name) + " of " + what);
    EXPECT_TRUE(out.empty());
  }

  static void expect_invalid(const std::function<void()>& op, const std::string& says,
                             const std::string& what) {
    try {
      op();
      ADD_FAILURE() << what << " was not refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument) << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos)
          << what << ": the message does not name " << says << ": " << e.what();
    }
  }

  std::unique_ptr<pm::Pool> pool_;
  std::unique_ptr<StringIndex> idx_;
};

TEST_P(StringInput, RefusesEmptyAndOverlongKeys) {
  const std::size_t max = idx_->max_key_bytes();
  EXPECT_GE(max, kStringKeyMaxBytes);
  idx_->upsert("a", 7);
  expect_refused("", std::to_string(max), "an empty key");
  expect_refused(std::string(max + 1, 'a'), std::to_string(max), "a key over the limit");
  const std::string longest(max, '\xff');
  EXPECT_TRUE(idx_->insert(longest, 9));
  EXPECT_EQ(idx_->lookup(longest), std::optional<Value>(9));
  std::vector<StringKV> out;
  EXPECT_EQ(idx_->scan(StringKeys::first(), 10, out), 2u);
  EXPECT_EQ(out, (std::vector<StringKV>{{"a", 7}, {longest, 9}}));
  expect_check_ok(*idx_, GetParam());
}

TEST_P(StringInput, RefusesValuesOverTheMaximum) {
  const Value max = idx_->max_value();
  if (max == ~Value{0}) GTEST_SKIP() << GetParam() << " takes every 8-byte value";
  idx_->upsert("k", 1);
  const std::string says = std::to_string(max);
  expect_invalid([&] { idx_->upsert("k", max + 1); }, says, "upsert of a value over the maximum");
  expect_invalid([&] { idx_->overwrite("k", max + 1); }, says, "overwrite of such a value");
  expect_invalid([&] { idx_->insert("new", max + 1); }, says, "insert of such a value");
  expect_invalid([&] { idx_->update("k", ~Value{0}); }, says, "update to such a value");
  EXPECT_EQ(idx_->lookup("k"), std::optional<Value>(1));
  EXPECT_FALSE(idx_->lookup("new").has_value());
  idx_->upsert("k", max);
  EXPECT_EQ(idx_->lookup("k"), std::optional<Value>(max));
}

TEST_P(StringInput, PoolHoldsOneForm) {
  if (!pool_) GTEST_SKIP() << GetParam() << " is volatile";
  idx_->upsert("s", 1);
  idx_.reset();
  try {
    make_index(GetParam(), pool_.get(), {});
    ADD_FAILURE() << "the integer form opened a pool of the string form";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::wrong_index) << e.what();
  }
  idx_ = make_string_index(GetParam(), pool_.get(), {});
  EXPECT_EQ(idx_->lookup("s"), std::optional<Value>(1));
  auto other = pm::Pool::create_in_memory(std::size_t{8} << 20);
  make_index(GetParam(), other.get(), {})->upsert(1, 1);
  try {
    make_string_index(GetParam(), other.get(), {});
    ADD_FAILURE() << "the string form opened a pool of the integer form";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::wrong_index) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Index, StringInput, ::testing::ValuesIn(string_indexes(std::nullopt)),
                         index_test_name);

TEST(StringInput, IndexWithoutStringFormIsNamed) {
  std::string integer_only;
  for (const IndexInfo& i : registered_indexes())
    if (!i.create_string) integer_only = i.name;
  ASSERT_FALSE(integer_only.empty());
  try {
    make_string_index(integer_only, nullptr, {});
    ADD_FAILURE() << integer_only << " made a string form";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(integer_only), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dptree::testing
