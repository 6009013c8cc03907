// The indexes the string-key tests run: every registered index with a string form (the
// library's and the benchmark's absl-btree), so an index that gains create_string is tested
// without a line here. Test names are index names with '-' as '_'.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "bench/reference_indexes.h"
#include "fixtures/key_kinds.h"

namespace dptree::testing {

// persistent: true for the persistent ones, false for the volatile ones, nullopt for all.
inline std::vector<std::string> string_indexes(std::optional<bool> persistent) {
  bench::register_reference_indexes();
  return string_index_names(persistent);
}

inline std::string index_test_name(const ::testing::TestParamInfo<std::string>& i) {
  std::string n = i.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

inline bool is_persistent(const std::string& index) {
  return find_index(index).persistent;
}

}  // namespace dptree::testing
