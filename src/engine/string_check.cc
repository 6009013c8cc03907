// The checks both string forms' check() run (string_base.h): the leaf list of one version (its
// metadata in bounds, every live slot's prefix and length sound, a key of 9..16 bytes in its
// tagged slot with zeros past its length and, for a key longer than 16 bytes, its record a
// whole one inside an owned log page, of the slot's length and prefix; keys strictly
// increasing), the key pages (each named page kept, counted exactly, none
// leaked) and a log page chain (every record whole, replayed into a map for the caller to compare
// with its buffer). check() of DPTree's string form is st/string_tree_check.cc.
#include <bit>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "dptree/pm/allocator.h"
#include "dptree/pm/pool.h"
#include "engine/string_base.h"
#include "format/verify.h"

namespace dptree::detail {

namespace {

// What is wrong with the record at `rec` that an entry of a key of `len` bytes names (empty:
// nothing): inside a live log page (`page_bytes` long) owned by the slot it names, of the
// entry's length, whole.
std::string record_problem(const pm::Pool& pool, u64 rec, std::size_t len, std::size_t page_bytes) {
  const std::string at = "'s record at " + std::to_string(rec);
  if (rec % 8 || rec >= kStringRecLimit || rec > pool.size() ||
      pool.size() - rec < 16 + ((len + 7) / 8) * 8)
    return at + " is outside the pool or misaligned";
  const u64 page = pool.allocator().block_containing(rec);
  if (page == 0 || pool.allocator().block_size(page) < page_bytes || rec < page + 64 ||
      rec + 8 * string_record_words(len) > page + page_bytes)
    return at + " is not inside a live log page";
  const auto* h = pool.at<LogPageHeader>(page);
  if (h->type != kPageType || pool.allocator().owner_of(page) != h->owner_slot.off)
    return at + " is not inside a log page its owner slot owns";
  const u64* w = pool.at<u64>(rec);
  if (string_record_length(*w) != len)
    return at + " holds a key of " + std::to_string(string_record_length(*w)) + " bytes";
  const u64 epoch = *pool.at<u64>(page + kPageEpochOffset);
  if (!string_record_whole(w, *w & 1, rec, epoch)) return at + " is not whole (checksum)";
  return {};
}

// What is wrong with slot s of a leaf, live in its metadata copy c (empty: nothing), to
// follow "slot s". A tagged slot's length comes from its fingerprint (9..16 bytes whatever its
// bits): its key, rebuilt from the slot, must give that fingerprint back, which a tag set on
// another key's slot (its meta word a length and record, not key bytes) fails but for one
// chance in 8,192. An untagged slot's value has no top bit: the tag is that bit, so a leaf's
// slot cannot hold a remove's value.
std::string slot_problem(const pm::Pool& pool, const StringLeaf& lf, int c, std::size_t s,
                         std::size_t page_bytes) {
  const StringEntry& e = lf.slots()[s];
  const std::uint16_t fp = lf.fps(c)[s];
  const std::size_t len = e.len(fp);
  if (e.in_slot()) {  // bytes 8..15 in the meta word, zero past the length
    if (len < kStringSlotKey && (e.meta << (8 * (len - kStringInlineKey))) != 0)
      return " holds a key of " + std::to_string(len) + " bytes (by its fingerprint) with bytes " +
             "past its length";
  } else if (len == 0 || len > kStringTreeMaxKey) {
    return " has a key of " + std::to_string(len) + " bytes (1.." +
           std::to_string(kStringTreeMaxKey) + ")";
  } else if (len <= kStringInlineKey) {  // the prefix is the key: no record, zero past its length
    if (e.rec() != 0) return " names a record for a key of " + std::to_string(len) + " bytes";
    if (len < 8 && (e.prefix << (8 * len)) != 0)
      return "'s prefix has bytes past its key's " + std::to_string(len);
  } else if (len <= kStringSlotKey) {
    return " names a record for a key of " + std::to_string(len) +
           " bytes, which its slot must hold (tagged)";
  } else {
    if (std::string p = record_problem(pool, e.rec(), len, page_bytes); !p.empty()) return p;
    if (key_prefix(string_record_key(pool.at<u64>(e.rec()))) != e.prefix)
      return "'s prefix differs from its record's key";
  }
  StringKeyBuf buf;
  if (fp != string_fingerprint(hash_string(lf.key_of(e, fp, buf)), len))
    return "'s fingerprint differs from its key's";
  return {};
}

}  // namespace

std::string string_leaf_problem(const pm::Pool& pool, u64 l, int v, const StringLeafLayout& L,
                                std::size_t page_bytes) {
  const std::size_t block = pool.allocator().block_size(l);
  if (block < L.bytes)
    return "is a block of " + std::to_string(block) + " bytes, smaller than a leaf of " +
           std::to_string(L.cap) + " slots";
  const StringLeaf lf{pool.at(l), pool.base(), &L};
  if (lf.h().copy[v] > 1)
    return "names metadata copy " + std::to_string(lf.h().copy[v]) + " for version " +
           std::to_string(v) + " (0 or 1)";
  const int c = static_cast<int>(lf.h().copy[v]);
  const std::string ver = " of version " + std::to_string(v) + " (copy " + std::to_string(c) + ")";
  const u64* bm = lf.bitmap(c);
  std::size_t bits = 0;
  for (std::size_t w = 0; w < L.bm_words; ++w)
    bits += static_cast<std::size_t>(std::popcount(bm[w]));
  if (L.cap % 64 && bm[L.bm_words - 1] >> (L.cap % 64))
    return "has a bitmap" + ver + " with bits past its " + std::to_string(L.cap) + " slots";
  const u64 count = lf.count(c);
  if (count == 0 || count > L.cap)
    return "holds " + std::to_string(count) + " entries" + ver + " (1.." + std::to_string(L.cap) +
           ")";
  if (count != bits)
    return "holds " + std::to_string(count) + " entries" + ver + " but its bitmap " +
           std::to_string(bits) + " slots";
  std::vector<bool> seen(L.cap);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t s = lf.order(c)[i];
    const std::string at =
        "order entry " + std::to_string(i) + ver + " (slot " + std::to_string(s) + ")";
    if (s >= L.cap) return at + " is past the leaf's " + std::to_string(L.cap) + " slots";
    if (!lf.live(c, s)) return at + " names a slot its bitmap does not hold";
    if (seen[s]) return at + " repeats a slot";
    seen[s] = true;
    if (std::string p = slot_problem(pool, lf, c, s, page_bytes); !p.empty())
      return "slot " + std::to_string(s) + p;
    StringKeyBuf b0, b1;
    if (i > 0 && !(lf.key(c, i - 1, b0) < lf.key(c, i, b1)))
      return at + ": its key is not above the one before";
  }
  return {};
}

