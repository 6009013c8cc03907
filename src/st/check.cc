// DPTreeCore::check(): every structural invariant of the leaf list (§2.2), the log (§2.1),
// the owner directory, and that the allocator's live blocks are exactly the blocks the tree
// reaches (no leak).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "dptree/pm/allocator.h"
#include "dptree/pm/pool.h"
#include "format/verify.h"
#include "st/dptree_impl.h"

namespace dptree {

using namespace detail;  // NOLINT: the layout vocabulary

// The slots of version v of one leaf: states, key ranges, probe paths, no duplicates; and,
// when its restart counter is current, its count, order array and fingerprints (§2.2).
// Returns the number of keys.
std::size_t DPTreeCore::Impl::check_leaf(Leaf lf, int v, const LeafWalk& walk,
                                         CheckReport& r) const {
  const std::string& at = walk.at;
  std::vector<std::pair<u64, std::size_t>> keys;
  for (std::size_t s = 0; s < L.cap; ++s) {
    // Only the current set: a new leaf's other set is not written back (engine/merge.cc) and
    // may hold anything after a crash until a merge copies the current set over it.
    if (lf.state(v, s) == kBadState) r.fail(at + ": bitmap code 11");
    if (lf.state(v, s) != kOccupied) continue;
    u64 k = lf.key(s);
    keys.emplace_back(k, s);
    if (k > walk.mk || (!walk.first && k <= walk.prev_max))
      r.fail(at + ": key " + std::to_string(k) + " outside its range");
    if (lf.value(s) & kTombstone) r.fail(at + ": a tombstone in the base tree");
    // The probe from the key's hash must reach it before an empty slot.
    std::size_t p = home_slot(hash_key(k), L.cap), n = 0;
    while (p != s && lf.state(v, p) != kEmpty && n < L.cap) {
      p = p + 1 == L.cap ? 0 : p + 1;
      ++n;
    }
    if (p != s) r.fail(at + ": key " + std::to_string(k) + " unreachable by probing");
  }
  std::sort(keys.begin(), keys.end());
  for (std::size_t i = 1; i < keys.size(); ++i)
    if (keys[i].first == keys[i - 1].first)
      r.fail(at + ": duplicate key " + std::to_string(keys[i].first));
  if (lf.rc(v) > root->restart_count) {
    r.fail(at + ": restart counter ahead of the global one");
  } else if (lf.rc(v) == root->restart_count) {
    if (lf.count(v) != keys.size()) {
      r.fail(at + ": count differs from the bitmap");
      return keys.size();
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (lf.order(v)[i] != keys[i].second) {
        r.fail(at + ": order array wrong at " + std::to_string(i));
        break;
      }
      if (lf.fp(v)[keys[i].second] != fingerprint_of(hash_key(keys[i].first)))
        r.fail(at + ": fingerprint wrong");
    }
    if (long s = leaf_bad_fp_code(lf, v); s >= 0)
      r.fail(at + ": slot " + std::to_string(s) + "'s fingerprint byte is not its state's code");
  }
  return keys.size();
}

// The leaf list of version v against base_count and the DRAM inner index; false when the
// list has a cycle. `total` gets the number of keys.
bool DPTreeCore::Impl::check_leaves(int v, LeafWalk& walk, std::size_t& total,
                                    CheckReport& r) const {
  total = 0;
  for (u64 l = root->head[v].off; l; l = leaf(l).next(v).off) {
    if (!walk.enter(l)) return false;
    total += check_leaf(leaf(l), v, walk, r);
    walk.leave();
  }
  const std::vector<u64>& chain = walk.chain;
  if (!chain.empty() && leaf(chain.back()).max_key(v) != ~u64{0})
    r.fail("the last leaf's max key is not the largest key");
  if (total != root->base_count[v])
    r.fail("base_count " + std::to_string(root->base_count[v]) + " != " + std::to_string(total) +
           " keys in the leaves");
  if (chain != base->leaves()) r.fail("inner index does not match the leaf list");
  for (std::size_t i = 0; i < chain.size() && i < base->max_keys().size(); ++i)
    if (base->max_keys()[i] != leaf(chain[i]).max_key(v)) r.fail("inner index max key differs");
  return true;
}

// The log of version v: owned pages of its flavor whose records end at the first invalid
// one and replay to exactly the buffer tree (§2.1). False when the page list has a cycle.
bool DPTreeCore::Impl::check_log(int v, const std::unordered_set<u64>& owned, std::set<u64>& reach,
                                 std::size_t& npages, std::size_t& records, CheckReport& r) const {
  npages = records = 0;
  std::map<u64, u64> replay;
  bool ended = false;
  const LogPageHeader* h = nullptr;
  for (LogPagePtr link = root->log_head[v]; link; link = h->next) {
    if (++npages > owned.size() + 1) {
      r.fail("log page list has a cycle");
      return false;
    }
    if (!(h = checked_page(pool, link, codec.G, r))) return false;
    const u64 pg = link.off;
    reach.insert(pg);
    if (!owned.contains(pg)) r.fail("log page not owned by the directory");
    if (h->type != kPageType) r.fail("log page has a wrong type word");
    if (h->flavor != static_cast<u64>(v)) r.fail("log page of the wrong flavor in the log");
    for (std::size_t rr = 0; rr < codec.G.per_page; ++rr) {
      const u64* rec = pool.at<u64>(pg + codec.G.offset(rr));
      u64 k, val;
      // From the end on every word must be of the other version: a stale word of this one
      // (or a torn record recovery left in place) could complete a valid record with a
      // later torn append.
      if (ended || !codec.decode(rec, log_valid_bit(v), k, val)) {
        if (codec.any_word_valid(rec, log_valid_bit(v)))
          r.fail("log page at " + std::to_string(pg) + ": record " + std::to_string(rr) +
                 (ended ? " after the end of the log" : ", the end of the log,") +
                 " holds a word of the current version");
        ended = true;
        continue;
      }
      replay[k] = val;
      ++records;
    }
  }
  if (npages != log->pages().size()) r.fail("log page count differs from the volatile PLog state");
  std::map<u64, u64> buf;
  for (auto it = buffer.begin(); it.valid(); ++it) {
    buf[it.key()] = it.value();
    if (!bloom.may_contain(it.key()))
      r.fail("bloom filter misses buffer key " + std::to_string(it.key()));
  }
  if (replay != buf) r.fail("replaying the log does not give the buffer tree");
  return true;
}

void DPTreeCore::Impl::check(CheckReport& r) const {
  auto fail = [&](const std::string& s) { r.fail(s); };
  for (const auto& p : verify_format(*root, kRootMagic, kDPTreeGvBits)) fail(p);
  if (!r.ok) return;
  r.facts.emplace_back("format_version", static_cast<double>(kFormatVersion));
  if (root->gv & kInMerge) fail("in_merge is set outside a merge");
  if (root->gv & kInGc) fail("the GC bit is set outside a merge");
  if (root->pending) fail("pendingLeaves exists outside a merge");
  const int v = cv(), nv = 1 - v;
  if (root->log_head[nv]) fail("the log of the previous version was not released");
  std::set<u64> reach{*pool.root_word()};
  std::unordered_set<u64> owned;  // blocks owned by the directory
  if (!check_directory(pool, root->dir, owned, reach, r)) return;
  std::size_t total = 0, npages = 0, records = 0;
  LeafWalk walk(*this, v, owned, reach, r);
  if (!check_leaves(v, walk, total, r)) return;
  if (!check_log(v, owned, reach, npages, records, r)) return;
  std::size_t live = check_free_pages_and_blocks(owned, reach, r);
  r.facts.emplace_back("leaves", static_cast<double>(walk.leaves));
  r.facts.emplace_back("base_records", static_cast<double>(total));
  r.facts.emplace_back("buffer_entries", static_cast<double>(buffer.size()));
  r.facts.emplace_back("log_records", static_cast<double>(records));
  r.facts.emplace_back("log_pages", static_cast<double>(npages));
  r.facts.emplace_back("live_blocks", static_cast<double>(live));
  r.facts.emplace_back("restart_count", static_cast<double>(root->restart_count));
}

}  // namespace dptree
