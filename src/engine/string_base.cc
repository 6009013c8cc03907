// The base tree's inner index and searches of the string forms (string_base.h).
#include "engine/string_base.h"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "engine/validate.h"
#include "format/verify.h"

namespace dptree::detail {

LeafNext string_next(const pm::Pool& pool) {
  return [&pool](u64 l, int v) { return pool.at<StringLeafHeader>(l)->next[v].off; };
}

// Binary search through the order array comparing the slots' prefixes (a key's record is read
// only on a prefix tie): the order array's lines are requested at once, and each step requests
// the slots of the step after it, so that their misses overlap.
std::size_t string_lower_bound(StringLeaf lf, int c, std::string_view k, bool& equal) {
  const std::uint16_t* o = lf.order(c);
  const std::size_t n = lf.count(c);
  const auto* ob = reinterpret_cast<const char*>(o);
  for (std::size_t b = 0; b < 2 * n; b += 64) __builtin_prefetch(ob + b);
  const StringEntry* slots = lf.slots();
  const std::uint16_t* fps = lf.fps(c);
  const u64 kp = key_prefix(k);
  std::size_t lo = 0, hi = n;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    __builtin_prefetch(slots + o[lo + (mid - lo) / 2]);  // the next step's, either way
    if (mid + 1 < hi) __builtin_prefetch(slots + o[mid + 1 + (hi - mid - 1) / 2]);
    if (lf.compare(slots[o[mid]], fps[o[mid]], k, kp) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  equal = lo < n && lf.compare(slots[o[lo]], fps[o[lo]], k, kp) == 0;
  return lo;
}

std::size_t string_leaf_high_water(StringLeaf lf, int c) {
  const u64* bm = lf.bitmap(c);
  for (std::size_t w = lf.L->bm_words; w-- > 0;)
    if (bm[w]) return 64 * w + 64 - static_cast<std::size_t>(std::countl_zero(bm[w]));
  return 0;
}

void request_leaf_lines(StringLeaf lf, int c, std::size_t hw) {
  // Every line of the fingerprints, the last one too: they start inside a line, after the
  // bitmap and count (a prefetch every 64 bytes from their start can miss the last line).
  const auto* bm = reinterpret_cast<const std::byte*>(lf.bitmap(c));
  const std::byte* end = reinterpret_cast<const std::byte*>(lf.fps(c) + hw);
  for (const std::byte* l = bm; l < end; l += 64) __builtin_prefetch(l);
}

long string_leaf_find(StringLeaf lf, int c, std::size_t hw, std::string_view k, std::uint16_t fp) {
  const auto* fps = reinterpret_cast<const std::byte*>(lf.fps(c));
  const StringEntry* slots = lf.slots();
  const u64 kp = key_prefix(k);
  const bool in_slot = string_key_in_slot(k.size());
  const u64 km = in_slot ? key_prefix_at(k, kStringInlineKey) : 0;
  // A slot whose fingerprint matches: live (a slot that is not keeps an old fingerprint), of
  // k's prefix and length, and of its bytes after the prefix (a key of up to 16 bytes is in
  // its slot: only a longer one's record is read). A key of 9..16 bytes is in a tagged slot,
  // whose length is in the fingerprint that matched.
  auto is_k = [&](std::size_t j) {
    const StringEntry& e = slots[j];
    if (!lf.live(c, j) || e.prefix != kp || e.in_slot() != in_slot) return false;
    if (in_slot) return e.meta == km;
    if (e.meta_len() != k.size()) return false;
    if (k.size() <= kStringInlineKey) return true;
    // Every line of the record's key bytes requested before the compare reads the first, so
    // that a long key costs one miss, not one per line in turn.
    const char* rk = lf.long_key(e.rec()) + 8;
    for (std::size_t b = 0; b < k.size() - 8; b += 64) __builtin_prefetch(rk + b);
    __builtin_prefetch(rk + k.size() - 9);
    return std::memcmp(rk, k.data() + 8, k.size() - 8) == 0;
  };
#if defined(__SSE2__)
  // Eight fingerprints a compare; the last load may read up to 14 bytes past hw (inside the
  // fingerprints and the padded order array, StringLeafLayout), masked off.
  const __m128i want = _mm_set1_epi16(static_cast<short>(fp));
  for (std::size_t i = 0; i < hw; i += 8) {
    const auto* at = reinterpret_cast<const __m128i*>(fps + 2 * i);
    auto m = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_loadu_si128(at), want)));
    m &= 0x5555u;  // one bit per matching fingerprint
    if (hw - i < 8) m &= (1u << (2 * (hw - i))) - 1;
    for (; m; m &= m - 1) {
      const std::size_t j = i + static_cast<std::size_t>(std::countr_zero(m)) / 2;
      if (is_k(j)) return static_cast<long>(j);
    }
  }
