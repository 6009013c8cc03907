// An index over an ordered map with std::map's interface, single-threaded: the volatile
// references `stdmap` (std::map) and `absl-btree` (absl::btree_map), in the integer form
// (Base = Index, a map from Key) and the string form (Base = StringIndex, a map from
// std::string with heterogeneous lookup). Neither map reports its allocations, so stats()
// estimates DRAM as `bytes_per_record` per record plus the heap bytes of string keys too long
// for std::string's inline buffer.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "dptree/index.h"
#include "dptree/string_index.h"

namespace dptree::btree {

// What differs between the two forms: the key as the interface passes it, its check, and
// what a stored key costs beside the map's own bytes.
template <class Base>
struct MapKeys;

template <>
struct MapKeys<Index> {
  using In = Key;
  using Pair = KV;
  static void check(Key, const std::string&) {}
  static std::size_t heap_of(Key) { return 0; }
};

template <>
struct MapKeys<StringIndex> {
  using In = std::string_view;
  using Pair = StringKV;
  static void check(std::string_view k, const std::string& index) {
    check_string_key(k, kStringKeyMaxBytes, index);
  }
  // None while the key fits std::string's inline buffer.
  static std::size_t heap_of(std::string_view k) {
    return k.size() < sizeof(std::string) / 2 ? 0 : k.size() + 1;
  }
};

template <class Map, class Base = Index>
class MapIndex final : public Base {
  using K = MapKeys<Base>;
  using In = typename K::In;
  // Keys the map stores as given (integers): its own upsert and insert serve, which for
  // absl::btree_map cost fewer instructions than a search and a hinted emplace.
  static constexpr bool kPlainKeys = std::is_same_v<In, typename Map::key_type>;

 public:
  MapIndex(std::string name, double bytes_per_record)
      : name_(std::move(name)), bytes_per_record_(bytes_per_record) {}
  std::string name() const override { return name_; }

  void upsert(In k, Value v) override {
    K::check(k, name_);
    if constexpr (kPlainKeys) {
      map_.insert_or_assign(k, v);
      return;
    }
    auto it = map_.lower_bound(k);
    if (it != map_.end() && it->first == k)
      it->second = v;
    else
      add(it, k, v);
  }
  bool insert(In k, Value v) override {
    K::check(k, name_);
    if constexpr (kPlainKeys) return map_.try_emplace(k, v).second;
    auto it = map_.lower_bound(k);
    if (it != map_.end() && it->first == k) return false;
    add(it, k, v);
    return true;
  }
  bool update(In k, Value v) override {
    K::check(k, name_);
    auto it = map_.find(k);
    if (it == map_.end()) return false;
    it->second = v;
    return true;
  }
  bool remove(In k) override {
    K::check(k, name_);
    auto it = map_.find(k);
    if (it == map_.end()) return false;
    heap_bytes_ -= K::heap_of(it->first);
    map_.erase(it);
    return true;
  }
  std::optional<Value> lookup(In k) const override {
    K::check(k, name_);
    auto it = map_.find(k);
    return it == map_.end() ? std::nullopt : std::optional<Value>(it->second);
  }
  std::size_t scan(In start, std::size_t count, std::vector<typename K::Pair>& out) const override {
    K::check(start, name_);
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
  template <class It>
  void add(It hint, In k, Value v) {
    map_.emplace_hint(hint, typename Map::key_type(k), v);
    heap_bytes_ += K::heap_of(k);
  }

  std::string name_;
  double bytes_per_record_;
  std::size_t heap_bytes_ = 0;
  Map map_;
};

}  // namespace dptree::btree
