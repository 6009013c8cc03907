// The base tree's inner index and searches of the string forms (string_base.h).
#include "st/string_base.h"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "format/verify.h"
#include "st/validate.h"

namespace dptree::detail {

LeafNext string_next(const pm::Pool& pool) {
  return [&pool](u64 l, int v) { return pool.at<StringLeafHeader>(l)->next[v].off; };
}

namespace {
// The first of the n entries whose prefix is not below p: a branch-free binary search that
// prefetches both entries the next step may read, so that two steps' cache misses overlap.
std::size_t prefix_lower_bound(const StringEntry* e, std::size_t n, u64 p) {
  if (n == 0) return 0;
  const StringEntry* b = e;
  std::size_t len = n;
  while (len > 1) {
    const std::size_t half = len / 2, next = (len - half) / 2;
    __builtin_prefetch(b + next);
    __builtin_prefetch(b + half + next);
    b = b[half].prefix < p ? b + half : b;
    len -= half;
  }
  return static_cast<std::size_t>(b - e) + (b->prefix < p);
}
}  // namespace

std::size_t string_lower_bound(StringLeaf lf, std::string_view k, bool& equal) {
  const u64 p = key_prefix(k);
  const StringEntry* e = lf.entries();
  const std::size_t n = lf.count();
  std::size_t lo = prefix_lower_bound(e, n, p), hi = n;
  equal = false;
  char buf[8];
  // Keys sharing k's prefix start at lo (most often one, or none): the first one decides
  // unless k is above it; then the bytes of the others are binary-searched.
  bool first = true;
  while (lo < hi && e[lo].prefix == p) {
    const std::size_t mid = first ? lo : lo + (hi - lo) / 2;
    first = false;
    if (e[mid].prefix != p) {  // above p, so above k
      hi = mid;
      continue;
    }
    const std::string_view mk = lf.key(mid, buf);
    if (mk == k) {
      equal = true;
      return mid;
    }
    if (mk < k)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

long string_leaf_find(StringLeaf lf, std::size_t n, std::string_view k, std::uint16_t fp) {
  const auto* fps = reinterpret_cast<const std::byte*>(lf.fps());
  for (std::size_t b = 0; b < 2 * n; b += 64) __builtin_prefetch(fps + b);
  const StringEntry* e = lf.entries(n);
  const u64 p = key_prefix(k);
  auto is_k = [&](std::size_t j) {
    return e[j].prefix == p && e[j].len() == k.size() &&
           (k.size() <= 8 || std::memcmp(lf.long_key(e[j].rec()), k.data(), k.size()) == 0);
  };
#if defined(__SSE2__)
  // Eight fingerprints a compare; the last load may read the padding and the entries after
  // the fingerprints (inside the leaf), masked off.
  const __m128i want = _mm_set1_epi16(static_cast<short>(fp));
  for (std::size_t i = 0; i < n; i += 8) {
    const auto* at = reinterpret_cast<const __m128i*>(fps + 2 * i);
    auto m = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_loadu_si128(at), want)));
    m &= 0x5555u;  // one bit per matching fingerprint
    if (n - i < 8) m &= (1u << (2 * (n - i))) - 1;
    for (; m; m &= m - 1) {
      const std::size_t j = i + static_cast<std::size_t>(std::countr_zero(m)) / 2;
      if (is_k(j)) return static_cast<long>(j);
    }
  }
#else
  const std::uint16_t* f = lf.fps();
  for (std::size_t j = 0; j < n; ++j)
    if (f[j] == fp && is_k(j)) return static_cast<long>(j);
#endif
  return -1;
}

