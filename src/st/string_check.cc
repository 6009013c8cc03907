// check() of DPTree's string form (string_tree.h): the leaf list of the current version (every
// key's bytes in bounds, reached by exactly one entry, none leaked inside a leaf; keys
// strictly increasing; no tombstone), the log (every record decodes, the log replays to
// exactly the buffer), and that the allocator's live blocks are exactly the blocks the tree
// reaches (no leaked leaf, page or block).
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "dptree/pm/allocator.h"
#include "dptree/pm/pool.h"
#include "format/verify.h"
#include "st/string_base.h"
#include "st/string_tree.h"

namespace dptree::detail {

namespace {

// What is wrong with entry i of a leaf (empty: nothing), to follow "entry i". `at` is where
// its key's bytes must start if they are in the heap (each key's bytes follow the previous
// one's, so every heap byte is one key's); it moves past them.
std::string entry_problem(const StringLeaf& lf, std::size_t i, std::size_t& at,
                          std::size_t heap_end) {
  const StringEntry& e = lf.entries()[i];
  if (e.len == 0 || e.len > kStringTreeMaxKey)
    return " has a key of " + std::to_string(e.len) + " bytes (1.." +
           std::to_string(kStringTreeMaxKey) + ")";
  char buf[8];
  std::string_view k;
  if (e.len <= 8) {
    if (e.off != 0) return ": a key of up to 8 bytes with heap offset " + std::to_string(e.off);
    if (e.len < 8 && (e.prefix << (8 * e.len)) != 0)
      return ": prefix bytes beyond the key's length";
    k = lf.key(i, buf);
  } else {
    if (e.off != at)
      return "'s key bytes at " + std::to_string(e.off) + ", not " + std::to_string(at) +
             " (overlapping, out of bounds or leaving a gap)";
    at += e.len;
    if (at > heap_end) return "'s key bytes run past the key heap";
    k = std::string_view(reinterpret_cast<const char*>(lf.p + e.off), e.len);
    if (key_prefix(k) != e.prefix) return "'s prefix differs from its key";
  }
  if (lf.fps()[i] != string_fingerprint(hash_string(k)))
    return "'s fingerprint differs from its key's";
  return {};
}

}  // namespace

std::string string_leaf_problem(const pm::Pool& pool, u64 l, std::size_t capacity) {
  const std::size_t block = pool.allocator().block_size(l);
  if (block < 64) return "is smaller than its header";
  StringLeaf lf{pool.at(l)};
  const u64 count = lf.h().count, heap = lf.h().heap_bytes;
  if (count == 0 || count > capacity)
    return "holds " + std::to_string(count) + " entries (1.." + std::to_string(capacity) + ")";
  if (heap > block || StringLeaf::bytes(count, heap) > block)
    return "holds " + std::to_string(count) + " entries and " + std::to_string(heap) +
           " key bytes, more than its block of " + std::to_string(block) + " bytes";
  for (std::size_t b = 2 * count; b < StringLeaf::fp_bytes(count); ++b)
    if (lf.p[64 + b] != std::byte{0}) return "has fingerprint padding that is not zero";
  std::size_t at = lf.heap_start();  // where the next key's bytes must start
  for (std::size_t i = 0; i < count; ++i)
    if (std::string p = entry_problem(lf, i, at, lf.heap_start() + heap); !p.empty())
      return "entry " + std::to_string(i) + p;
  if (at != lf.heap_start() + heap)
    return std::to_string(lf.heap_start() + heap - at) + " key heap bytes no entry reaches";
  return {};
}

bool check_string_leaves(const TreeParts& t, std::size_t capacity, LeafPtr head, int v,
                         u64 base_count, const StringBase& base,
                         const std::unordered_set<u64>& owned, std::set<u64>& reach,
                         CheckReport& r) {
  std::size_t total = 0;
  std::vector<u64> chain;
  std::string prev;
  char buf[8];
  for (u64 l = head.off; l; l = t.pool.at<StringLeafHeader>(l)->next[v].off) {
    const std::string at =
        "leaf " + std::to_string(chain.size()) + " (offset " + std::to_string(l) + ")";
    if (chain.size() > owned.size()) return r.fail("leaf list has a cycle"), false;
    chain.push_back(l);
    if (!owned.contains(l)) r.fail(at + " is not owned by the directory");
    if (!t.alloc.is_live(l)) return r.fail(at + " is not a live block"), false;
    if (!reach.insert(l).second) r.fail(at + " is reached twice");
    StringLeaf lf{t.pool.at(l)};
    if (lf.h().type != kStringLeafType) r.fail(at + " has a wrong type word");
    if (!slot_owns(t.pool, lf.h().owner_slot, l))
      r.fail(at + ": its owner slot does not point to it");
    const std::string p = string_leaf_problem(t.pool, l, capacity);
    if (!p.empty()) return r.fail(at + " " + p), false;
    for (std::size_t i = 0; i < lf.count(); ++i) {
      const std::string_view k = lf.key(i, buf);
      if (!(chain.size() == 1 && i == 0) && !(std::string_view(prev) < k))
        r.fail(at + ": entry " + std::to_string(i) + "'s key is not above the one before");
      if (lf.entries()[i].value & kTombstone) r.fail(at + ": a tombstone in the base tree");
      prev.assign(k);
    }
    total += lf.count();
  }
  if (total != base_count)
    r.fail("base_count " + std::to_string(base_count) + " != " + std::to_string(total) +
           " keys in the leaves");
  if (chain != base.leaves) r.fail("inner index does not match the leaf list");
  if (base.count != base_count) r.fail("inner index counts a different number of keys");
  for (std::size_t i = 0; i < chain.size() && i < base.last.size(); ++i) {
    StringLeaf lf{t.pool.at(chain[i])};
    if (base.last[i] != lf.key(lf.count() - 1, buf) ||
        base.last_prefix[i] != lf.entries()[lf.count() - 1].prefix || base.counts[i] != lf.count())
      r.fail("inner index last key or entry count differs");
  }
  r.facts.emplace_back("base_records", static_cast<double>(total));
  return true;
}

StringMap checked_buffer_entries(const StringBufferTree& tree, const StringMap& replay,
                                 const std::string& prefix, std::string_view what, CheckReport& r) {
  for (const auto& p : tree.check()) r.fail(prefix + "buffer tree: " + p);
  StringMap entries;
  for (auto it = tree.begin(); it.valid(); ++it) entries.emplace(it.key(), it.value());
  if (replay != entries) r.fail(prefix + "replaying the log does not give " + std::string(what));
  return entries;
}

bool check_string_log_chain(const TreeParts& t, LogPagePtr head, int v,
                            const std::unordered_set<u64>& owned, std::set<u64>& reach,
                            StringMap& replay, std::size_t& pages, std::size_t& records,
                            CheckReport& r) {
  const u64 vb = log_valid_bit(v);
  const std::size_t per = t.codec.G.per_page;
  bool ended = false;
  std::string k;
  std::size_t npages = 0;
  const LogPageHeader* h = nullptr;
  for (LogPagePtr link = head; link; link = h->next) {
    if (++npages > owned.size() + 1) return r.fail("log page list has a cycle"), false;
    if (!(h = checked_page(t.pool, link, t.codec.G, r))) return false;
    const u64 pg = link.off;
    ++pages;
    reach.insert(pg);
    const std::string at = "log page at " + std::to_string(pg);
    if (!owned.contains(pg)) r.fail(at + " not owned by the directory");
    if (h->type != kPageType) r.fail(at + " has a wrong type word");
    if (h->flavor != static_cast<u64>(v)) r.fail(at + " of the wrong flavor in the log");
    const u64* w = t.pool.at<u64>(pg + t.codec.G.offset(0));
    for (std::size_t pos = 0; pos < per;) {
      if (ended || (w[pos] & 1) != vb) {
        if ((w[pos] & 1) == vb)
          return r.fail(at + ": word " + std::to_string(pos) +
                        " after the end of the log holds a word of its version"),
                 false;
        ended = true;
        ++pos;
        continue;
      }
      const std::size_t len = string_record_length(w[pos]);
      if (len == 0) {  // a pad: the rest of the page is pads
        for (std::size_t j = pos; j < per; ++j)
          if (w[j] != vb)
            return r.fail(at + ": word " + std::to_string(j) + " of the pad from word " +
                          std::to_string(pos) + " is not a pad"),
                   false;
        break;
      }
      const std::size_t n = string_record_words(len);
      if (len > kStringTreeMaxKey || pos + n > per)
        return r.fail(at + ": record at word " + std::to_string(pos) + " has a bad length " +
                      std::to_string(len)),
               false;
      for (std::size_t j = 1; j < n; ++j)
        if ((w[pos + j] & 1) != vb)
          return r.fail(at + ": record at word " + std::to_string(pos) + " is torn"), false;
      u64 val;
      decode_string_record(w + pos, n, k, val);
      replay.insert_or_assign(k, val);
      ++records;
      pos += n;
    }
  }
  return true;
}

// The log of the current version: a replay that gives exactly the buffer, every buffer key in
// the bloom filter.
void StringDPTree::check_log(const std::unordered_set<u64>& owned, std::set<u64>& reach,
                             CheckReport& r) const {
  const int cv = static_cast<int>(root_->gv & kVersionBit);
  StringMap replay;
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
      !check_string_leaves(t_, opt_.leaf_capacity, root_->head[cv], cv, root_->base_count[cv],
                           base_, owned, reach, r) ||
      !r.ok)
    return r;
  check_log(owned, reach, r);
  if (!r.ok) return r;
  const std::size_t live = t_.check_free_pages_and_blocks(owned, reach, r);
  r.facts.emplace_back("leaves", static_cast<double>(base_.leaves.size()));
  r.facts.emplace_back("buffer_entries", static_cast<double>(buffer_.size()));
  r.facts.emplace_back("live_blocks", static_cast<double>(live));
  return r;
}

}  // namespace dptree::detail
