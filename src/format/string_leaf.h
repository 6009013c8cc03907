// Persistent layout of DPTree's string form (string_index.h): its root magic, its leaves, and
// its log records. Everything else (root words, owner directory, pendingLeaves, log pages) is
// the integer form's (layout.h, log_page.h).
//
// A key's bytes are written to PM once, in its log record, and never again: a leaf slot holds
// the key's first 16 bytes or, for a longer key, its first 8, its length and its record's
// offset, and the value; a merge that only moves a key moves its slot, never its bytes. A
// string leaf (§2.2, Figure 3) holds `cap` slots (the root's leaf_capacity), merged into in
// place (§2.3):
//   header line: owner slot, type, next[2], copy[2], 2 zero words
//   two line-aligned metadata copies, each: a bitmap of the live slots (one bit a slot), their
//     count, a 2-byte fingerprint per slot (string_fingerprint of its key's hash and length; a
//     slot not live may hold any)
//   cap slots of 24 bytes (StringEntry), line-aligned: the key's first 8 bytes big-endian (zero
//     padded); a meta word; the value. A key of 9 to 16 bytes is held whole: the meta word is
//     its bytes 8..15 (big-endian, zero padded), the value word's top bit (kSlotKeyTag) says so
//     and the low 3 bits of its fingerprint are its length - 9. Any other key's meta word is its
//     length (low 16 bits) and its log record's pool offset (the bits above; 0 for a key of up
//     to 8 bytes, which its prefix holds whole)
//   the two copies' order arrays, line-aligned: the live slots in key order (2 bytes each)
// Version v reads metadata copy copy[v] (0 or 1). A merge that changes the leaf writes the copy
// version cv does not read and points copy[nv] at it; one that does not change it points
// copy[nv] at copy[cv]'s (one header word, not a copy of the metadata). A slot is written only
// while the version being read does not hold it, so the slots are shared by the versions; the
// version flip publishes a merge's slots and copy (§2.2, Algorithm 2: the metadata of the next
// version in place, selected here through copy[] rather than by the version bit itself). A log
// page holding a record that a slot names (a key of more than 16 bytes) is a key page: kept,
// owned by its directory slot, until no slot of a live version names it (engine/key_pages.h,
// docs/dptree.md "String keys"); a key of up to 16 bytes has its record go with its log.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "format/layout.h"

