// String keys for DPTree's string-form tests: lengths 1, 8, 9, 63, 64, 65 and 1024, keys that
// are prefixes of each other, keys that differ only in their last byte, zero and 0xFF bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dptree/pm/pool.h"
#include "dptree/registry.h"

namespace dptree::testing {

// `n` distinct keys drawn from a few families so that they share prefixes: the stem of key i
// is 1024 bytes of one of 4 patterns (0x00, 0xFF, mixed), cut at one of the lengths; its last
// byte is replaced by one of a few values, so many keys differ only there.
inline std::vector<std::string> mixed_string_keys(std::size_t n, std::uint64_t seed) {
  static const std::size_t lengths[] = {1, 8, 9, 63, 64, 65, 1024, 2, 16, 7};
  std::mt19937_64 rng(seed);
  std::string stems[6];
  for (int s = 0; s < 6; ++s) {
    stems[s].resize(1024);
    for (std::size_t i = 0; i < 1024; ++i)
      stems[s][i] = s == 0   ? '\0'
                    : s == 1 ? '\xff'
                    : s == 2 ? static_cast<char>(i % 3 == 0 ? 0 : 0xff)
                             : static_cast<char>('a' + (i * 7 + static_cast<std::size_t>(s)) % 26);
  }
  std::map<std::string, int> seen;
  std::vector<std::string> keys;
  while (keys.size() < n) {
    // Mostly short keys, so a test reaches splits and merges quickly; 1024 is rarer.
    std::size_t len = lengths[rng() % 10];
    if (len == 1024 && rng() % 4) len = 65;
    std::string k = stems[rng() % 6].substr(0, len);
    const int tweak = static_cast<int>(rng() % 8);
    if (tweak < 3)
      k.back() = static_cast<char>(tweak == 0 ? 0 : tweak == 1 ? 0xff : 'x');
    else if (tweak < 7 && k.size() >= 2)  // a number in the middle: many distinct keys
      k[k.size() / 2] = static_cast<char>(rng() % 256), k[k.size() - 2] = static_cast<char>(rng());
    if (seen.emplace(k, 0).second) keys.push_back(std::move(k));
  }
  return keys;
}

inline std::unique_ptr<StringIndex> make_string_index(
    pm::Pool& pool, const std::map<std::string, std::string>& options) {
  IndexConfig c;
  c.pool = &pool;
  c.options = options;
  return find_index("dptree").create_string(c);
}

// Small leaves and merges so that a few hundred keys split, consolidate and merge often.
inline std::map<std::string, std::string> small_string_options() {
  return {{"leaf_capacity", "8"},
          {"merge_ratio", "0.3"},
          {"min_merge_records", "12"},
          {"log_page_size", "2048"}};
}

}  // namespace dptree::testing
