// ROART behind the project's two interfaces (trie_fronts.h), registered as "roart".
#include "baselines/roart/roart.h"

#include <memory>
#include <string>

#include "baselines/roart/tree.h"
#include "baselines/roart/trie_fronts.h"
#include "dptree/error.h"
#include "dptree/registry.h"
#include "registry/index_table.h"
#include "registry/option_values.h"

namespace dptree {

const char* roart_current_phase() {
  return baselines::roart::current_phase();
}

namespace {

pm::Pool& roart_pool(const IndexConfig& cfg) {
  pm::Pool& pool = require_pool(cfg, "roart");
  option_values::refuse_options(
      "roart", cfg.options, "its leaf arrays hold 64 entries and its nodes are ART's four sizes");
  return pool;
}

}  // namespace

void register_roart_index() {
  using namespace baselines;
  IndexInfo info{
      "roart",
      "ROART (Ma et al., FAST 2021): persistent ART (nodes of 4, 16, 48 and 256 children, key "
      "bytes packed into child words) whose leaves are compacted into unsorted 64-entry leaf "
      "arrays with fingerprints; out-of-place leaves; every change made durable by one 8-byte "
      "store; lock-free readers, ROWEX writers; integer and string keys",
      true, true, [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
        return std::make_unique<TrieInts<roart::Tree>>("roart", roart_pool(cfg), cfg.threads);
      }};
  info.create_string = [](const IndexConfig& cfg) -> std::unique_ptr<StringIndex> {
    return std::make_unique<TrieStrings<roart::Tree>>("roart", roart_pool(cfg), cfg.threads);
  };
  info.tests = {.fuzz = TestPlan::Fuzz{{}, 512 * 1024},
                .fuzz_strings = TestPlan::Fuzz{{}, 640 * 1024},
                .kill = TestPlan::Kill{2, {}},
                .generic = TestPlan::Generic{{}, "leaf_arrays", 20, true, 2000}};
  info.display_name = "ROART";
  add_builtin_index(std::move(info));
}

}  // namespace dptree
