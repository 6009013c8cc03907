// CDPTree::check: the invariants of a quiescent concurrent DPTree (no merge running).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "cdptree/cdptree_impl.h"

namespace dptree {

using namespace detail;  // NOLINT: the layout vocabulary

void CDPTree::Impl::check(CheckReport& r) const {
  auto fail = [&](const std::string& s) { r.fail(s); };
  const Root& R = root->base;
  if (R.magic != cdp::kCRootMagic) return fail("root magic is wrong");
  if (merge_broken) fail("a merge failed (pool full) and left its Middle buffer");
  if (R.gv & kInMerge) fail("in_merge is set outside a merge");
  if (R.gv & kInGc) fail("the GC bit is set outside a merge");
  if (R.gv & cdp::kTwoLogs) fail("two logs are marked live outside a merge");
  if (pending->exists()) fail("pendingLeaves exists outside a merge");
  const int v = cv(), nv = 1 - v;
  std::set<u64> reach{*pool.root_word()};
  for (int x = 0; x < 2; ++x) {
    if (!root->log_table[x]) return fail("a log header table is missing");
    reach.insert(root->log_table[x]);
  }
  for (std::size_t p = 0; p < opt.log_partitions; ++p)
    if (table(nv)[p]) {
      fail("the log of the previous version was not released");
      break;
    }
  std::unordered_set<u64> owned;
  for (u64 b : dir->blocks()) reach.insert(b);
  dir->for_each_owned([&](u64, u64 blk) { owned.insert(blk); });

  // Base leaves of version v. An entry deleted in place (§3.4) holds kTombstone until the
  // next merge drops it: counted in base_count, and marked in the snapshot (see below).
  const cdp::BaseSnapshot* snap = gp_b.load();
  std::size_t total = 0, tombstones = 0;
  LeafWalk walk(*this, v, owned, reach, r);
  for (u64 l = R.head[v]; l; l = leaf(l).next(v)) {
    if (!walk.enter(l)) return;
    const std::string& at = walk.at;
    Leaf lf = leaf(l);
    std::vector<std::pair<u64, std::size_t>> keys;
    std::size_t leaf_tombstones = 0;
    for (std::size_t s = 0; s < L.cap; ++s) {
      if (lf.state(v, s) == kBadState) fail(at + ": bitmap code 11");
      if (lf.state(v, s) != kOccupied) continue;
      u64 k = lf.key(s);
      keys.emplace_back(k, s);
      if (k > walk.mk || (!walk.first && k <= walk.prev_max)) fail(at + ": key outside its range");
      if (lf.value(s) & kTombstone) {
        ++leaf_tombstones;
        if (lf.value(s) != kTombstone) fail(at + ": a base value with the tombstone bit and more");
      }
      if (leaf_find(lf, v, k) != static_cast<long>(s) && lf.rc(v) == R.restart_count)
        fail(at + ": key " + std::to_string(k) + " not found by probing");
    }
    std::sort(keys.begin(), keys.end());
    for (std::size_t i = 1; i < keys.size(); ++i)
      if (keys[i].first == keys[i - 1].first) fail(at + ": duplicate key");
    u64 rc = lf.rc(v);
    if (rc == R.restart_count) {
      if (lf.count(v) != keys.size()) {
        fail(at + ": count differs from the bitmap");
      } else {
        for (std::size_t i = 0; i < keys.size(); ++i)
          if (lf.order(v)[i] != keys[i].second) {
            fail(at + ": order array wrong");
            break;
          }
      }
    } else if ((rc & ~cdp::kRcLock) >= R.restart_count) {
      fail(at + ": restart counter ahead of the global one, or locked now");
    }
    if (leaf_tombstones && walk.leaves <= snap->leaf.size() &&
        !cdp::may_hold_tombstone(*snap, walk.leaves - 1))
      fail(at + ": a tombstone written in place, but the leaf is not marked for the next merge");
    tombstones += leaf_tombstones;
    total += keys.size();
    walk.leave();
  }
  const std::vector<u64>& chain = walk.chain;
  if (!chain.empty() && Leaf{pool.at(chain.back()), &L}.max_key(v) != ~u64{0})
    fail("the last leaf's max key is not the largest key");
  if (total != R.base_count[v])
    fail("base_count " + std::to_string(R.base_count[v]) + " != " + std::to_string(total) +
         " keys in the leaves");
  // Since the restart's first merge, exactly the deletes in place since the last merge.
  if (!snap->any_leaf_tombstoned && tombstones != snap->tombstones.load())
    fail(std::to_string(tombstones) + " tombstones in the base tree, " +
         std::to_string(snap->tombstones.load()) + " deletes in place since the last merge");
  if (snap->count != R.base_count[v]) fail("the inner index's count differs from base_count");
  if (snap->leaf != chain || snap->v != v) fail("inner index does not match the leaf list");
  for (std::size_t i = 0; i < chain.size() && i < snap->max.size(); ++i)
    if (snap->max[i] != Leaf{pool.at(chain[i]), &L}.max_key(v)) fail("inner index max key differs");

  // The Front's log: its pages, replayed per partition, give exactly the Front tree.
  const cdp::Cpbt* f = gp_f.load();
  if (gp_m.load()) fail("a Middle buffer exists outside a merge");
  if (f->log.version() != v) fail("the Front log is not of version gv");
  std::map<u64, u64> replay;
  std::size_t pages_n = 0, records = 0;
  const u64 vb = log_valid_bit(v);
  for (std::size_t p = 0; p < opt.log_partitions; ++p) {
    auto ch = f->log.read_chain(p);
    for (u64 pg : ch) {
      ++pages_n;
      if (!reach.insert(pg).second) fail("log page reached twice");
      if (!owned.contains(pg)) fail("log page not owned by the directory");
      const u64* w = pool.at<u64>(pg);
      if (w[1] != kPageType) fail("log page has a wrong type word");
      if (w[3] != static_cast<u64>(v)) fail("log page of the wrong flavor in the log");
      for (std::size_t rr = 0; rr < codec.G.per_page; ++rr) {
        u64 k, val;
        if (!codec.decode(pool.at<u64>(pg + codec.G.offset(rr)), vb, k, val)) continue;
        if (f->log.partition_of(k) != p) fail("log record in the wrong partition");
        replay[k] = val;
        ++records;
      }
    }
  }
  // Records belong to this log: a slot no writer claimed yet holds no word of its version.
  for (auto [pg, used] : f->log.tails())
    for (std::size_t rr = used; rr < codec.G.per_page; ++rr)
      if (codec.any_word_valid(pool.at<u64>(pg + codec.G.offset(rr)), vb)) {
        fail("log page at " + std::to_string(pg) + ": record " + std::to_string(rr) +
             ", not written yet, holds a word of the current version");
        break;
      }
  if (pages_n != f->log.pages().size())
    fail("log page count differs from the volatile partition state");
  std::map<u64, u64> buf;
  bool bloom_ok = true;
  f->tree.for_each_frozen([&](u64 k, u64 val) {
    buf[k] = val;
    bloom_ok = bloom_ok && f->bloom.may_contain(k);
  });
  if (!bloom_ok) fail("the bloom filter misses a Front key");
  if (replay != buf) fail("replaying the log does not give the Front buffer tree");
  for (auto& e : f->tree.check()) fail("Front tree: " + e);
  std::size_t live = check_free_pages_and_blocks(owned, reach, r);
  r.facts.emplace_back("leaves", static_cast<double>(walk.leaves));
  r.facts.emplace_back("base_records", static_cast<double>(total));
  r.facts.emplace_back("base_tombstones", static_cast<double>(tombstones));
  r.facts.emplace_back("front_entries", static_cast<double>(buf.size()));
  r.facts.emplace_back("log_records", static_cast<double>(records));
  r.facts.emplace_back("log_pages", static_cast<double>(pages_n));
  r.facts.emplace_back("live_blocks", static_cast<double>(live));
  r.facts.emplace_back("restart_count", static_cast<double>(R.restart_count));
}

}  // namespace dptree
