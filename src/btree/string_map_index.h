// A StringIndex over an ordered map from std::string with std::map's interface and
// heterogeneous lookup (absl::btree_map<std::string, Value>): the string form of the volatile
// yardstick `absl-btree`. Single-threaded. stats() estimates DRAM as the map's per-record
// `bytes_per_record` plus the heap bytes of keys too long for std::string's inline buffer.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dptree/string_index.h"

namespace dptree::btree {

template <class Map>
class StringMapIndex final : public StringIndex {
 public:
  StringMapIndex(std::string name, double bytes_per_record)
      : name_(std::move(name)), bytes_per_record_(bytes_per_record) {}
  std::string name() const override { return name_; }

  void upsert(std::string_view k, Value v) override {
    check_string_key(k, kStringKeyMaxBytes, name_);
    auto it = map_.lower_bound(k);
    if (it != map_.end() && it->first == k)
      it->second = v;
    else
      add(it, k, v);
  }
  bool insert(std::string_view k, Value v) override {
    check_string_key(k, kStringKeyMaxBytes, name_);
    auto it = map_.lower_bound(k);
    if (it != map_.end() && it->first == k) return false;
    add(it, k, v);
    return true;
  }
  bool update(std::string_view k, Value v) override {
    check_string_key(k, kStringKeyMaxBytes, name_);
    auto it = map_.find(k);
    if (it == map_.end()) return false;
    it->second = v;
    return true;
  }
  bool remove(std::string_view k) override {
    check_string_key(k, kStringKeyMaxBytes, name_);
    auto it = map_.find(k);
    if (it == map_.end()) return false;
    heap_bytes_ -= heap_of(it->first.size());
    map_.erase(it);
    return true;
  }
  std::optional<Value> lookup(std::string_view k) const override {
    check_string_key(k, kStringKeyMaxBytes, name_);
    auto it = map_.find(k);
    return it == map_.end() ? std::nullopt : std::optional<Value>(it->second);
  }
  std::size_t scan(std::string_view start, std::size_t count,
                   std::vector<StringKV>& out) const override {
    check_string_key(start, kStringKeyMaxBytes, name_);
    std::size_t n = 0;
    for (auto it = map_.lower_bound(start); it != map_.end() && n < count; ++it, ++n)
      out.emplace_back(it->first, it->second);
    return n;
  }
  IndexStats stats() const override {
    IndexStats s;
    s.records = map_.size();
    s.dram_bytes = sizeof(map_) + heap_bytes_ +
                   static_cast<std::size_t>(static_cast<double>(map_.size()) * bytes_per_record_);
    return s;
  }

 private:
  // Heap bytes of a key of `n` bytes: none while it fits std::string's inline buffer.
  static std::size_t heap_of(std::size_t n) { return n < sizeof(std::string) / 2 ? 0 : n + 1; }

  template <class It>
  void add(It hint, std::string_view k, Value v) {
    map_.emplace_hint(hint, std::string(k), v);
    heap_bytes_ += heap_of(k.size());
  }

  std::string name_;
  double bytes_per_record_;
  std::size_t heap_bytes_ = 0;
  Map map_;
};

}  // namespace dptree::btree
