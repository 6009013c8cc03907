// The concurrent DPTree behind the common Index interface, registered as "cdptree".
#include <memory>
#include <string>

#include "dptree/cdptree.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"

namespace dptree {
namespace {

class CDPTreeIndex final : public Index {
 public:
  explicit CDPTreeIndex(std::unique_ptr<CDPTree> t) : t_(std::move(t)) {}
  std::string name() const override { return "cdptree"; }
  void upsert(Key k, Value v) override { t_->upsert(k, v); }
  bool insert(Key k, Value v) override { return t_->insert(k, v); }
  bool update(Key k, Value v) override { return t_->update(k, v); }
  bool remove(Key k) override { return t_->remove(k); }
  std::optional<Value> lookup(Key k) const override { return t_->lookup(k); }
  std::size_t scan(Key s, std::size_t n, std::vector<KV>& out) const override {
    return t_->scan(s, n, out);
  }
  Value max_value() const override { return CDPTree::kMaxValue; }
  IndexStats stats() const override {
    auto s = t_->stats();
    IndexStats r;
    r.records = s.records;
    r.dram_bytes = s.dram_bytes;
    r.pm_bytes = s.pm_bytes;
    auto d = [](auto x) { return static_cast<double>(x); };
    r.extra = {
        {"front_entries", d(s.front_entries)},        {"middle_entries", d(s.middle_entries)},
        {"base_records", d(s.base_records)},          {"leaves", d(s.leaves)},
        {"leaf_capacity", d(s.leaf_capacity)},        {"merges", d(s.merges)},
        {"merge_partitions", d(s.merge_partitions)},  {"splits", d(s.splits)},
        {"consolidations", d(s.consolidations)},      {"leaves_created", d(s.leaves_created)},
        {"leaves_freed", d(s.leaves_freed)},          {"lazy_rebuilds", d(s.lazy_rebuilds)},
        {"inplace_updates", d(s.inplace_updates)},    {"log_pages", d(s.log_pages)},
        {"free_log_pages", d(s.free_log_pages)},      {"restart_count", d(s.restart_count)},
        {"recovery_seconds", s.last_recovery_seconds}};
    r.extra.emplace_back("inplace_deletes", d(s.inplace_deletes));
    return r;
  }
  CheckReport check() const override { return t_->check(); }

 private:
  std::unique_ptr<CDPTree> t_;
};

}  // namespace

void register_cdptree_index() {
  register_index(IndexInfo{
      "cdptree",
      "concurrent DPTree (§3): OLC buffer tree + partitioned PM log, background parallel "
      "merge into the PM base tree, parallel recovery",
      true, true, [](const IndexConfig& c) -> std::unique_ptr<Index> {
        if (!c.pool)
          throw Error(Errc::invalid_argument,
                      "index 'cdptree' is persistent: give it a pool (IndexConfig::pool)");
        auto opt = CDPTreeOptions::from_map(c.options);
        if (*c.pool->root_word())
          return std::make_unique<CDPTreeIndex>(CDPTree::open(*c.pool, opt));
        return std::make_unique<CDPTreeIndex>(CDPTree::create(*c.pool, opt));
      }});
}

}  // namespace dptree
