// Persistent layout of DPTree's string form (string_index.h): its root magic, its leaves, and
// its log records. Everything else (root words, owner directory, pendingLeaves, log pages) is
// the integer form's (layout.h, log_page.h).
//
// A key's bytes are written to PM once, in its log record, and never again: a leaf slot holds
// the key's first 8 bytes, its length, the record's offset and the value, and a merge that only
// moves a key moves its slot, never its bytes. A string leaf (§2.2, Figure 3) holds `cap` slots
// (the root's leaf_capacity), merged into in place (§2.3):
//   header line: owner slot, type, next[2], copy[2], 2 zero words
//   two line-aligned metadata copies, each: a bitmap of the live slots (one bit a slot), their
//     count, a 2-byte fingerprint per slot (string_fingerprint of its key's hash; a slot not
//     live may hold any)
//   cap slots of 24 bytes (StringEntry), line-aligned: the key's first 8 bytes big-endian (zero
//     padded), a word of its length (low 16 bits) and its log record's pool offset (the bits
//     above; 0 for a key of up to 8 bytes, which its prefix holds whole), and the value
//   the two copies' order arrays, line-aligned: the live slots in key order (2 bytes each)
// Version v reads metadata copy copy[v] (0 or 1). A merge that changes the leaf writes the copy
// version cv does not read and points copy[nv] at it; one that does not change it points
// copy[nv] at copy[cv]'s (one header word, not a copy of the metadata). A slot is written only
// while the version being read does not hold it, so the slots are shared by the versions; the
// version flip publishes a merge's slots and copy (§2.2, Algorithm 2: the metadata of the next
// version in place, selected here through copy[] rather than by the version bit itself). A log
// page holding a record that a slot names (a key of more than 8 bytes) is a key page: kept, owned
// by its directory slot, until no slot of a live version names it (engine/key_pages.h,
// docs/dptree.md "String keys"); a short key's record goes with its log.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "format/layout.h"