#else
  const std::uint16_t* f = lf.fps(c);
  for (std::size_t j = 0; j < hw; ++j)
    if (f[j] == fp && is_k(j)) return static_cast<long>(j);
#endif
  return -1;
}

void StringBase::build(const pm::Pool& pool, const StringLeafLayout& layout, LeafPtr head,
                       int version, u64 keys) {
  L = layout;
  v = version;
  // A leaf offset fits the low 48 bits and a high-water slot (at most 4096) bits 48-60.
  static_assert(pm::kMaxPoolSize <= kRefOffset + 1);
  leaves.clear();
  ref.clear();
  last.clear();
  last_prefix.clear();
  count = keys;
  for (u64 l = head.off; l; l = pool.at<StringLeafHeader>(l)->next[v].off) {
    leaves.push_back(l);
    const StringLeaf lf{pool.at(l), pool.base(), &L};
    const int c = static_cast<int>(lf.h().copy[v]);
    ref.push_back(u64(c != 0) << 63 | u64{string_leaf_high_water(lf, c)} << 48 | l);
    StringKeyBuf buf;
    last.emplace_back(lf.key(c, lf.count(c) - 1, buf));
    last_prefix.push_back(key_prefix(last.back()));
  }
  search.build(last_prefix);
}

std::size_t StringBase::index_of(std::string_view k) const {
  if (leaves.empty()) return 0;
  // The leaves whose last key shares k's prefix lie together: compare bytes only among them.
  const u64 p = key_prefix(k);
  auto i = search.find(p, ref.data());
  const auto lo = last_prefix.begin() + static_cast<std::ptrdiff_t>(i);
  if (i < last_prefix.size() && last_prefix[i] == p) {
    const auto hi = std::upper_bound(lo, last_prefix.end(), p);
    const auto end = last.begin() + (hi - last_prefix.begin());
    i = static_cast<std::size_t>(
        std::lower_bound(last.begin() + static_cast<std::ptrdiff_t>(i), end, k,
                         [](const std::string& a, std::string_view b) { return a < b; }) -
        last.begin());
  }
  return std::min(i, leaves.size() - 1);
}

std::size_t StringBase::prefetch_leaf(const pm::Pool& pool, std::string_view k) const {
  const std::size_t i = index_of(k);
  if (!leaves.empty()) request_leaf_lines(leaf(pool, i), copy(i), hw(i));
  return i;
}

std::optional<u64> StringBase::lookup_in(const pm::Pool& pool, std::size_t i, std::string_view k,
                                         u64 hash) const {
  const StringLeaf lf = leaf(pool, i);
  const long s = string_leaf_find(lf, copy(i), hw(i), k, string_fingerprint(hash, k.size()));
  if (s < 0) return std::nullopt;
  return lf.slots()[s].value();
}

