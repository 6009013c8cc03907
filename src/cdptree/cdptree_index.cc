// The concurrent DPTree behind the common Index interface, registered as "cdptree".
#include <algorithm>
#include <memory>
#include <string>

#include "cdptree/options.h"
#include "dptree/cdptree.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "registry/index_table.h"
#include "st/family.h"

namespace dptree {
namespace {

class CDPTreeIndex final : public detail::FamilyIndex<CDPTree> {
 public:
  explicit CDPTreeIndex(std::unique_ptr<CDPTree> t) : FamilyIndex("cdptree", std::move(t)) {}

 private:
  Extra extra(const CDPTreeStats& s) const override {
    Extra e = {
        {"front_entries", d(s.front_entries)},        {"middle_entries", d(s.middle_entries)},
        {"base_records", d(s.base_records)},          {"leaves", d(s.leaves)},
        {"leaf_capacity", d(s.leaf_capacity)},        {"merges", d(s.merges)},
        {"merge_partitions", d(s.merge_partitions)},  {"splits", d(s.splits)},
        {"consolidations", d(s.consolidations)},      {"leaves_created", d(s.leaves_created)},
        {"leaves_freed", d(s.leaves_freed)},          {"lazy_rebuilds", d(s.lazy_rebuilds)},
        {"inplace_updates", d(s.inplace_updates)},    {"log_pages", d(s.log_pages)},
        {"free_log_pages", d(s.free_log_pages)},      {"restart_count", d(s.restart_count)},
        {"recovery_seconds", s.last_recovery_seconds}};
    e.emplace_back("inplace_deletes", d(s.inplace_deletes));
    return e;
  }
};

}  // namespace

void register_cdptree_index() {
  add_builtin_index(
      IndexInfo{"cdptree",
                "concurrent DPTree (§3): OLC buffer tree + partitioned PM log, parallel merge "
                "into the PM base tree (in the background from 2 threads on), parallel recovery; "
                "merge and recovery workers = --threads unless set",
                true, true,
                [](const IndexConfig& c) -> std::unique_ptr<Index> {
                  pm::Pool& pool = require_pool(c, "cdptree");
                  auto opt = CDPTreeOptions::from_map(c.options);
                  // Every thread the tree uses counts in the caller's thread count: as many
                  // merge and recovery workers as threads, and with one thread the writer
                  // merges itself (no background thread beside it), as DPTree does.
                  const unsigned threads = std::max(1u, c.threads);
                  if (!c.options.count("merge_threads")) opt.merge_threads = threads;
                  if (!c.options.count("recovery_threads")) opt.recovery_threads = threads;
                  if (!c.options.count("background_merge") && threads == 1)
                    opt.background_merge = false;
                  if (*pool.root_word())
                    return std::make_unique<CDPTreeIndex>(CDPTree::open(pool, opt));
                  return std::make_unique<CDPTreeIndex>(CDPTree::create(pool, opt));
                },
                cdptree_option_docs()});
}

}  // namespace dptree