namespace dptree::detail {

inline constexpr u64 kStringRootMagic = 0x4450545374725236ull;  // "DPTStrR6"
inline constexpr u64 kStringLeafType = 0x445054534c656636ull;   // "DPTSLef6"
// The magics of format 3 (leaves rewritten by each merge), 4 (slots of one word naming
// records of key and value) and 5 (fingerprints of a byte-at-a-time hash), refused on open.
inline constexpr u64 kStringRootMagicR3 = 0x4450545374725233ull;  // "DPTStrR3"
inline constexpr u64 kStringRootMagicR4 = 0x4450545374725234ull;  // "DPTStrR4"
inline constexpr u64 kStringRootMagicR5 = 0x4450545374725235ull;  // "DPTStrR5"
// The string forms' format: 1 (leaves without fingerprints), 2 (key bytes in the leaves, log
// records of 63-bit payloads), 3 (sorted leaves rewritten by each merge), 4 (slots of one
// word, every key's value in its record) and 5 (fingerprints and bloom hashes of FNV-1a) are
// refused on open.
inline constexpr std::size_t kStringFormat = 6;
// The root magic of an earlier format f < 3 from format 3's magic of that tree.
inline constexpr u64 string_magic_version(u64 magic, std::size_t version) {
  return (magic & 0x00ffffffffffffffull) | u64{'0' + version} << 56;
}
// The longest key the string form takes (the record's length field holds up to 2^16 - 1).
inline constexpr std::size_t kStringTreeMaxKey = 1024;

struct StringLeafHeader {
  OwnerSlotPtr owner_slot;
  u64 type;
  LeafPtr next[2];  // the next leaf of each version
  u64 copy[2];      // the metadata copy each version reads
  u64 unused[2];
};
// The persistent layout: a change here changes the pool format.
static_assert(sizeof(StringLeafHeader) == 64 && offsetof(StringLeafHeader, next) == 16 &&
              offsetof(StringLeafHeader, copy) == 32);
// A slot: what a lookup and a merge compare first (the prefix), and the value, in the leaf.
struct StringEntry {
  u64 prefix;  // the first 8 key bytes, big-endian: integer order is the keys' memcmp order
  u64 meta;    // the key's length (low 16 bits) and its record's pool offset (above; 0: none)
  u64 value;
  std::size_t len() const { return static_cast<std::size_t>(meta & 0xffff); }
  u64 rec() const { return meta >> 16; }
  static u64 make_meta(std::size_t len, u64 rec) { return rec << 16 | len; }
};
static_assert(sizeof(StringEntry) == 24 && offsetof(StringEntry, value) == 16);
// A record offset must fit the 48 bits above the length.
inline constexpr u64 kStringRecLimit = u64{1} << 48;
// A key of up to this many bytes is its prefix and length alone: its slot names no record.
inline constexpr std::size_t kStringInlineKey = 8;

// Where the parts of a leaf of `cap` slots lie (offsets in the leaf), from the capacity alone.
// What a lookup reads (bitmap, fingerprints, a slot) comes first and the order arrays (read by
// scans and merges) last, so that a lookup's slot lies in the 4 KiB page of the fingerprints
// more often (fewer TLB misses).
struct StringLeafLayout {
  std::size_t cap = 0, bm_words = 0, meta[2]{}, meta_bytes = 0, slots = 0, order[2]{}, bytes = 0;
  void init(std::size_t capacity) {
    auto line = [](std::size_t x) { return (x + 63) / 64 * 64; };
    cap = capacity;
    bm_words = (cap + 63) / 64;
    // A lookup's last compare of eight fingerprints may read up to 14 bytes past them (masked
    // off): the fingerprints are padded to 8 entries.
    meta_bytes = 8 * bm_words + 8 + 2 * ((cap + 7) / 8 * 8);
    meta[0] = 64;
    meta[1] = meta[0] + line(meta_bytes);
    slots = meta[1] + line(meta_bytes);
    order[0] = line(slots + sizeof(StringEntry) * cap);
    order[1] = order[0] + line(2 * cap);
    bytes = order[1] + 2 * cap;
  }
};

static_assert(std::endian::native == std::endian::little, "key_prefix byte-swaps a load");

inline u64 key_prefix(std::string_view k) {
  u64 x = 0;
  if (k.size() >= 8) [[likely]] {
    std::memcpy(&x, k.data(), 8);
    return __builtin_bswap64(x);
  }
  for (std::size_t i = 0; i < 8; ++i)
    x = x << 8 | (i < k.size() ? static_cast<unsigned char>(k[i]) : 0u);
  return x;
}

// The keys' order (memcmp, the shorter first on a tie), deciding most pairs on their prefixes
// (one integer compare) before it compares bytes.
struct StringKeyLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const {
    const u64 pa = key_prefix(a), pb = key_prefix(b);
    if (pa != pb) return pa < pb;
    return a < b;
  }
};

// The largest string leaf the single-threaded form makes (its capacity is cut to fit it), and
// the concurrent form's default leaf_bytes.
inline constexpr std::size_t kStringLeafBlock = 8192;
// The most slots whose leaf fits `bytes` (at least 4, at most 4096).
inline std::size_t string_leaf_capacity(std::size_t bytes) {
  std::size_t cap = 4096;
  StringLeafLayout L;
  for (L.init(cap); cap > 4 && L.bytes > bytes; L.init(--cap)) {
  }
  return cap;
}

