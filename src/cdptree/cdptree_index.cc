// The concurrent DPTree behind the common Index interface, registered as "cdptree"; its
// string form (create_string) is StringCDPTree (string_cdptree.h).
#include <algorithm>
#include <memory>
#include <string>

#include "cdptree/options.h"
#include "cdptree/string_cdptree.h"
#include "dptree/cdptree.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "engine/family.h"
#include "engine/string_base.h"
#include "format/cdptree_root.h"
#include "format/verify.h"
#include "registry/index_table.h"

namespace dptree {
namespace {

class CDPTreeIndex final : public detail::FamilyIndex<CDPTree> {
 public:
  explicit CDPTreeIndex(std::unique_ptr<CDPTree> t) : FamilyIndex("cdptree", std::move(t)) {}

 private:
  Extra extra(const CDPTreeStats& s) const override { return named_figures(s); }
};

// Every thread the tree uses counts in the caller's thread count: as many merge and recovery
// workers as threads, and with one thread the writer merges itself (no background thread
// beside it), as DPTree does. merge_steps=1 asks for the writers to merge: background_merge
// then defaults to 0 at any thread count.
CDPTreeOptions options_for(const IndexConfig& c) {
  auto given = c.options;
  if (given.count("merge_steps") && given.at("merge_steps") == "1" &&
      !given.count("background_merge"))
    given.emplace("background_merge", "0");
  auto opt = CDPTreeOptions::from_map(given);
  const unsigned threads = std::max(1u, c.threads);
  if (!c.options.count("merge_threads")) opt.merge_threads = threads;
  if (!c.options.count("recovery_threads")) opt.recovery_threads = threads;
  if (!c.options.count("background_merge") && threads == 1) opt.background_merge = false;
  return opt;
}

// The string form's merge ratio: the single-threaded DPTree's. A string merge writes each
// leaf it touches a metadata copy (bitmap, 2-byte fingerprints and order entries: about 16
// lines at 248 slots) besides the slots, so at the paper's 0.07 for integer keys it wrote 1.6
// lines an insert, at 0.1 1.2 (docs/cdptree.md "String keys").
constexpr double kStringMergeRatio = 0.1;

// A pool of the string form, of this format or an earlier one.
bool is_string_pool(const pm::Pool& pool) {
  using namespace detail;  // NOLINT: the layout vocabulary
  return root_if_ours(pool, kCStringRootMagic, sizeof(CRoot)) ||
         root_if_ours(pool, kCStringRootMagicR6, sizeof(CRoot)) ||
         older_string_format(pool, kCStringOlderMagics) != 0;
}

}  // namespace

void register_cdptree_index() {
  IndexInfo info{"cdptree",
                 "concurrent DPTree (§3): OLC buffer tree + partitioned PM log, parallel merge "
                 "into the PM base tree (in the background from 2 threads on), parallel recovery; "
                 "merge and recovery workers = --threads unless set",
                 true, true,
                 [](const IndexConfig& c) -> std::unique_ptr<Index> {
                   pm::Pool& pool = require_pool(c, "cdptree");
                   const auto opt = options_for(c);
                   if (is_string_pool(pool))
                     throw Error(Errc::wrong_index,
                                 "pool '" + pool.name() +
                                     "' holds a cdptree of string keys, not of integer keys: "
                                     "open it with --key-type string "
                                     "(IndexInfo::create_string), or use a new pool");
                   if (*pool.root_word())
                     return std::make_unique<CDPTreeIndex>(CDPTree::open(pool, opt));
                   return std::make_unique<CDPTreeIndex>(CDPTree::create(pool, opt));
                 },
                 cdptree_option_docs(),
                 [](const IndexConfig& c) -> std::unique_ptr<StringIndex> {
                   pm::Pool& pool = require_pool(c, "cdptree");
                   auto opt = options_for(c);
                   if (!c.options.count("merge_ratio")) opt.merge_ratio = kStringMergeRatio;
                   if (opt.split != SplitMode::rebuild)
                     throw Error(
                         Errc::invalid_argument,
                         "cdptree over string keys: split=thirds applies to integer keys only (the "
                         "string form's merge splits as Algorithm 2): leave it out");
                   return std::make_unique<cdp::StringCDPTree>(pool, opt, *pool.root_word() == 0);
                 },
                 // Leaves of 8, two log partitions of 1 KiB pages: a merge every few hundred
                 // writes. The fuzzer merges in the foreground, with one worker (one execution, one
                 // thread); the killed children merge in the background with two.
                 TestPlan{.fuzz = TestPlan::Fuzz{{{"leaf_capacity", "8"},
                                                  {"log_partitions", "2"},
                                                  {"log_page_size", "1024"},
                                                  {"merge_ratio", "0.5"},
                                                  {"min_merge_records", "16"},
                                                  {"psize", "2"},
                                                  {"background_merge", "0"},
                                                  {"merge_threads", "1"},
                                                  {"recovery_threads", "1"}},
                                                 640 * 1024},
                          .fuzz_strings = TestPlan::Fuzz{{{"leaf_capacity", "8"},
                                                          {"log_partitions", "2"},
                                                          {"log_page_size", "2048"},
                                                          {"merge_ratio", "0.5"},
                                                          {"min_merge_records", "16"},
                                                          {"background_merge", "0"},
                                                          {"merge_threads", "1"},
                                                          {"recovery_threads", "1"}},
                                                         640 * 1024},
                          .kill = TestPlan::Kill{2,
                                                 {{"leaf_capacity", "8"},
                                                  {"log_partitions", "2"},
                                                  {"log_page_size", "1024"},
                                                  {"merge_ratio", "0.3"},
                                                  {"min_merge_records", "16"},
                                                  {"psize", "2"}}}}};
  info.display_name = "DPTree (concurrent)";
  add_builtin_index(std::move(info));
}

}  // namespace dptree