// A scan reads slots in key order and the records of keys longer than 16, a miss each: both are
// requested ahead of their reads, so that the misses overlap.
bool StringBase::collect(const pm::Pool& pool, std::string_view start, std::size_t n,
                         StringEntries& out) const {
  constexpr std::size_t kAhead = 8;
  if (leaves.empty()) return true;
  std::size_t li = index_of(start), got = 0;
  bool equal;
  std::size_t pos = string_lower_bound(leaf(pool, li), copy(li), start, equal);
  for (; li < leaves.size(); ++li, pos = 0) {
    const StringLeaf lf = leaf(pool, li);
    const int c = copy(li);
    const std::size_t cnt = lf.count(c);
    const std::uint16_t* o = lf.order(c);
    const std::uint16_t* fps = lf.fps(c);
    const StringEntry* slots = lf.slots();
    for (std::size_t i = pos; i < cnt && i < pos + kAhead; ++i) __builtin_prefetch(slots + o[i]);
    for (; pos < cnt; ++pos) {
      if (got == n) return false;
      if (pos + kAhead < cnt) __builtin_prefetch(slots + o[pos + kAhead]);
      if (pos + kAhead / 2 < cnt) {
        const StringEntry& a = slots[o[pos + kAhead / 2]];
        if (const u64 rec = a.rec()) __builtin_prefetch(lf.long_key(rec));
      }
      const StringEntry& e = slots[o[pos]];
      StringKeyBuf buf;
      out.emplace_back(std::string(lf.key_of(e, fps[o[pos]], buf)), e.value());
      ++got;
    }
  }
  return true;
}

std::size_t StringBase::dram_bytes() const {
  std::size_t b = 16 * leaves.capacity() + 8 * ref.capacity() + search.dram_bytes();
  for (const auto& k : last) b += sizeof(std::string) + k.capacity();
  return b;
}

std::size_t older_string_format(const pm::Pool& pool,
                                const std::array<u64, kStringFormat - 3>& older) {
  for (std::size_t f = 1; f < kStringFormat; ++f)
    if (root_if_ours(pool, f < 3 ? string_magic_version(older[0], f) : older[f - 3], sizeof(Root)))
      return f;
  return 0;
}

void* open_string_root(const TreeParts& t, u64 magic,
                       const std::array<u64, kStringFormat - 3>& older, std::size_t bytes,
                       u64 integer_magic, u64 gv_bits, const char* tree) {
  void* found = nullptr;
  try {
    found = t.existing_root(magic, bytes, std::string(tree) + " (string keys)");
  } catch (const Error& e) {
    if (e.code() != Errc::wrong_index) throw;
    static const char* const kOlder[] = {
        "",
        "leaves without fingerprints",
        "key bytes in the leaves, records of 63-bit payloads",
        "sorted leaves rewritten by each merge",
        "leaves merged in place, slots of one word naming records of key and value",
        "fingerprints and bloom hashes of a byte-at-a-time FNV-1a hash",
        "slots of keys of 9 to 16 bytes naming their log records, kept in key pages"};
    static_assert(std::size(kOlder) == kStringFormat);
    if (const std::size_t f = older_string_format(t.pool, older))
      throw Error(Errc::version_mismatch,
                  "pool '" + t.pool.name() + "' holds a " + tree + " of string keys in format " +
                      std::to_string(f) + " (" + kOlder[f] + "); this build reads format " +
                      std::to_string(kStringFormat) +
                      " (leaves merged in place, each slot holding its key's prefix, or its "
                      "whole key up to 16 bytes, and value; fingerprints of XXH3): " +
                      "reload the keys into a new pool (scan it with the build that wrote it)");
    if (root_if_ours(t.pool, integer_magic, sizeof(Root)))
      throw Error(Errc::wrong_index, "pool '" + t.pool.name() + "' holds a " + tree +
                                         " of integer keys, not of string keys: open it with "
                                         "--key-type u64 (IndexInfo::create), or use a new pool");
    throw;
  }
  for (const auto& p : verify_format(*static_cast<const Root*>(found), magic, gv_bits))
    throw Error(Errc::corrupt, "pool '" + t.pool.name() + "': " + tree + " (string keys) root: " +
                                   p + ": the pool is damaged; restore it from a copy");
  return found;
}