bool check_string_leaves(const TreeParts& t, const StringLeafLayout& L, LeafPtr head, int v,
                         u64 base_count, const StringBase& base,
                         const std::unordered_set<u64>& owned, std::set<u64>& reach,
                         CheckReport& r) {
  std::size_t total = 0;
  std::vector<u64> chain;
  std::string prev;
  for (u64 l = head.off; l; l = t.pool.at<StringLeafHeader>(l)->next[v].off) {
    const std::string at =
        "leaf " + std::to_string(chain.size()) + " (offset " + std::to_string(l) + ")";
    if (chain.size() > owned.size()) return r.fail("leaf list has a cycle"), false;
    chain.push_back(l);
    if (!owned.contains(l)) r.fail(at + " is not owned by the directory");
    if (!t.alloc.is_live(l)) return r.fail(at + " is not a live block"), false;
    if (!reach.insert(l).second) r.fail(at + " is reached twice");
    const StringLeaf lf{t.pool.at(l), t.pool.base(), &L};
    if (lf.h().type != kStringLeafType) r.fail(at + " has a wrong type word");
    if (!slot_owns(t.pool, lf.h().owner_slot, l))
      r.fail(at + ": its owner slot does not point to it");
    const std::string p = string_leaf_problem(t.pool, l, v, L, t.codec.G.page_span());
    if (!p.empty()) return r.fail(at + " " + p), false;
    const int c = static_cast<int>(lf.h().copy[v]);
    for (std::size_t i = 0; i < lf.count(c); ++i) {
      StringKeyBuf buf;
      const std::string_view k = lf.key(c, i, buf);
      if (!(chain.size() == 1 && i == 0) && !(std::string_view(prev) < k))
        r.fail(at + ": entry " + std::to_string(i) + "'s key is not above the one before");
      prev.assign(k);
    }
    total += lf.count(c);
  }
  if (total != base_count)
    r.fail("base_count " + std::to_string(base_count) + " != " + std::to_string(total) +
           " keys in the leaves");
  if (chain != base.leaves || base.ref.size() != chain.size())
    r.fail("inner index does not match the leaf list");
  if (base.count != base_count) r.fail("inner index counts a different number of keys");
  if (base.v != v) r.fail("inner index reads another version's metadata");
  for (std::size_t i = 0; i < chain.size() && i < base.last.size() && i < base.ref.size(); ++i) {
    const StringLeaf lf{t.pool.at(chain[i]), t.pool.base(), &L};
    const int c = static_cast<int>(lf.h().copy[v]);
    StringKeyBuf buf;
    if (base.copy(i) != c || base.last[i] != lf.key(c, lf.count(c) - 1, buf) ||
        base.last_prefix[i] != key_prefix(base.last[i]) ||
        base.hw(i) != string_leaf_high_water(lf, c) ||
        (base.ref[i] & StringBase::kRefOffset) != chain[i])
      r.fail("inner index metadata copy, last key, high-water slot or leaf offset differs");
  }
  r.facts.emplace_back("base_records", static_cast<double>(total));
  return true;
}