// A view of one string leaf; `base` is the pool's base address (the bytes of a key longer than 8
// are in its log record elsewhere in the pool). Metadata accessors take a copy's index, 0 or 1:
// the one a version reads is h().copy[v], which readers take from the inner index.
struct StringLeaf {
  std::byte* p;
  const std::byte* base;
  const StringLeafLayout* L;
  StringLeafHeader& h() const { return *reinterpret_cast<StringLeafHeader*>(p); }
  u64* bitmap(int c) const { return reinterpret_cast<u64*>(p + L->meta[c & 1]); }
  u64& count(int c) const { return bitmap(c)[L->bm_words]; }
  std::uint16_t* fps(int c) const {
    return reinterpret_cast<std::uint16_t*>(p + L->meta[c & 1] + 8 * L->bm_words + 8);
  }
  std::uint16_t* order(int c) const {
    return reinterpret_cast<std::uint16_t*>(p + L->order[c & 1]);
  }
  StringEntry* slots() const { return reinterpret_cast<StringEntry*>(p + L->slots); }
  bool live(int c, std::size_t s) const { return (bitmap(c)[s / 64] >> (s % 64) & 1) != 0; }
  // The bytes of a key longer than 8 whose record is at pool offset `rec`.
  const char* long_key(u64 rec) const { return reinterpret_cast<const char*>(base + rec + 16); }
  // A slot's key; its bytes live in its log record or, up to 8, in a scratch `buf`.
  std::string_view key_of(const StringEntry& e, char (&buf)[8]) const {
    const std::size_t len = e.len();
    if (len > kStringInlineKey) return {long_key(e.rec()), len};
    for (std::size_t j = 0; j < 8; ++j) buf[j] = static_cast<char>(e.prefix >> (56 - 8 * j));
    return {buf, len};
  }
  // The slot at position i of copy c's order, and its key.
  const StringEntry& entry_at(int c, std::size_t i) const { return slots()[order(c)[i]]; }
  std::string_view key(int c, std::size_t i, char (&buf)[8]) const {
    return key_of(entry_at(c, i), buf);
  }
  // The sign of slot e's key against k (kp: key_prefix(k)): the prefixes decide, then, when
  // they tie, the lengths if either key is its prefix alone, else the bytes after the prefix
  // (the record's: the only read outside the leaf).
  int compare(const StringEntry& e, std::string_view k, u64 kp) const {
    if (e.prefix != kp) return e.prefix < kp ? -1 : 1;
    const std::size_t len = e.len();
    if (len > kStringInlineKey && k.size() > kStringInlineKey) {
      const int c = std::memcmp(long_key(e.rec()) + 8, k.data() + 8,
                                std::min(len, k.size()) - kStringInlineKey);
      if (c != 0) return c;
    }
    return len < k.size() ? -1 : len > k.size() ? 1 : 0;
  }
};

// The hash of a key longer than 8 bytes: xxHash's XXH3 (string_record.cc).
u64 hash_long_string(std::string_view k);
// The bloom filter's hash and the fingerprints' source (persistent: a leaf's fingerprints are
// 16 bits of it). A key of up to 8 bytes is its prefix and length, mixed as an integer key is;
// a longer one goes through XXH3, which reads 8 bytes and more a step where a byte-at-a-time
// hash (format 5's FNV-1a) took 260 ns of a 256-byte key's 1.2 us lookup.
inline u64 hash_string(std::string_view k) {
  if (k.size() <= kStringInlineKey)
    return hash_key(key_prefix(k) ^ u64{k.size()} * 0x9E3779B97F4A7C15ull);
  return hash_long_string(k);
}
// A leaf entry's fingerprint: 16 bits of its key's hash_string.
inline std::uint16_t string_fingerprint(u64 hash) {
  return static_cast<std::uint16_t>(hash);
}

// Log records of the string form, in a log page of one-word slots (format/log_page.h):
//   word 0: the validity bit (bit 0), the key's length (bits 1-16), a 47-bit checksum
//   word 1: the value
//   the key's raw bytes, zero padded to a multiple of 8
// so a leaf entry can name the key's bytes where they are and a lookup can memcmp them. Raw
// bytes carry no validity bits: the checksum (xxHash over the value, the key, the record's pool
// offset, the page's epoch and the validity bit) tells a whole record from a torn one or from a
// stale one left on a reused page (whose epoch is older, log_page.h). A word whose payload is 0
// (no key is empty) pads the rest of a page a record did not fit.
inline std::size_t string_record_words(std::size_t key_len) {
  return 2 + (key_len + 7) / 8;
}
// The key length a record's first word announces (0: a pad word).
inline std::size_t string_record_length(u64 first_word) {
  return static_cast<std::size_t>(first_word >> 1 & 0xffff);
}
// Encodes k's record for pool offset `off` in a page of epoch `epoch` into
// out[0 .. string_record_words(k.size())).
void encode_string_record(std::string_view k, u64 v, u64 vbit, u64 off, u64 epoch, u64* out);
// Whether the record at `in` (pool offset `off`, page epoch `epoch`), whose first word carries
// validity bit `vbit` and announces a length that fits its page, is whole: its checksum holds.
bool string_record_whole(const u64* in, u64 vbit, u64 off, u64 epoch);
// A whole record's key and value.
inline std::string_view string_record_key(const u64* in) {
  return {reinterpret_cast<const char*>(in + 2), string_record_length(in[0])};
}
inline u64 string_record_value(const u64* in) {
  return in[1];
}

}  // namespace dptree::detail
