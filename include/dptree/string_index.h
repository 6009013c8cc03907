// The interface of an index over byte-string keys, beside the 8-byte integer one (index.h).
//
// Why a second interface and not a key-type template: the benchmark, the PiBench wrapper and
// the test fixtures drive indexes through a virtual interface chosen at run time, so a
// template would end in two virtual interfaces anyway; and a separate one leaves every
// integer-key path exactly as fast as it was. An index takes string keys when its registry
// entry has `create_string` (registry.h); the integer and the string form of one index are
// the same design over different keys, and a pool holds one or the other.
//
// Keys are 1 to max_key_bytes() bytes of any value (zero bytes included), ordered as memcmp
// orders them, the shorter first when one is a prefix of the other: exactly the order of
// std::string_view's operator<, whose char traits compare as unsigned char.
// The operations mean what they mean in index.h; values are 8-byte unsigned integers, and
// max_value() says which are usable. An empty key, a key over max_key_bytes() or a value
// above max_value() is refused with dptree::Error(invalid_argument) naming the limit.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dptree/index.h"

namespace dptree {

// The longest key every string-key index of the project takes; an index may take longer ones.
inline constexpr std::size_t kStringKeyMaxBytes = 1024;

using StringKV = std::pair<std::string, Value>;

class StringIndex {
 public:
  virtual ~StringIndex() = default;

  virtual std::string name() const = 0;

  virtual void upsert(std::string_view k, Value v) = 0;
  virtual void overwrite(std::string_view k, Value v) { upsert(k, v); }
  virtual bool insert(std::string_view k, Value v) = 0;
  virtual bool update(std::string_view k, Value v) = 0;
  virtual bool remove(std::string_view k) = 0;
  virtual std::optional<Value> lookup(std::string_view k) const = 0;
  // Up to `count` pairs with key >= start in ascending key order, appended to `out`.
  virtual std::size_t scan(std::string_view start, std::size_t count,
                           std::vector<StringKV>& out) const = 0;

  virtual void drain() {}

  virtual std::size_t max_key_bytes() const { return kStringKeyMaxBytes; }
  virtual Value max_value() const { return ~Value{0}; }
  virtual IndexStats stats() const = 0;  // pm_bytes counts key blobs too
  virtual CheckReport check() const { return {}; }
};

// Throws Error(invalid_argument) for an empty key or one longer than `max_bytes`, naming
// `index` and the limit. Every StringIndex calls it (or an equivalent) on each key it is given.
void check_string_key(std::string_view k, std::size_t max_bytes, std::string_view index);

}  // namespace dptree
