// PACTree behind the project's two interfaces (roart/trie_fronts.h), registered as "pactree".
#include "baselines/pactree/pactree_index.h"

#include <memory>
#include <string>

#include "baselines/pactree/pactree.h"
#include "baselines/roart/trie_fronts.h"
#include "dptree/error.h"
#include "dptree/registry.h"
#include "registry/index_table.h"

namespace dptree {

const char* pactree_current_phase() {
  return baselines::pactree::current_phase();
}

namespace baselines {
namespace {

// The one option: updater=background (the paper's asynchronous search-layer update) or inline.
bool background_updater(const IndexConfig& cfg) {
  for (const auto& [k, v] : cfg.options) {
    if (k != "updater")
      throw Error(Errc::invalid_argument,
                  "pactree: unknown option '" + k + "': the only option is 'updater'");
    if (v != "background" && v != "inline")
      throw Error(Errc::invalid_argument,
                  "pactree: option updater='" + v + "' is not known: pass background or inline");
  }
  auto it = cfg.options.find("updater");
  return it == cfg.options.end() || it->second == "background";
}

pm::Pool& pool_of(const IndexConfig& cfg) {
  if (!cfg.pool) throw Error(Errc::invalid_argument, "pactree is persistent: give it a pool");
  return *cfg.pool;
}

}  // namespace
}  // namespace baselines

void register_pactree_index() {
  using namespace baselines;
  IndexInfo info{
      "pactree",
      "PACTree (Kim et al., SOSP 2021): a persistent ART search layer (our ROART engine) over a "
      "linked data layer of unsorted 62-entry nodes with fingerprints; splits link the new node "
      "at once and a background thread inserts its anchor into the search layer (inline with "
      "--threads 1 or updater=inline); lock-free readers, writers lock one data node; integer "
      "and string keys",
      true, true, [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
        bool bg = background_updater(cfg);
        return std::make_unique<TrieInts<pactree::PacTree>>("pactree", pool_of(cfg), cfg.threads,
                                                            bg);
      }};
  info.create_string = [](const IndexConfig& cfg) -> std::unique_ptr<StringIndex> {
    bool bg = background_updater(cfg);
    return std::make_unique<TrieStrings<pactree::PacTree>>("pactree", pool_of(cfg), cfg.threads,
                                                           bg);
  };
  info.options = {{"updater", "choice", "background", "background, inline",
                   "who inserts a split's anchor into the search layer: a background thread (the "
                   "paper's asynchronous update) or the writer that split (with --threads 1 it "
                   "is always the writer)"}};
  add_builtin_index(std::move(info));
}

}  // namespace dptree
