// Persistent layout of DPTree's string form (string_index.h): its root magic, its leaves, and
// its log records. Everything else (root words, owner directory, pendingLeaves, log pages) is
// the integer form's (layout.h, log_page.h).
//
// A key's bytes are written to PM once, in its log record, and never again: a leaf entry names
// them there. A string leaf is one allocator block that is written once, by the merge that
// creates it, and never changed afterwards but for its next word of the version being built:
//   header line: owner slot, type, next[2], count, 3 zero words
//   count 2-byte fingerprints, one per entry in entry order (string_fingerprint of the key's
//     hash), zero padded to a multiple of 8 bytes: a lookup scans them, not the entries
//   count entries of 24 bytes, in key order: the key's first 8 bytes big-endian (zero padded),
//     a word holding its length (low 16 bits) and the pool offset of its log record (the bits
//     above), and the value
// A key of up to 8 bytes is its prefix and length alone (record offset 0). A log page holding a
// record that an entry names is a key page: kept, owned by its directory slot, until no entry
// names it (st/key_pages.h, docs/dptree.md "String keys").
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "format/layout.h"

namespace dptree::detail {

inline constexpr u64 kStringRootMagic = 0x4450545374725233ull;  // "DPTStrR3"
inline constexpr u64 kStringLeafType = 0x445054534c656633ull;   // "DPTSLef3"
// The string forms' format: 1 (leaves without fingerprints) and 2 (key bytes in the leaves, log
// records of 63-bit payloads) are refused on open.
inline constexpr std::size_t kStringFormat = 3;
inline constexpr u64 string_magic_version(u64 magic, std::size_t version) {
  return (magic & 0x00ffffffffffffffull) | u64{'0' + version} << 56;
}
// The longest key the string form takes (the record's length field holds up to 2^16 - 1).
inline constexpr std::size_t kStringTreeMaxKey = 1024;

struct StringLeafHeader {
  OwnerSlotPtr owner_slot;
  u64 type;
  LeafPtr next[2];  // the next leaf of each version
  u64 count;
  u64 unused[3];
};
struct StringEntry {
  u64 prefix;  // the first 8 key bytes, big-endian: integer order is the keys' memcmp order
  u64 meta;    // the key's length (low 16 bits) and the pool offset of its log record (above)
  u64 value;
  std::size_t len() const { return static_cast<std::size_t>(meta & 0xffff); }
  u64 rec() const { return meta >> 16; }
  static u64 make_meta(std::size_t len, u64 rec) { return rec << 16 | len; }
};
// The persistent layout: a change here changes the pool format.
static_assert(sizeof(StringLeafHeader) == 64 && offsetof(StringLeafHeader, next) == 16 &&
              offsetof(StringLeafHeader, count) == 32);
static_assert(sizeof(StringEntry) == 24 && offsetof(StringEntry, value) == 16);
// A record offset must fit the 48 bits above the length.
inline constexpr u64 kStringRecLimit = u64{1} << 48;

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

// A view of one string leaf; `base` is the pool's base address (a long key's bytes are in a log
// record elsewhere in the pool).
struct StringLeaf {
  std::byte* p;
  const std::byte* base;
  StringLeaf(std::byte* leaf, const std::byte* pool_base) : p(leaf), base(pool_base) {}
  StringLeafHeader& h() const { return *reinterpret_cast<StringLeafHeader*>(p); }
  std::size_t count() const { return h().count; }
  static std::size_t fp_bytes(std::size_t count) { return (2 * count + 7) / 8 * 8; }
  std::uint16_t* fps() const { return reinterpret_cast<std::uint16_t*>(p + 64); }
  StringEntry* entries() const { return entries(count()); }
  // The entries of a leaf known to hold n (no read of the header).
  StringEntry* entries(std::size_t n) const {
    return reinterpret_cast<StringEntry*>(p + 64 + fp_bytes(n));
  }
  static std::size_t bytes(std::size_t count) { return 64 + fp_bytes(count) + 24 * count; }
  // The bytes of a key longer than 8 whose record is at pool offset `rec`.
  const char* long_key(u64 rec) const { return reinterpret_cast<const char*>(base + rec + 16); }
  // The key of entry i; its bytes live in its log record or, up to 8, in a scratch `buf`.
  std::string_view key(std::size_t i, char (&buf)[8]) const { return key_of(entries()[i], buf); }
  std::string_view key_of(const StringEntry& e, char (&buf)[8]) const {
    const std::size_t len = e.len();
    if (len > 8) return {long_key(e.rec()), len};
    for (std::size_t j = 0; j < 8; ++j) buf[j] = static_cast<char>(e.prefix >> (56 - 8 * j));
    return {buf, len};
  }
};

// FNV-1a over the whole key, finished by hash_key's mixer: the bloom filter's hash.
inline u64 hash_string(std::string_view k) {
  u64 h = 0xcbf29ce484222325ull;
  for (char c : k) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return hash_key(h);
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
