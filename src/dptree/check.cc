// DPTreeCore::check(): every structural invariant of the leaf list (§2.2), the log (§2.1),
// the owner directory, and that the allocator's live blocks are exactly the blocks the tree
// reaches (no leak).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "dptree/dptree_impl.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/pool.h"

namespace dptree {

using namespace detail;  // NOLINT: the layout vocabulary

void DPTreeCore::Impl::check(CheckReport& r) const {
  auto fail = [&](const std::string& s) { r.fail(s); };
  if (root->magic != kRootMagic) return fail("root magic is wrong");
  if (root->gv & kInMerge) fail("in_merge is set outside a merge");
  if (root->gv & kInGc) fail("the GC bit is set outside a merge");
  if (root->pending) fail("pendingLeaves exists outside a merge");
  const int v = cv(), nv = 1 - v;
  if (root->log_head[nv]) fail("the log of the previous version was not released");
  std::set<u64> reach{*pool.root_word()};
  std::unordered_set<u64> owned;  // blocks owned by the directory
  {
    std::size_t steps = 0;
    for (u64 b = root->dir; b; b = *pool.at<u64>(b)) {
      if (!reach.insert(b).second || ++steps > (1u << 30))
        return fail("owner directory has a cycle");
      for (std::size_t i = 1; i <= kDirSlots; ++i)
        if (u64 blk = pool.at<u64>(b)[i]) owned.insert(blk);
    }
  }
  // Leaves of version gv.
  std::size_t total = 0;
  LeafWalk walk(*this, v, owned, reach, r);
  for (u64 l = root->head[v]; l; l = leaf(l).next(v)) {
    if (!walk.enter(l)) return;
    const std::string& at = walk.at;
    Leaf lf = leaf(l);
    std::vector<std::pair<u64, std::size_t>> keys;
    for (std::size_t s = 0; s < L.cap; ++s) {
      // Only the current set: a new leaf's other set is not written back (merge.cc) and
      // may hold anything after a crash until a merge copies the current set over it.
      if (lf.state(v, s) == kBadState) fail(at + ": bitmap code 11");
      if (lf.state(v, s) != kOccupied) continue;
      u64 k = lf.key(s);
      keys.emplace_back(k, s);
      if (k > walk.mk || (!walk.first && k <= walk.prev_max))
        fail(at + ": key " + std::to_string(k) + " outside its range");
      if (lf.value(s) & kTombstone) fail(at + ": a tombstone in the base tree");
      // The probe from the key's hash must reach it before an empty slot.
      std::size_t p = home_slot(hash_key(k), L.cap), n = 0;
      while (p != s && lf.state(v, p) != kEmpty && n < L.cap) {
        p = p + 1 == L.cap ? 0 : p + 1;
        ++n;
      }
      if (p != s) fail(at + ": key " + std::to_string(k) + " unreachable by probing");
    }
    std::sort(keys.begin(), keys.end());
    for (std::size_t i = 1; i < keys.size(); ++i)
      if (keys[i].first == keys[i - 1].first)
        fail(at + ": duplicate key " + std::to_string(keys[i].first));
    if (lf.rc(v) == root->restart_count) {
      if (lf.count(v) != keys.size())
        fail(at + ": count differs from the bitmap");
      else
        for (std::size_t i = 0; i < keys.size(); ++i) {
          if (lf.order(v)[i] != keys[i].second) {
            fail(at + ": order array wrong at " + std::to_string(i));
            break;
          }
          if (lf.fp(v)[keys[i].second] != fingerprint_of(hash_key(keys[i].first)))
            fail(at + ": fingerprint wrong");
        }
    } else if (lf.rc(v) > root->restart_count) {
      fail(at + ": restart counter ahead of the global one");
    }
    total += keys.size();
    walk.leave();
  }
  const std::vector<u64>& chain = walk.chain;
  if (!chain.empty() && leaf(chain.back()).max_key(v) != ~u64{0})
    fail("the last leaf's max key is not the largest key");
  if (total != root->base_count[v])
    fail("base_count " + std::to_string(root->base_count[v]) + " != " + std::to_string(total) +
         " keys in the leaves");
  if (chain != base->leaves()) fail("inner index does not match the leaf list");
  for (std::size_t i = 0; i < chain.size() && i < base->max_keys().size(); ++i)
    if (base->max_keys()[i] != leaf(chain[i]).max_key(v)) fail("inner index max key differs");
  // The log: pages of version v, replaying to exactly the buffer tree.
  std::size_t npages = 0, records = 0;
  std::map<u64, u64> replay;
  bool ended = false;
  for (u64 pg = root->log_head[v]; pg; pg = pool.at<u64>(pg)[2]) {
    if (++npages > owned.size() + 1) return fail("log page list has a cycle");
    reach.insert(pg);
    const u64* w = pool.at<u64>(pg);
    if (!owned.contains(pg)) fail("log page not owned by the directory");
    if (w[1] != kPageType) fail("log page has a wrong type word");
    if (w[3] != static_cast<u64>(v)) fail("log page of the wrong flavor in the log");
    for (std::size_t rr = 0; rr < codec.G.per_page; ++rr) {
      const u64* rec = pool.at<u64>(pg + codec.G.offset(rr));
      u64 k, val;
      // From the end on every word must be of the other version: a stale word of this one
      // (or a torn record recovery left in place) could complete a valid record with a
      // later torn append.
      if (ended || !codec.decode(rec, log_valid_bit(v), k, val)) {
        if (codec.any_word_valid(rec, log_valid_bit(v)))
          fail("log page at " + std::to_string(pg) + ": record " + std::to_string(rr) +
               (ended ? " after the end of the log" : ", the end of the log,") +
               " holds a word of the current version");
        ended = true;
        continue;
      }
      replay[k] = val;
      ++records;
    }
  }
  if (npages != log->pages().size()) fail("log page count differs from the volatile PLog state");
  std::map<u64, u64> buf;
  for (auto it = buffer.begin(); it.valid(); it.next()) {
    buf[it.key()] = it.value();
    if (!bloom.may_contain(it.key()))
      fail("bloom filter misses buffer key " + std::to_string(it.key()));
  }
  if (replay != buf) fail("replaying the log does not give the buffer tree");
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
