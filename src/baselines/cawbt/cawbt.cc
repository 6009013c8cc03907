// CAWBT's registration as `cawbt` (the tree: tree.h).
#include "baselines/cawbt/cawbt.h"

#include <memory>

#include "baselines/cawbt/tree.h"
#include "dptree/registry.h"
#include "registry/index_table.h"

namespace dptree {

void register_cawbt_index() {
  using baselines::cawbt::Cawbt;
  add_persistent_index(
      "cawbt", "CAWBT",
      "CAWBT (Lee et al., IEICE 2019): 64-byte PM nodes with 4-byte IDs through a DRAM ID "
      "table, one-line redo log for splits, global write lock; assumes 64-byte atomic writes "
      "(x86 promises 8), so it is not crash-consistent on real hardware",
      true, "its nodes are one cache line",
      {.fuzz = TestPlan::Fuzz{},
       .kill = TestPlan::Kill{2, {}},
       .generic = TestPlan::Generic{{}, "nodes", 500, false, 2400}},
      [](pm::Pool& pool, const IndexConfig&) { return std::make_unique<Cawbt>(pool); });
}

}  // namespace dptree
