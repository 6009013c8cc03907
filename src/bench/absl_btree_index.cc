// `absl-btree`: absl::btree_map in DRAM, the benchmark's yardstick. A well-kept B-tree
// library that anyone can build, so every figure the benchmark reports can be read as a ratio
// to it, whatever the load of the machine that ran it. Single-threaded, no persistence.
#include <absl/container/btree_map.h>

#include "bench/reference_indexes.h"
#include "dptree/error.h"
#include "dptree/registry.h"

#include <mutex>

namespace dptree::bench {
namespace {

class AbslBTreeIndex final : public Index {
 public:
  std::string name() const override { return "absl-btree"; }
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
    // Estimate: 16-byte pairs in nodes of 256 bytes that are, as in any B-tree, about 70% full
    // after random inserts; absl does not report its allocations.
    s.dram_bytes = static_cast<std::size_t>(static_cast<double>(map_.size()) * 16 / 0.7);
    return s;
  }

 private:
  absl::btree_map<Key, Value> map_;
};

}  // namespace

void register_reference_indexes() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_index({"absl-btree",
                    "absl::btree_map in DRAM, single-threaded; the yardstick every ratio is "
                    "read against, no persistence",
                    false, false, [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
                      if (!cfg.options.empty())
                        throw Error(Errc::invalid_argument,
                                    "absl-btree takes no index options (got '" +
                                        cfg.options.begin()->first + "'); remove the option");
                      return std::make_unique<AbslBTreeIndex>();
                    }});
  });
}

}  // namespace dptree::bench
