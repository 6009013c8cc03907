// DPTree behind the common Index interface (index.h), registered as "dptree". The options
// key_bytes / value_bytes pick the entry width at run time (default 8 / 8; an existing
// pool's own widths when not given), so the benchmark measures 16..112-byte entries. Its
// string form (create_string) is StringDPTree (st/string_tree.h).
#include <memory>
#include <string>

#include "dptree/dptree.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "engine/family.h"
#include "engine/string_base.h"
#include "format/layout.h"
#include "format/string_leaf.h"
#include "format/verify.h"
#include "registry/index_table.h"
#include "st/options.h"
#include "st/string_tree.h"

namespace dptree {
namespace {

using namespace detail;  // NOLINT: FamilyIndex, Root

// A DPTree whose entry widths are chosen at run time (DPTree<K, V> fixes them at compile
// time; both are the same DPTreeCore).
class SizedDPTree final : public DPTreeCore {
 public:
  SizedDPTree(pm::Pool& pool, const DPTreeOptions& opt, bool create)
      : DPTreeCore(pool, opt, opt.key_bytes, opt.value_bytes, create) {}
};

class DPTreeIndex final : public FamilyIndex<DPTreeCore> {
 public:
  DPTreeIndex(std::unique_ptr<DPTreeCore> t, std::size_t key_bytes, std::size_t value_bytes)
      : FamilyIndex("dptree", std::move(t)), key_bytes_(key_bytes), value_bytes_(value_bytes) {}

 private:
  // The entry widths first: `dptree check` and the benchmark's JSON name them.
  Extra extra(const DPTreeStats& s) const override {
    Extra e = {{"key_bytes", static_cast<double>(key_bytes_)},
               {"value_bytes", static_cast<double>(value_bytes_)}};
    for (auto& figure : named_figures(s)) e.push_back(std::move(figure));
    return e;
  }
  std::size_t key_bytes_, value_bytes_;
};

// Leaves of 8 and small log pages (1 KiB; 2 KiB for string records): a merge every few
// hundred writes.
TestPlan test_plan() {
  const auto small = [](const char* log_page_size) {
    return TestPlan::Options{{"leaf_capacity", "8"},
                             {"merge_ratio", "0.3"},
                             {"min_merge_records", "16"},
                             {"log_page_size", log_page_size}};
  };
  return {.fuzz = TestPlan::Fuzz{small("1024"), 512 * 1024},
          .fuzz_strings = TestPlan::Fuzz{small("2048"), 512 * 1024},
          .kill = TestPlan::Kill{1, small("1024")}};
}

// A pool of the string form, of this format or an earlier one.
bool is_string_pool(const pm::Pool& pool) {
  return root_if_ours(pool, kStringRootMagic, sizeof(Root)) ||
         older_string_format(pool, kStringOlderMagics) != 0;
}

}  // namespace

void register_dptree_indexes() {
  IndexInfo info{
      "dptree",
      "DPTree (§2): DRAM buffer tree + PM log, in-place merged PM base tree; single-threaded",
      true,
      false,
      [](const IndexConfig& c) -> std::unique_ptr<Index> {
        pm::Pool& pool = require_pool(c, "dptree");
        auto opt = DPTreeOptions::from_map(c.options);
        bool exists = *pool.root_word() != 0;
        if (is_string_pool(pool))
          throw Error(Errc::wrong_index, "pool '" + pool.name() +
                                             "' holds a DPTree of string keys, not of integer "
                                             "keys: open it with --key-type string "
                                             "(IndexInfo::create_string), or "
                                             "use a new pool");
        const auto* root = static_cast<const Root*>(root_if_ours(pool, kRootMagic, sizeof(Root)));
        const bool ours = root != nullptr;
        if (!opt.key_bytes) opt.key_bytes = ours ? root->key_bytes : 8;
        if (!opt.value_bytes) opt.value_bytes = ours ? root->value_bytes : 8;
        return std::make_unique<DPTreeIndex>(std::make_unique<SizedDPTree>(pool, opt, !exists),
                                             opt.key_bytes, opt.value_bytes);
      },
      dptree_option_docs(),
      [](const IndexConfig& c) -> std::unique_ptr<StringIndex> {
        pm::Pool& pool = require_pool(c, "dptree");
        auto opt = DPTreeOptions::from_map(c.options);
        if ((opt.key_bytes && opt.key_bytes != 8) || (opt.value_bytes && opt.value_bytes != 8))
          throw Error(Errc::invalid_argument,
                      "dptree over string keys: key_bytes and value_bytes do not apply (its "
                      "keys are 1.." +
                          std::to_string(kStringTreeMaxKey) +
                          " bytes, its values 8): leave them out");
        if (opt.split == SplitMode::thirds)
          throw Error(Errc::invalid_argument,
                      "dptree over string keys: split=thirds applies to integer keys only (the "
                      "string form's merge splits on its own): leave it out");
        return std::make_unique<StringDPTree>(pool, opt, *pool.root_word() == 0);
      },
      test_plan()};
  info.display_name = "DPTree";
  add_builtin_index(std::move(info));
}

}  // namespace dptree
