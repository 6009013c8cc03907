// The root and log header tables of the concurrent DPTree (root_tables.h).
#include "cdptree/root_tables.h"

#include <string>

#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "engine/validate.h"

namespace dptree::cdp {

CRoot* create_root(detail::TreeParts& t, u64 magic, std::size_t leaf_capacity,
                   std::size_t log_page_size, std::size_t partitions) {
  pm::CategoryScope cat(pm::Category::alloc);
  u64 r = t.alloc.reserve(sizeof(CRoot));
  auto* rt = t.pool.at<CRoot>(r);
  CRoot init{};
  init.base.magic = magic;
  init.base.leaf_capacity = leaf_capacity;
  init.base.key_bytes = 8;
  init.base.value_bytes = 8;
  init.base.log_page_size = log_page_size;
  init.partitions = partitions;
  pm::store(rt, init);
  pm::flush(rt, sizeof(CRoot));
  t.alloc.activate(t.pool.root_word(), r);
  return rt;
}

void ensure_log_tables(detail::TreeParts& t, CRoot& root, std::size_t partitions) {
  for (int v = 0; v < 2; ++v) {
    if (root.log_table[v]) continue;
    pm::CategoryScope cat(pm::Category::alloc);
    u64 tb = t.alloc.reserve(8 * partitions);
    pm::fill_bytes(t.pool.at(tb), 0, 8 * partitions);
    pm::flush(t.pool.at(tb), 8 * partitions);
    t.alloc.activate(root.log_table[v], tb);
  }
}

std::vector<u64> log_table_words(const detail::TreeParts& t, const CRoot& root,
                                 std::size_t partitions, const char* tree) {
  std::vector<u64> words;
  for (int v = 0; v < 2; ++v) {
    if (!root.log_table[v]) continue;
    const u64 tb = root.log_table[v].off;
    detail::require_owned_block(t.pool, tb, t.pool.offset_of(&root.log_table[v]), 8 * partitions,
                                std::string(tree) + " log header table");
    for (std::size_t p = 0; p < partitions; ++p) words.push_back(tb + 8 * p);
  }
  return words;
}

}  // namespace dptree::cdp
