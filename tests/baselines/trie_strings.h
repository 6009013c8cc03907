// Helpers for the tries' own string-key tests (the generic string model and crash runs over
// every string index are in tests/strings/): opening a string form, checking it, and keys of
// mixed lengths that are prefixes of each other.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "dptree/string_index.h"

namespace dptree::testing {

inline std::unique_ptr<StringIndex> open_strings(const std::string& index, pm::Pool* pool,
                                                 unsigned threads = 0) {
  IndexConfig c;
  c.pool = pool;
  c.threads = threads;
  return find_index(index).create_string(c);
}

inline void expect_string_check_ok(const StringIndex& idx, const std::string& where) {
  auto r = idx.check();
  EXPECT_TRUE(r.ok) << where << ": " << (r.problems.empty() ? "" : r.problems[0]);
}

// Keys over a small alphabet (0x00, 0x01, 'a', 0xFF) in the lengths that matter (1, 2, 3, 8,
// 9, 16, 63, 64, 65, 1024), their prefixes and their last-byte variants.
inline std::vector<std::string> mixed_keys(std::mt19937_64& rng, std::size_t n) {
  const char alphabet[] = {'\0', '\1', 'a', '\xff'};
  const std::size_t lengths[] = {1, 8, 9, 63, 64, 65, 1024, 2, 3, 16};
  std::vector<std::string> keys;
  while (keys.size() < n) {
    std::string k(lengths[rng() % 10], 'a');
    for (char& c : k) c = alphabet[rng() % (rng() % 5 == 0 ? 4 : 2)];
    keys.push_back(k);
    keys.push_back(k.substr(0, 1 + rng() % k.size()));
    std::string v = k;
    v.back() = alphabet[rng() % 4];
    keys.push_back(v);
  }
  return keys;
}

}  // namespace dptree::testing
