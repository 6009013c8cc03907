// Options for DPTree's string-form tests (the keys are the fixtures' mixed string key space,
// fixtures/key_kinds.h).
#pragma once

#include <map>
#include <string>

namespace dptree::testing {

// Small leaves and merges so that a few hundred keys split, consolidate and merge often.
inline std::map<std::string, std::string> small_string_options() {
  return {{"leaf_capacity", "8"},
          {"merge_ratio", "0.3"},
          {"min_merge_records", "12"},
          {"log_page_size", "2048"}};
}

}  // namespace dptree::testing