void check_key_pages(const TreeParts& t, const StringLeafLayout& L, LeafPtr head, int v,
                     const KeyPages& pages, const std::unordered_set<u64>& live_logs,
                     std::set<u64>& reach, CheckReport& r) {
  std::map<u64, std::size_t> uses;
  for (u64 l = head.off; l; l = t.pool.at<StringLeafHeader>(l)->next[v].off) {
    const StringLeaf lf{t.pool.at(l), t.pool.base(), &L};
    const int c = static_cast<int>(lf.h().copy[v] & 1);  // checked by check_string_leaves
    for (std::size_t i = 0; i < lf.count(c); ++i)
      if (const u64 rec = lf.entry_at(c, i).rec()) ++uses[pages.page_of(rec)];
  }
  for (const auto& [pg, n] : uses) {
    const std::string at = "key page at " + std::to_string(pg);
    const u64 flavor = t.pool.at<LogPageHeader>(pg)->flavor;
    if (!live_logs.contains(pg) && flavor != kKeyFlavor)
      r.fail(at + ", named by " + std::to_string(n) + " entries, is not flagged as a key page");
    if (pages.uses(pg) != n)
      r.fail(at + " is counted as named by " + std::to_string(pages.uses(pg)) + " entries, not " +
             std::to_string(n));
    reach.insert(pg);
  }
  if (pages.size() != uses.size()) r.fail("the key pages' count names pages no entry names");
  t.dir->for_each_owned([&](u64, u64 blk) {
    const auto* h = t.pool.at<LogPageHeader>(blk);
    if (h->type == kPageType && h->flavor == kKeyFlavor && !uses.contains(blk) &&
        !live_logs.contains(blk))
      r.fail("key page at " + std::to_string(blk) + " is named by no entry (leaked)");
  });
  r.facts.emplace_back("key_pages", static_cast<double>(uses.size()));
}

bool check_string_log_chain(const TreeParts& t, LogPagePtr head, int v,
                            const std::unordered_set<u64>& owned, std::set<u64>& reach,
                            StringSlotMap& replay, std::size_t& pages, std::size_t& records,
                            CheckReport& r, bool inherits) {
  const u64 vb = log_valid_bit(v);
  const std::size_t per = t.codec.G.per_page;
  bool ended = false;
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
    const u64* w = t.pool.at<u64>(pg + t.codec.G.offset(0));
    // An inherited page: this log's records begin after its mark.
    std::size_t pos = inherits ? inherited_start(t.pool, pg, w, per) : 0;
    if (h->flavor != (pos ? kKeyFlavor : static_cast<u64>(v)))
      r.fail(at + " of the wrong flavor in the log");
    // After the end, a later page must not start with a whole record: appends stop at the end.
    if (ended) {
      const std::size_t n = replayed_record_words(t.pool, pg, w + pos, per - pos, v);
      if (n != 0 && n != PLog::kLogEnd)
        return r.fail(at + " holds a whole record after the end of the log"), false;
      continue;
    }
    while (pos < per) {
      const std::size_t n = replayed_record_words(t.pool, pg, w + pos, per - pos, v);
      if (n == PLog::kLogEnd) {
        ended = true;
        break;
      }
      if (n == 0) {  // a pad: the rest of the page is pads, else the log ends here (replay's
                     // rule: a torn pad, or older bytes after the end that look like one)
        for (std::size_t j = pos; j < per && !ended; ++j) ended = w[j] != vb;
        break;
      }
      replay.insert_or_assign(std::string(string_record_key(w + pos)),
                              StringSlot{string_record_value(w + pos), t.pool.offset_of(w + pos)});
      ++records;
      pos += n;
    }
  }
  return true;
}

}  // namespace dptree::detail