void StringBase::build(const pm::Pool& pool, LeafPtr head, int v, u64 keys) {
  leaves.clear();
  last.clear();
  last_prefix.clear();
  counts.clear();
  count = keys;
  char buf[8];
  for (u64 l = head.off; l; l = pool.at<StringLeafHeader>(l)->next[v].off) {
    leaves.push_back(l);
    StringLeaf lf{pool.at(l), pool.base()};
    last.emplace_back(lf.key(lf.count() - 1, buf));
    last_prefix.push_back(lf.entries()[lf.count() - 1].prefix);
    counts.push_back(static_cast<std::uint32_t>(lf.count()));
  }
  search.build(last_prefix);
}

std::size_t StringBase::index_of(std::string_view k) const {
  if (leaves.empty()) return 0;
  // The leaves whose last key shares k's prefix lie together: compare bytes only among them.
  const u64 p = key_prefix(k);
  auto i = search.find(p, leaves.data());
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
  if (!leaves.empty()) {  // the fingerprints' lines (their header line is not needed)
    const std::byte* p = pool.at(leaves[i]) + 64;
    const std::size_t bytes = std::min<std::size_t>(2 * counts[i], 1024);
    for (std::size_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
  }
  return i;
}

std::optional<u64> StringBase::lookup_in(const pm::Pool& pool, std::size_t leaf, std::string_view k,
                                         u64 hash) const {
  const StringLeaf lf{pool.at(leaves[leaf]), pool.base()};
  const long i = string_leaf_find(lf, counts[leaf], k, string_fingerprint(hash));
  if (i < 0) return std::nullopt;
  return lf.entries(counts[leaf])[i].value;
}

bool StringBase::collect(const pm::Pool& pool, std::string_view start, std::size_t n,
                         StringEntries& out) const {
  if (leaves.empty()) return true;
  std::size_t li = index_of(start), got = 0;
  bool equal;
  auto leaf = [&](std::size_t i) { return StringLeaf{pool.at(leaves[i]), pool.base()}; };
  std::size_t pos = string_lower_bound(leaf(li), start, equal);
  char buf[8];
  for (; li < leaves.size(); ++li, pos = 0) {
    StringLeaf lf = leaf(li);
    for (; pos < lf.count(); ++pos) {
      if (got == n) return false;
      out.emplace_back(std::string(lf.key(pos, buf)), lf.entries()[pos].value);
      ++got;
    }
  }
  return true;
}

std::size_t StringBase::dram_bytes() const {
  std::size_t b = 16 * leaves.capacity() + 4 * counts.capacity() + search.dram_bytes();
  for (const auto& k : last) b += sizeof(std::string) + k.capacity();
  return b;
}

void* open_string_root(const TreeParts& t, u64 magic, std::size_t bytes, u64 integer_magic,
                       u64 gv_bits, const char* tree) {
  void* found = nullptr;
  try {
    found = t.existing_root(magic, bytes, std::string(tree) + " (string keys)");
  } catch (const Error& e) {
    if (e.code() != Errc::wrong_index) throw;
    static const char* const kOlder[] = {"", "leaves without fingerprints",
                                         "key bytes in the leaves, records of 63-bit payloads"};
    for (std::size_t f = 1; f < kStringFormat; ++f)
      if (root_if_ours(t.pool, string_magic_version(magic, f), sizeof(Root)))
        throw Error(Errc::version_mismatch,
                    "pool '" + t.pool.name() + "' holds a " + tree + " of string keys in format " +
                        std::to_string(f) + " (" + kOlder[f] + "); this build reads format " +
                        std::to_string(kStringFormat) +
                        " (key bytes in checksummed log records, named by the leaves): reload " +
                        "the keys into a new pool (scan it with the build that wrote it)");
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
  return TreeShape{
      tree,
      gv_bits,
      0,
      std::move(logs),
      kStringLeafType,
      [&pool](u64 l, int v) { return pool.offset_of(&pool.at<StringLeafHeader>(l)->next[v]); },
      [&pool, capacity, tree, page_bytes](u64 l) {
        std::string p = string_leaf_problem(pool, l, capacity, page_bytes);
        if (!p.empty()) throw_corrupt(pool, tree, "leaf", l, p);
      }};
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
