// ROART behind the project's two interfaces (trie_fronts.h), registered as "roart".
#include "baselines/roart/roart.h"

#include <memory>
#include <string>

#include "baselines/roart/tree.h"
#include "baselines/roart/trie_fronts.h"
#include "dptree/error.h"
#include "dptree/registry.h"
#include "registry/index_table.h"

namespace dptree {

const char* roart_current_phase() {
  return baselines::roart::current_phase();
}

namespace baselines {

// The pool of a trie index that takes no options (ROART, PACTree): `why` says what is fixed.
pm::Pool& trie_pool(const IndexConfig& cfg, const std::string& index, const std::string& why) {
  if (!cfg.pool) throw Error(Errc::invalid_argument, index + " is persistent: give it a pool");
  if (!cfg.options.empty())
    throw Error(Errc::invalid_argument, index + " takes no index options (got '" +
                                            cfg.options.begin()->first + "'): " + why);
  return *cfg.pool;
}

}  // namespace baselines

void register_roart_index() {
  using namespace baselines;
  const char* why = "its leaf arrays hold 64 entries and its nodes are ART's four sizes";
  IndexInfo info{
      "roart",
      "ROART (Ma et al., FAST 2021): persistent ART (nodes of 4, 16, 48 and 256 children, key "
      "bytes packed into child words) whose leaves are compacted into unsorted 64-entry leaf "
      "arrays with fingerprints; out-of-place leaves; every change made durable by one 8-byte "
      "store; lock-free readers, ROWEX writers; integer and string keys",
      true, true, [why](const IndexConfig& cfg) -> std::unique_ptr<Index> {
        return std::make_unique<TrieInts<roart::Tree>>("roart", trie_pool(cfg, "roart", why),
                                                       cfg.threads);
      }};
  info.create_string = [why](const IndexConfig& cfg) -> std::unique_ptr<StringIndex> {
    return std::make_unique<TrieStrings<roart::Tree>>("roart", trie_pool(cfg, "roart", why),
                                                      cfg.threads);
  };
  add_builtin_index(std::move(info));
}

}  // namespace dptree
