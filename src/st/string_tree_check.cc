// check() of DPTree's string form (string_tree.h): the format words and merge state, the owner
// directory, the leaf list of the current version and its key pages (the walks both string forms
// share, engine/string_check.cc), the log (every record whole, the log replays to exactly the
// buffer, every buffer key in the bloom filter), and that the allocator's live blocks are exactly
// the blocks the tree reaches (no leaked leaf, page or block).
#include <set>
#include <string>
#include <unordered_set>

#include "dptree/pm/pool.h"
#include "engine/string_base.h"
#include "format/verify.h"
#include "st/string_tree.h"

namespace dptree::detail {

// The log of the current version: a replay that gives exactly the buffer, every buffer key in
// the bloom filter.
void StringDPTree::check_log(const std::unordered_set<u64>& owned, std::set<u64>& reach,
                             CheckReport& r) const {
  const int cv = static_cast<int>(root_->gv & kVersionBit);
  StringSlotMap replay;
  std::size_t npages = 0, records = 0;
  if (!check_string_log_chain(t_, root_->log_head[cv], cv, owned, reach, replay, npages, records,
                              r))
    return;
  if (npages != log_->pages().size()) r.fail("log page count differs from the volatile state");
  const StringMap buffered = checked_buffer_entries(buffer_, replay, "", "the buffer tree", r);
  for (const auto& kv : buffered)
    if (!bloom_.may_contain_hashed(hash_string(kv.first)))
      r.fail("bloom filter misses a buffer key of " + std::to_string(kv.first.size()) + " bytes");
  r.facts.emplace_back("log_records", static_cast<double>(records));
  r.facts.emplace_back("log_pages", static_cast<double>(npages));
}

CheckReport StringDPTree::check() const {
  CheckReport r;
  for (const auto& p : verify_format(*root_, kStringRootMagic, kDPTreeGvBits)) r.fail(p);
  if (!r.ok) return r;
  if (root_->gv & kInMerge) r.fail("in_merge is set outside a merge");
  if (root_->gv & kInGc) r.fail("the GC bit is set outside a merge");
  if (root_->pending) r.fail("pendingLeaves exists outside a merge");
  const int cv = static_cast<int>(root_->gv & kVersionBit);
  if (root_->log_head[1 - cv]) r.fail("the log of the previous version was not released");
  std::set<u64> reach{*t_.pool.root_word()};
  std::unordered_set<u64> owned;
  if (!check_directory(t_.pool, root_->dir, owned, reach, r) ||
      !check_string_leaves(t_, L_, root_->head[cv], cv, root_->base_count[cv], base_, owned, reach,
                           r) ||
      !r.ok)
    return r;
  check_key_pages(t_, L_, root_->head[cv], cv, key_pages_, {}, reach, r);
  check_log(owned, reach, r);
  if (!r.ok) return r;
  const std::size_t live = t_.check_free_pages_and_blocks(owned, reach, r, false);
  r.facts.emplace_back("leaves", static_cast<double>(base_.leaves.size()));
  r.facts.emplace_back("buffer_entries", static_cast<double>(buffer_.size()));
  r.facts.emplace_back("live_blocks", static_cast<double>(live));
  return r;
}

}  // namespace dptree::detail