TreeShape string_tree_shape(const pm::Pool& pool, const char* tree, u64 gv_bits,
                            std::vector<u64> logs, std::size_t capacity, std::size_t page_bytes) {
  StringLeafLayout L;
  L.init(capacity);
  return TreeShape{
      tree,
      gv_bits,
      0,
      std::move(logs),
      kStringLeafType,
      [&pool](u64 l, int v) { return pool.offset_of(&pool.at<StringLeafHeader>(l)->next[v]); },
      [&pool, L, tree, page_bytes](u64 l, int v) {
        std::string p = string_leaf_problem(pool, l, v, L, page_bytes);
        if (!p.empty()) throw_corrupt(pool, tree, "leaf", l, p);
      },
      L.bytes};
}

void require_page_for_longest_key(std::size_t page_bytes, const char* tree) {
  LogGeometry g;
  g.init(1, page_bytes);
  if (g.per_page < string_record_words(kStringTreeMaxKey))
    throw Error(Errc::invalid_argument,
                std::string(tree) + ": log_page_size " + std::to_string(page_bytes) +
                    " cannot hold the log record of a " + std::to_string(kStringTreeMaxKey) +
                    "-byte key: use 2048 or more");
}

u64 append_string_record(PLog& log, LogPagePtr* head, int ver, std::string_view k, u64 v) {
  const u64 rec = append_string_record_unfenced(log, head, ver, k, v);
  PLog::fence_append();
  return rec;
}

u64 append_string_record_unfenced(PLog& log, LogPagePtr* head, int ver, std::string_view k, u64 v) {
  u64 rec[2 + kStringTreeMaxKey / 8];  // a record of the longest key
  const std::size_t n = string_record_words(k.size());
  u64 epoch = 0;
  // A value leaves a log page for removes: they make room in a pool full of key pages.
  u64* dst = log.place_words(head, ver, n, epoch, (v & kTombstone) == 0);
  const pm::Pool& pool = log.pool();
  const u64 off = pool.offset_of(dst);
  encode_string_record(k, v, log_valid_bit(ver), off, epoch, rec);
  log.write_words(dst, rec, n);
  return off;
}

void throw_record_after_end(const pm::Pool& pool, const char* tree, const u64* w) {
  throw_corrupt(pool, tree, "log record", pool.offset_of(w),
                "is whole but lies after the end of its log (a record before it is damaged)");
}

std::size_t inherited_start(const pm::Pool& pool, u64 page, const u64* w0, std::size_t per) {
  if (pool.at<LogPageHeader>(page)->flavor != kKeyFlavor) return 0;
  const u64 epoch = *pool.at<u64>(page + kPageEpochOffset);
  std::size_t pos = 0, start = 0;
  while (pos < per) {
    const u64* w = w0 + pos;
    if (pos + PLog::kInheritMarkWords <= per && inherit_mark_whole(*w, pool.offset_of(w), epoch)) {
      start = pos += PLog::kInheritMarkWords;
      continue;
    }
    // A record of either log version: the version whose validity bit it carries.
    const int ver = 1 - static_cast<int>(*w & 1);
    const std::size_t n = replayed_record_words(pool, page, w, per - pos, ver);
    if (n == 0 || n == PLog::kLogEnd) break;
    pos += n;
  }
  return start;
}

std::size_t replayed_record_words(const pm::Pool& pool, u64 page, const u64* w, std::size_t room,
                                  int ver) {
  const u64 vb = log_valid_bit(ver);
  if ((*w & 1) != vb) return PLog::kLogEnd;
  const std::size_t len = string_record_length(*w);
  if (len == 0) return 0;
  const std::size_t n = string_record_words(len);
  if (len > kStringTreeMaxKey || n > room) return PLog::kLogEnd;
  const u64 epoch = *pool.at<u64>(page + kPageEpochOffset);
  return string_record_whole(w, vb, pool.offset_of(w), epoch) ? n : PLog::kLogEnd;
}

}  // namespace dptree::detail