namespace dptree::detail {

inline constexpr u64 kStringRootMagic = 0x4450545374725237ull;  // "DPTStrR7"
inline constexpr u64 kStringLeafType = 0x445054534c656637ull;   // "DPTSLef7"
// The magics of format 3 (leaves rewritten by each merge), 4 (slots of one word naming
// records of key and value), 5 (fingerprints of a byte-at-a-time hash) and 6 (keys of 9 to 16
// bytes named in their records), refused on open.
inline constexpr u64 kStringRootMagicR3 = 0x4450545374725233ull;  // "DPTStrR3"
inline constexpr u64 kStringRootMagicR4 = 0x4450545374725234ull;  // "DPTStrR4"
inline constexpr u64 kStringRootMagicR5 = 0x4450545374725235ull;  // "DPTStrR5"
inline constexpr u64 kStringRootMagicR6 = 0x4450545374725236ull;  // "DPTStrR6"
// Those of formats 3 on, as open_string_root (engine/string_base.h) takes them.
inline constexpr std::array<u64, 4> kStringOlderMagics = {kStringRootMagicR3, kStringRootMagicR4,
                                                          kStringRootMagicR5, kStringRootMagicR6};
// The string forms' format: 1 (leaves without fingerprints), 2 (key bytes in the leaves, log
// records of 63-bit payloads), 3 (sorted leaves rewritten by each merge), 4 (slots of one
// word, every key's value in its record), 5 (fingerprints and bloom hashes of FNV-1a) and 6
// (slots of keys of 9 to 16 bytes naming their records, kept in key pages) are refused on open.
inline constexpr std::size_t kStringFormat = 7;
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
// A key of up to this many bytes is its prefix and length alone: its slot names no record.
inline constexpr std::size_t kStringInlineKey = 8;
// A key of kStringInlineKey + 1 up to this many bytes is held whole in its slot (its bytes 8..15
// in the meta word), names no record either, and is tagged by kSlotKeyTag.
inline constexpr std::size_t kStringSlotKey = 16;
// The value word's tag of a slot holding a key of 9..16 bytes: values are at most 2^63 - 1 (the
// top bit is the tombstone's, and a leaf holds no tombstone), so the bit is free in a slot.
inline constexpr u64 kSlotKeyTag = u64{1} << 63;
static_assert(kSlotKeyTag == kTombstone);
// Whether a key of n bytes is held in its slot's prefix and meta words (tagged).
inline constexpr bool string_key_in_slot(std::size_t n) {
  return n > kStringInlineKey && n <= kStringSlotKey;
}
// A slot: what a lookup and a merge compare first (the prefix), and the value, in the leaf.
struct StringEntry {
  u64 prefix;  // the first 8 key bytes, big-endian: integer order is the keys' memcmp order
  // A key in the slot (tagged): its bytes 8..15, big-endian, zero padded. Else its length (low
  // 16 bits) and its record's pool offset (above; 0: none).
  u64 meta;
  u64 word;  // the value, with kSlotKeyTag for a key in the slot
  bool in_slot() const { return (word & kSlotKeyTag) != 0; }
  u64 value() const { return word & ~kSlotKeyTag; }
  // The length the meta word holds (a slot that is not tagged).
  std::size_t meta_len() const { return static_cast<std::size_t>(meta & 0xffff); }
  // The key's length; fp: the slot's fingerprint, whose low 3 bits are a tagged key's.
  std::size_t len(const std::uint16_t& fp) const {
    return in_slot() ? kStringInlineKey + 1 + (fp & 7u) : meta_len();
  }
  // The record the slot names (0: none, the key is in the slot).
  u64 rec() const { return in_slot() ? 0 : meta >> 16; }
  static u64 make_meta(std::size_t len, u64 rec) { return rec << 16 | len; }
};
static_assert(sizeof(StringEntry) == 24 && offsetof(StringEntry, word) == 16);
// A record offset must fit the 48 bits above the length.
inline constexpr u64 kStringRecLimit = u64{1} << 48;
// Scratch for a key rebuilt from its slot (up to kStringSlotKey bytes).
using StringKeyBuf = char[kStringSlotKey];

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

// Bytes at..at+7 of k as key_prefix gives its first 8 (a key in a slot's meta word).
inline u64 key_prefix_at(std::string_view k, std::size_t at) {
  return k.size() > at ? key_prefix(k.substr(at)) : 0;
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
  // The bytes of a key longer than 16 whose record is at pool offset `rec`.
  const char* long_key(u64 rec) const { return reinterpret_cast<const char*>(base + rec + 16); }
  // A slot's key (fp: its fingerprint in the copy read); its bytes live in its log record or,
  // up to 16, in a scratch `buf`.
  std::string_view key_of(const StringEntry& e, const std::uint16_t& fp, StringKeyBuf& buf) const {
    const std::size_t len = e.len(fp);
    if (e.in_slot()) {
      const u64 words[2] = {__builtin_bswap64(e.prefix), __builtin_bswap64(e.meta)};
      std::memcpy(buf, words, sizeof words);
      return {buf, len};
    }
    if (len > kStringInlineKey) return {long_key(e.rec()), len};
    const u64 word = __builtin_bswap64(e.prefix);
    std::memcpy(buf, &word, 8);
    return {buf, len};
  }
  // Slot s's key as copy c reads it (its fingerprint there gives a tagged key's length).
  std::string_view slot_key(int c, std::size_t s, StringKeyBuf& buf) const {
    return key_of(slots()[s], fps(c)[s], buf);
  }
  // The slot at position i of copy c's order, and its key.
  const StringEntry& entry_at(int c, std::size_t i) const { return slots()[order(c)[i]]; }
  std::string_view key(int c, std::size_t i, StringKeyBuf& buf) const {
    return slot_key(c, order(c)[i], buf);
  }
  // The sign of slot e's key against k (kp: key_prefix(k)); fp: e's fingerprint in the copy
  // read. The prefixes decide; when they tie, the lengths if either key is its prefix alone,
  // the bytes 8..15 of a key in the slot (its length from fp, read only when those tie too),
  // else the bytes after the prefix (the record's: the only read outside the leaf).
  int compare(const StringEntry& e, const std::uint16_t& fp, std::string_view k, u64 kp) const {
    if (e.prefix != kp) return e.prefix < kp ? -1 : 1;
    if (e.in_slot() && k.size() > kStringInlineKey) {
      const u64 km = key_prefix_at(k, kStringInlineKey);
      if (e.meta != km) return e.meta < km ? -1 : 1;
    }
    const std::size_t len = e.len(fp);
    if (!e.in_slot() && len > kStringInlineKey && k.size() > kStringInlineKey) {
      const int d = std::memcmp(long_key(e.rec()) + 8, k.data() + 8,
                                std::min(len, k.size()) - kStringInlineKey);
      if (d != 0) return d;
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
// A leaf entry's fingerprint from its key's hash_string and length: 16 bits of the hash or,
// for a key of 9..16 bytes (held in its slot), the hash's 13 high bits and the length - 9, so
// that a slot's length is in its fingerprint and a lookup's fingerprint match checks it.
inline std::uint16_t string_fingerprint(u64 hash, std::size_t len) {
  if (string_key_in_slot(len))
    return static_cast<std::uint16_t>((hash >> 51) << 3 | (len - kStringInlineKey - 1));
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
// A log that goes on in a key page of the log before it (engine/plog.h PLog::inherit) marks
// where its records begin with two words: its validity bit, a length field of kInheritMark (no
// key is that long, so no record starts so) and a checksum of the word's pool offset and the
// page's epoch (a mark an earlier use of the page left fails it); then a zero word. The newest log
// in a page begins after the last mark of the run of whole records and marks from the page's start.
inline constexpr u64 kInheritMark = 0xffff;
u64 encode_inherit_mark(u64 vbit, u64 off, u64 epoch);
bool inherit_mark_whole(u64 w, u64 off, u64 epoch);
// A whole record's key and value.
inline std::string_view string_record_key(const u64* in) {
  return {reinterpret_cast<const char*>(in + 2), string_record_length(in[0])};
}
inline u64 string_record_value(const u64* in) {
  return in[1];
}

}  // namespace dptree::detail
