// The OLC B+-tree (btree/olc_btree.h) behind the Index interface, registered as `olc-btree`:
// the benchmark's scalable volatile upper bound beside `btree` (one reader-writer lock).
#include <memory>
#include <string>

#include "btree/olc_btree.h"
#include "dptree/error.h"
#include "dptree/registry.h"
#include "registry/index_table.h"
#include "registry/option_values.h"

namespace dptree {
namespace {

class OlcBTreeIndex final : public Index {
 public:
  std::string name() const override { return "olc-btree"; }
  void upsert(Key k, Value v) override { tree_.upsert(k, v); }
  bool insert(Key k, Value v) override { return tree_.insert(k, v); }
  bool update(Key k, Value v) override { return tree_.update(k, v); }
  bool remove(Key k) override { return tree_.erase(k); }
  std::optional<Value> lookup(Key k) const override { return tree_.lookup(k); }
  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    std::size_t n = 0;
    if (count == 0) return 0;
    tree_.scan(start, [&](Key k, Value v) {
      out.emplace_back(k, v);
      return ++n < count;
    });
    return n;
  }
  IndexStats stats() const override {
    IndexStats s;
    s.records = tree_.size();
    s.dram_bytes = tree_.dram_bytes();
    s.extra = {{"height", static_cast<double>(tree_.height())},
               {"nodes", static_cast<double>(tree_.node_count())}};
    return s;
  }
  CheckReport check() const override {
    CheckReport r;
    for (auto& p : tree_.check()) r.fail(p);
    r.facts = {{"records", static_cast<double>(tree_.size())}};
    return r;
  }

 private:
  btree::OlcBTree tree_;
};

}  // namespace

void register_olc_btree_index() {
  IndexInfo info{"olc-btree",
                 "volatile DRAM B+-tree with Optimistic Lock Coupling (the concurrent DPTree's "
                 "buffer tree, §3.1); scalable upper bound, no persistence",
                 false, true, [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
                   option_values::refuse_options("olc-btree", cfg.options);
                   return std::make_unique<OlcBTreeIndex>();
                 }};
  info.display_name = "OLC B+-tree (DRAM)";
  add_builtin_index(std::move(info));
}

}  // namespace dptree
