// The two volatile upper bounds of the benchmark, registered as `btree` and `stdmap`.
//
// `btree` is safe for concurrent use through one reader-writer lock over the whole tree
// (lookups and scans share it, writes take it alone): correct and simple, not scalable; it
// is the DRAM reference, not a concurrent index design. `stdmap` is single-threaded.
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "btree/btree.h"
#include "btree/map_index.h"
#include "dptree/error.h"
#include "dptree/registry.h"
#include "registry/index_table.h"
#include "registry/option_values.h"

namespace dptree {
namespace {

class BTreeIndex final : public Index {
 public:
  std::string name() const override { return "btree"; }

  void upsert(Key k, Value v) override {
    std::unique_lock lock(mu_);
    tree_.insert_or_assign(k, v);
  }
  bool insert(Key k, Value v) override {
    std::unique_lock lock(mu_);
    return tree_.insert(k, v);
  }
  bool update(Key k, Value v) override {
    std::unique_lock lock(mu_);
    return tree_.update(k, v);
  }
  bool remove(Key k) override {
    std::unique_lock lock(mu_);
    return tree_.erase(k);
  }
  std::optional<Value> lookup(Key k) const override {
    std::shared_lock lock(mu_);
    const Value* v = tree_.find(k);
    return v ? std::optional<Value>(*v) : std::nullopt;
  }
  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    std::shared_lock lock(mu_);
    std::size_t n = 0;
    for (auto it = tree_.lower_bound(start); it.valid() && n < count; ++it, ++n)
      out.emplace_back(it.key(), it.value());
    return n;
  }
  IndexStats stats() const override {
    std::shared_lock lock(mu_);
    IndexStats s;
    s.records = tree_.size();
    s.dram_bytes = tree_.memory_bytes();
    s.extra = {{"height", static_cast<double>(tree_.height())},
               {"leaves", static_cast<double>(tree_.leaf_count())},
               {"inner_nodes", static_cast<double>(tree_.inner_count())}};
    return s;
  }
  CheckReport check() const override {
    std::shared_lock lock(mu_);
    CheckReport r;
    for (auto& p : tree_.check()) r.fail(p);
    r.facts = {{"records", static_cast<double>(tree_.size())},
               {"leaves", static_cast<double>(tree_.leaf_count())}};
    return r;
  }

 private:
  mutable std::shared_mutex mu_;
  btree::BPlusTree<Key, Value> tree_;
};

}  // namespace

void register_volatile_indexes() {
  IndexInfo btree_info{
      "btree",
      "volatile DRAM B+-tree (64-slot sorted nodes, linked leaves), one reader-writer "
      "lock; upper bound, no persistence",
      false, true, [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
        option_values::refuse_options("btree", cfg.options);
        return std::make_unique<BTreeIndex>();
      }};
  btree_info.display_name = "B+-tree (DRAM)";
  add_builtin_index(std::move(btree_info));
  IndexInfo stdmap_info{
      "stdmap", "std::map (red-black tree) in DRAM, single-threaded; no persistence", false, false,
      [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
        option_values::refuse_options("stdmap", cfg.options);
        // A red-black node (colour + 3 links = 32 B) and the pair, as malloc rounds it.
        return std::make_unique<btree::MapIndex<std::map<Key, Value>>>("stdmap", 64);
      }};
  stdmap_info.display_name = "std::map";
  add_builtin_index(std::move(stdmap_info));
}

}  // namespace dptree
