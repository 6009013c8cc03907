// Every string-key index against std::map<std::string, Value> (model_fixture.h) over the mixed
// key space of key_kinds.h; persistent ones are closed and reopened (recovered) now and then.
// A string index that reads keys as C strings must fail the same run: the fixture can fail.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "fixtures/model_fixture.h"
#include "strings/string_indexes.h"

namespace dptree::testing {
namespace {

class StringModel : public ::testing::TestWithParam<std::string> {
 protected:
  ModelConfig config(std::uint64_t seed, std::size_t ops, std::uint64_t key_space) const {
    bool pm = is_persistent(GetParam());
    auto c = model_config(GetParam(), seed, ops, key_space, ops / 5, pm ? ops / 3 : 0);
    c.pool_bytes = pm ? std::size_t{32} << 20 : 0;
    return c;
  }
};

TEST_P(StringModel, RandomOpsOverMixedKeys) {
  for (std::uint64_t seed : {1, 2}) {
    auto r = run_string_model(config(seed, 12000, 1500));
    ASSERT_FALSE(HasFailure()) << "seed " << seed;
    EXPECT_GT(r.records, 300u) << "seed " << seed;
    if (is_persistent(GetParam())) {
      EXPECT_GE(r.reopens, 2u);
    }
  }
}

TEST_P(StringModel, MostlyRemovesOverFewKeys) {
  auto c = config(3, 8000, 200);
  c.remove_weight = 45;
  run_string_model(c);
}

INSTANTIATE_TEST_SUITE_P(Index, StringModel, ::testing::ValuesIn(string_indexes(std::nullopt)),
                         index_test_name);

// Keys as C strings: everything from the first zero byte on is lost, so keys that differ only
// there collide. The model run over the mixed key space must notice.
class CStringIndex final : public StringIndex {
 public:
  std::string name() const override { return "c-string"; }
  void upsert(std::string_view k, Value v) override { m_[cut(k)] = v; }
  bool insert(std::string_view k, Value v) override { return m_.try_emplace(cut(k), v).second; }
  bool update(std::string_view k, Value v) override {
    auto it = m_.find(cut(k));
    if (it == m_.end()) return false;
    it->second = v;
    return true;
  }
  bool remove(std::string_view k) override { return m_.erase(cut(k)) > 0; }
  std::optional<Value> lookup(std::string_view k) const override {
    auto it = m_.find(cut(k));
    return it == m_.end() ? std::nullopt : std::optional<Value>(it->second);
  }
  std::size_t scan(std::string_view s, std::size_t n, std::vector<StringKV>& out) const override {
    std::size_t got = 0;
    for (auto it = m_.lower_bound(cut(s)); it != m_.end() && got < n; ++it, ++got)
      out.emplace_back(it->first, it->second);
    return got;
  }
  IndexStats stats() const override { return {m_.size(), 0, 0, {}}; }

 private:
  static std::string cut(std::string_view k) { return std::string(k.substr(0, k.find('\0'))); }
  std::map<std::string, Value> m_;
};

void run_c_string_model() {
  static std::once_flag once;
  std::call_once(once, [] {
    IndexInfo info{"c-string", "test only: keys cut at their first zero byte", false, false,
                   [](const IndexConfig&) -> std::unique_ptr<Index> { return nullptr; }};
    info.create_string = [](const IndexConfig&) -> std::unique_ptr<StringIndex> {
      return std::make_unique<CStringIndex>();
    };
    register_index(std::move(info));
  });
  auto c = model_config("c-string", 1, 3000, 300, 600, 0);
  c.pool_bytes = 0;
  run_string_model(c);
}

TEST(StringModelFixture, FailsAnIndexThatCutsKeysAtZeroBytes) {
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter intercept(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    run_c_string_model();
  }
  ASSERT_GT(failures.size(), 0) << "the run passed an index that loses key bytes";
  EXPECT_NE(std::string(failures.GetTestPartResult(0).message()).find("seed 1 op"),
            std::string::npos)
      << failures.GetTestPartResult(0).message();
}

}  // namespace
}  // namespace dptree::testing
