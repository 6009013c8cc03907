// PACTree behind the project's two interfaces (roart/trie_fronts.h), registered as "pactree".
#include "baselines/pactree/pactree_index.h"

#include <memory>
#include <string>

#include "baselines/pactree/pactree.h"
#include "baselines/roart/trie_fronts.h"
#include "dptree/error.h"
#include "dptree/registry.h"
#include "registry/index_table.h"
#include "registry/option_table.h"

namespace dptree {

const char* pactree_current_phase() {
  return baselines::pactree::current_phase();
}

namespace baselines {
namespace {

struct PacTreeOptions {
  bool background = true;
};

// The one option: who inserts a split's anchor into the search layer.
const option_values::OptionTable<PacTreeOptions>& pactree_options() {
  static const auto t = option_values::OptionTable<PacTreeOptions>("pactree").choice(
      "updater", &PacTreeOptions::background, {{"background", true}, {"inline", false}},
      "who inserts a split's anchor into the search layer: a background thread (the paper's "
      "asynchronous update) or the writer that split (with --threads 1 it is always the "
      "writer)");
  return t;
}

}  // namespace
}  // namespace baselines

void register_pactree_index() {
  using namespace baselines;
  IndexInfo info{
      "pactree",
      "PACTree (Kim et al., SOSP 2021): a persistent ART search layer (our ROART engine, its "
      "bottom words naming data nodes) over a linked data layer of 56-pair nodes holding their "
      "pairs inline, unsorted, with one-byte fingerprints; splits link the new node at once and "
      "a background thread inserts its anchor into the search layer (inline with --threads 1 or "
      "updater=inline); lock-free readers with node versions, writers lock one data node; "
      "integer and string keys",
      true,
      true,
      [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
        pm::Pool& pool = require_pool(cfg, "pactree");
        bool bg = pactree_options().parse(cfg.options).background;
        return std::make_unique<TrieInts<pactree::PacTree>>("pactree", pool, cfg.threads, bg);
      },
      pactree_options().docs()};
  info.create_string = [](const IndexConfig& cfg) -> std::unique_ptr<StringIndex> {
    pm::Pool& pool = require_pool(cfg, "pactree");
    bool bg = pactree_options().parse(cfg.options).background;
    return std::make_unique<TrieStrings<pactree::PacTree>>("pactree", pool, cfg.threads, bg);
  };
  // The fuzzer inserts search-layer anchors inline (one execution, one thread), and so does
  // the crash suite, which checks images against the workload thread's acknowledged writes
  // (pactree_concurrency_test crashes the background updater).
  info.tests = {
      .fuzz = TestPlan::Fuzz{{{"updater", "inline"}}, 640 * 1024},
      .fuzz_strings = TestPlan::Fuzz{{{"updater", "inline"}}, 768 * 1024},
      .kill = TestPlan::Kill{2, {}},
      .generic = TestPlan::Generic{{{"updater", "inline"}}, "data_nodes", 20, true, 2600}};
  info.display_name = "PACTree";
  add_builtin_index(std::move(info));
}

}  // namespace dptree
