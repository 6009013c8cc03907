// check() of the concurrent string form (string_cdptree.h), with writers quiesced: the leaf
// list of the current version (engine/string_base.h: every long key's record whole, in an owned log
// page, keys increasing) against the published inner index; the key pages (each named page
// kept and counted exactly, none leaked); each shard's log (its records whole, after its end no
// page starting with a whole record, a replay gives the
// shard's tree exactly (and the tree is sound), every key in its own shard and in the bloom
// filter); the other log table empty unless a parked merge keeps the Middle; and the allocator's
// live blocks exactly the blocks the tree reaches (no leaked leaf, page or block).
#include <set>
#include <string>
#include <unordered_set>

#include "cdptree/string_cdptree.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/pool.h"
#include "format/verify.h"

namespace dptree::cdp {

using namespace detail;  // NOLINT: the layout vocabulary

void StringCDPTree::check_buffer(const StringBuffer& b, const std::unordered_set<u64>& owned,
                                 std::set<u64>& reach, CheckReport& r) const {
  std::size_t pages = 0, records = 0;
  for (std::size_t p = 0; p < b.shards(); ++p) {
    StringSlotMap replay;
    std::size_t shard_pages = 0;
    const std::string at = "log " + std::to_string(b.version()) + " shard " + std::to_string(p);
    if (!check_string_log_chain(t_, b.table()[p], b.version(), owned, reach, replay, shard_pages,
                                records, r, /*inherits=*/true))
      return;
    pages += shard_pages;
    if (shard_pages != b.log_pages(p).size())
      r.fail(at + ": page count differs from the volatile state");
    const StringMap buffered =
        checked_buffer_entries(b.tree(p), replay, at + ": ", "the shard's entries", r);
    for (const auto& kv : buffered) {
      const u64 h = hash_string(kv.first);
      if (b.shard_of(h) != p) r.fail(at + ": holds a key of another shard");
      if (!b.bloom_has(h))
        r.fail(at + ": bloom filter misses a key of " + std::to_string(kv.first.size()) + " bytes");
    }
  }
  r.facts.emplace_back("log_records", static_cast<double>(records));
  r.facts.emplace_back("log_pages", static_cast<double>(pages));
}

// The key pages given to the buffers' shards to go on in (PLog::inherit) and not taken yet:
// owned, of the key flavor, in no live log and given once. The tree holds them as the page
// cache holds its pages (one no entry names any more is freed when its buffer's logs are
// released, or by recovery's sweep).
void StringCDPTree::check_offers(std::initializer_list<const StringBuffer*> bufs,
                                 const std::unordered_set<u64>& owned, std::set<u64>& reach,
                                 CheckReport& r) const {
  std::unordered_set<u64> logs, given;
  for (const StringBuffer* b : bufs)
    if (b)
      for (u64 pg : b->all_log_pages()) logs.insert(pg);
  for (const StringBuffer* b : bufs) {
    if (!b) continue;
    for (u64 pg : b->offered_pages()) {
      const std::string at =
          "key page at " + std::to_string(pg) + " given to log " + std::to_string(b->version());
      if (!owned.contains(pg))
        r.fail(at + " is not owned by the directory");
      else if (t_.pool.at<LogPageHeader>(pg)->flavor != kKeyFlavor)
        r.fail(at + " is not of the key flavor");
      if (logs.contains(pg)) r.fail(at + " is in a live log");
      if (!given.insert(pg).second) r.fail(at + " is given twice");
      reach.insert(pg);
    }
  }
}

CheckReport StringCDPTree::check() const {
  CheckReport r;
  wait_idle();
  const Root& R = root_->base;
  for (const auto& p : verify_format(R, kCStringRootMagic, kCDPTreeGvBits)) r.fail(p);
  if (!r.ok) return r;
  const bool parked = merge_broken.load();
  if (parked)
    r.fail("a merge is parked: it did not fit the pool (pool_full); remove keys to retry it");
  if (R.gv & kInMerge) r.fail("in_merge is set outside a merge");
  if (R.gv & kInGc) r.fail("the GC bit is set outside a merge");
  if (R.pending) r.fail("pendingLeaves exists outside a merge");
  if (!parked && (R.gv & kTwoLogs)) r.fail("two logs are marked live outside a merge");
  const int v = cv();
  std::set<u64> reach{*t_.pool.root_word(), root_->log_table[0].off, root_->log_table[1].off};
  std::unordered_set<u64> owned;
  const StringBase* base = gp_b_.load();
  if (!check_directory(t_.pool, R.dir, owned, reach, r) ||
      !check_string_leaves(t_, L_, R.head[v], v, R.base_count[v], *base, owned, reach, r) || !r.ok)
    return r;
  const StringBuffer* f = gp_f.load();
  const StringBuffer* m = gp_m.load();
  if (f->version() != (m ? 1 - v : v)) r.fail("the Front's log is not of the expected version");
  check_key_pages(t_, L_, R.head[v], v, key_pages_, live_log_pages(), reach, r);
  check_buffer(*f, owned, reach, r);
  if (m) {
    check_buffer(*m, owned, reach, r);
  } else {
    for (std::size_t p = 0; p < opt_.log_partitions; ++p)
      if (table(1 - v)[p])
        return r.fail("the log of the previous version was not released (shard " +
                      std::to_string(p) + ")"),
               r;
  }
  check_offers({f, m}, owned, reach, r);
  if (!r.ok) return r;
  const std::size_t live = t_.check_free_pages_and_blocks(owned, reach, r, false);
  r.facts.emplace_back("leaves", static_cast<double>(base->leaves.size()));
  r.facts.emplace_back("front_entries", static_cast<double>(f->size()));
  r.facts.emplace_back("live_blocks", static_cast<double>(live));
  return r;
}

}  // namespace dptree::cdp
