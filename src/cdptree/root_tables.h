// The persistent root of both forms of the concurrent DPTree (integer keys, cdptree.cc, and
// string keys, string_cdptree.cc): the CRoot block and its two log header tables of one word
// per log partition (format/cdptree_root.h).
#pragma once

#include <cstddef>
#include <vector>

#include "engine/family.h"
#include "format/cdptree_root.h"

namespace dptree::cdp {

using detail::CRoot;
using detail::u64;

// A new root with `magic` and the stored format words, activated in the pool's root word.
CRoot* create_root(detail::TreeParts& t, u64 magic, std::size_t leaf_capacity,
                   std::size_t log_page_size, std::size_t partitions);
// The two header tables, zeroed (also repairs a create that crashed before they existed).
void ensure_log_tables(detail::TreeParts& t, CRoot& root, std::size_t partitions);
// open(): each existing header table owned by its root word and as long as the partition
// count (Error(corrupt) naming `tree` otherwise); returns the offsets of every table word,
// each of which starts a log page chain.
std::vector<u64> log_table_words(const detail::TreeParts& t, const CRoot& root,
                                 std::size_t partitions, const char* tree);

}  // namespace dptree::cdp
