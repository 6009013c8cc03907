// An Index over an ordered map with std::map's interface (std::map, absl::btree_map), single-
// threaded: the volatile references `stdmap` and `absl-btree`. `bytes_per_record` is the
// DRAM estimate stats() reports, since neither map reports its allocations.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dptree/index.h"

namespace dptree::btree {

template <class Map>
class MapIndex final : public Index {
 public:
  MapIndex(std::string name, double bytes_per_record)
      : name_(std::move(name)), bytes_per_record_(bytes_per_record) {}
  std::string name() const override { return name_; }
  void upsert(Key k, Value v) override { map_.insert_or_assign(k, v); }
  bool insert(Key k, Value v) override { return map_.try_emplace(k, v).second; }
  bool update(Key k, Value v) override {
    auto it = map_.find(k);
    if (it == map_.end()) return false;
    it->second = v;
    return true;
  }
  bool remove(Key k) override { return map_.erase(k) > 0; }
  std::optional<Value> lookup(Key k) const override {
    auto it = map_.find(k);
    return it == map_.end() ? std::nullopt : std::optional<Value>(it->second);
  }
  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    std::size_t n = 0;
    for (auto it = map_.lower_bound(start); it != map_.end() && n < count; ++it, ++n)
      out.emplace_back(it->first, it->second);
    return n;
  }
  IndexStats stats() const override {
    IndexStats s;
    s.records = map_.size();
    s.dram_bytes = sizeof(map_) +
                   static_cast<std::size_t>(static_cast<double>(map_.size()) * bytes_per_record_);
    return s;
  }

 private:
  std::string name_;
  double bytes_per_record_;
  Map map_;
};

}  // namespace dptree::btree
