// CDPTree::check: the invariants of a quiescent concurrent DPTree (no merge running).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "cdptree/cdptree_impl.h"
#include "format/verify.h"

namespace dptree {

using namespace detail;  // NOLINT: the layout vocabulary

// The slots of version v of one leaf, its count and order array when its restart counter is
// current (§2.2), and that a tombstone written in place (§3.4) is marked for the next merge.
CDPTree::Impl::LeafCount CDPTree::Impl::check_leaf(Leaf lf, int v, const LeafWalk& walk,
                                                   const cdp::BaseSnapshot& snap,
                                                   CheckReport& r) const {
  const Root& R = root->base;
  const std::string& at = walk.at;
  std::vector<std::pair<u64, std::size_t>> keys;
  LeafCount c;
  for (std::size_t s = 0; s < L.cap; ++s) {
    if (lf.state(v, s) == kBadState) r.fail(at + ": bitmap code 11");
    if (lf.state(v, s) != kOccupied) continue;
    u64 k = lf.key(s);
    keys.emplace_back(k, s);
    if (k > walk.mk || (!walk.first && k <= walk.prev_max)) r.fail(at + ": key outside its range");
    if (lf.value(s) & kTombstone) {
      ++c.tombstones;
      if (lf.value(s) != kTombstone) r.fail(at + ": a base value with the tombstone bit and more");
    }
    if (leaf_find(lf, v, k) != static_cast<long>(s) && lf.rc(v) == R.restart_count)
      r.fail(at + ": key " + std::to_string(k) + " not found by probing");
  }
  std::sort(keys.begin(), keys.end());
  for (std::size_t i = 1; i < keys.size(); ++i)
    if (keys[i].first == keys[i - 1].first) r.fail(at + ": duplicate key");
  const u64 rc = lf.rc(v);
  if (rc == R.restart_count) {
    if (long s = leaf_bad_fp_code(lf, v); s >= 0)
      r.fail(at + ": slot " + std::to_string(s) + "'s fingerprint byte is not its state's code");
    if (lf.count(v) != keys.size()) {
      r.fail(at + ": count differs from the bitmap");
    } else {
      for (std::size_t i = 0; i < keys.size(); ++i)
        if (lf.order(v)[i] != keys[i].second) {
          r.fail(at + ": order array wrong");
          break;
        }
    }
  } else if ((rc & ~cdp::kRcLock) >= R.restart_count) {
    r.fail(at + ": restart counter ahead of the global one, or locked now");
  }
  if (c.tombstones && walk.leaves <= snap.leaf.size() &&
      !cdp::may_hold_tombstone(snap, walk.leaves - 1))
    r.fail(at + ": a tombstone written in place, but the leaf is not marked for the next merge");
  c.keys = keys.size();
  return c;
}

// The leaf list of version v against base_count, the deletes in place and the inner index
// snapshot; false when the list has a cycle.
bool CDPTree::Impl::check_leaves(int v, LeafWalk& walk, LeafCount& total, CheckReport& r) const {
  const Root& R = root->base;
  // An entry deleted in place (§3.4) holds kTombstone until the next merge drops it: counted
  // in base_count, and marked in the snapshot.
  const cdp::BaseSnapshot* snap = gp_b.load();
  for (u64 l = R.head[v].off; l; l = leaf(l).next(v).off) {
    if (!walk.enter(l)) return false;
    LeafCount c = check_leaf(leaf(l), v, walk, *snap, r);
    total.keys += c.keys;
    total.tombstones += c.tombstones;
    walk.leave();
  }
  const std::vector<u64>& chain = walk.chain;
  if (!chain.empty() && leaf(chain.back()).max_key(v) != ~u64{0})
    r.fail("the last leaf's max key is not the largest key");
  if (total.keys != R.base_count[v])
    r.fail("base_count " + std::to_string(R.base_count[v]) + " != " + std::to_string(total.keys) +
           " keys in the leaves");
  // Since the restart's first merge, exactly the deletes in place since the last merge.
  if (!snap->any_leaf_tombstoned && total.tombstones != snap->tombstones.load())
    r.fail(std::to_string(total.tombstones) + " tombstones in the base tree, " +
           std::to_string(snap->tombstones.load()) + " deletes in place since the last merge");
  if (snap->count != R.base_count[v]) r.fail("the inner index's count differs from base_count");
  if (snap->leaf != chain || snap->v != v) r.fail("inner index does not match the leaf list");
  for (std::size_t i = 0; i < chain.size() && i < snap->max.size(); ++i)
    if (snap->max[i] != leaf(chain[i]).max_key(v)) r.fail("inner index max key differs");
  return true;
}

namespace {
// A partition's page chain; a bad link is a failure of the report, not an exception (check()
// lists every problem it finds), and the partition's pages are then not examined.
std::vector<u64> checked_chain(const cdp::PartitionedLog& log, std::size_t p, CheckReport& r) {
  try {
    return log.read_chain(p);
  } catch (const Error& e) {
    r.fail("log partition " + std::to_string(p) + ": " + e.what());
    return {};
  }
}
}  // namespace

// The Front's log: its pages, replayed per partition, give exactly the Front tree (§3.1).
// Returns the Front's entries; `pages_n` and `records` get the log's size.
std::size_t CDPTree::Impl::check_front_log(int v, const std::unordered_set<u64>& owned,
                                           std::set<u64>& reach, std::size_t& pages_n,
                                           std::size_t& records, CheckReport& r) const {
  const cdp::Cpbt* f = gp_f.load();
  if (gp_m.load()) r.fail("a Middle buffer exists outside a merge");
  if (f->log.version() != v) r.fail("the Front log is not of version gv");
  std::map<u64, u64> replay;
  pages_n = records = 0;
  const u64 vb = log_valid_bit(v);
  for (std::size_t p = 0; p < opt.log_partitions; ++p)
    for (u64 pg : checked_chain(f->log, p, r)) {
      ++pages_n;
      if (!reach.insert(pg).second) r.fail("log page reached twice");
      if (!owned.contains(pg)) r.fail("log page not owned by the directory");
      const auto* h = pool.at<LogPageHeader>(pg);
      if (h->type != kPageType) r.fail("log page has a wrong type word");
      if (h->flavor != static_cast<u64>(v)) r.fail("log page of the wrong flavor in the log");
      for (std::size_t rr = 0; rr < codec.G.per_page; ++rr) {
        u64 k, val;
        if (!codec.decode(pool.at<u64>(pg + codec.G.offset(rr)), vb, k, val)) continue;
        if (f->log.partition_of(k) != p) r.fail("log record in the wrong partition");
        replay[k] = val;
        ++records;
      }
    }
  // Records carry a validity bit, not a log version, so a stale record of the same bit reads
  // as one of this log. The freelists keep them out (docs/cdptree.md, "Stale records"): what
  // a page holds when taken is invalid here, so a slot holds a record of this log or none.
  // What keeps that true is checked: an unclaimed slot holds no word of this version (a torn
  // append there could complete a stale record), and a page the release will cache for the
  // next flavor holds a whole record in every slot (that flavor reads the old bit as valid).
  for (const auto& ps : f->log.page_states())
    for (std::size_t rr = 0; rr < codec.G.per_page; ++rr) {
      const u64* rec = pool.at<u64>(ps.off + codec.G.offset(rr));
      u64 k, val;
      const char* bad = nullptr;
      if (rr >= ps.claimed && codec.any_word_valid(rec, vb))
        bad = ", not written yet, holds a word of the current version";
      else if (rr < ps.claimed && ps.kept && !codec.decode(rec, vb, k, val))
        bad = " is not a whole record, on a page the log's release will cache";
      if (!bad) continue;
      r.fail("log page at " + std::to_string(ps.off) + ": record " + std::to_string(rr) + bad);
      break;
    }
  if (pages_n != f->log.pages().size())
    r.fail("log page count differs from the volatile partition state");
  std::map<u64, u64> buf;
  bool bloom_ok = true;
  f->tree.for_each_frozen([&](u64 k, u64 val) {
    buf[k] = val;
    bloom_ok = bloom_ok && f->bloom.may_contain(k);
  });
  if (!bloom_ok) r.fail("the bloom filter misses a Front key");
  if (replay != buf) r.fail("replaying the log does not give the Front buffer tree");
  for (auto& e : f->tree.check()) r.fail("Front tree: " + e);
  return buf.size();
}

void CDPTree::Impl::check(CheckReport& r) const {
  auto fail = [&](const std::string& s) { r.fail(s); };
  const Root& R = root->base;
  for (const auto& p : verify_format(R, kCRootMagic, kCDPTreeGvBits)) fail(p);
  if (!r.ok) return;
  r.facts.emplace_back("format_version", static_cast<double>(kFormatVersion));
  if (merge_broken) fail("a merge failed (pool full) and left its Middle buffer");
  if (R.gv & kInMerge) fail("in_merge is set outside a merge");
  if (R.gv & kInGc) fail("the GC bit is set outside a merge");
  if (R.gv & cdp::kTwoLogs) fail("two logs are marked live outside a merge");
  if (pending->exists()) fail("pendingLeaves exists outside a merge");
  const int v = cv(), nv = 1 - v;
  std::set<u64> reach{*pool.root_word()};
  for (int x = 0; x < 2; ++x) {
    if (!root->log_table[x]) return fail("a log header table is missing");
    reach.insert(root->log_table[x].off);
  }
  for (std::size_t p = 0; p < opt.log_partitions; ++p)
    if (table(nv)[p]) {
      fail("the log of the previous version was not released");
      break;
    }
  std::unordered_set<u64> owned;
  if (!check_directory(pool, R.dir, owned, reach, r)) return;
  LeafWalk walk(*this, v, owned, reach, r);
  LeafCount total;
  if (!check_leaves(v, walk, total, r)) return;
  std::size_t pages_n = 0, records = 0;
  const std::size_t front = check_front_log(v, owned, reach, pages_n, records, r);
  std::size_t live = check_free_pages_and_blocks(owned, reach, r);
  r.facts.emplace_back("leaves", static_cast<double>(walk.leaves));
  r.facts.emplace_back("base_records", static_cast<double>(total.keys));
  r.facts.emplace_back("base_tombstones", static_cast<double>(total.tombstones));
  r.facts.emplace_back("front_entries", static_cast<double>(front));
  r.facts.emplace_back("log_records", static_cast<double>(records));
  r.facts.emplace_back("log_pages", static_cast<double>(pages_n));
  r.facts.emplace_back("live_blocks", static_cast<double>(live));
  r.facts.emplace_back("restart_count", static_cast<double>(R.restart_count));
}

}  // namespace dptree
