// Persistent layout of DPTree's string form (string_index.h): its root magic, its leaves, and
// its log records. Everything else (root words, owner directory, pendingLeaves, log pages) is
// the integer form's (layout.h, log_page.h).
//
// A string leaf is one allocator block that is written once, by the merge that creates it,
// and never changed afterwards but for its next word of the version being built:
//   header line: owner slot, type, next[2], count, heap bytes, 2 zero words
//   count 2-byte fingerprints, one per entry in entry order (string_fingerprint of the key's
//     hash), zero padded to a multiple of 8 bytes: a lookup scans them, not the entries
//   count entries of 24 bytes, in key order: the key's first 8 bytes big-endian (zero padded),
//     its length and the offset (from the leaf) of its bytes, and the value
//   the key heap: the bytes of every key longer than 8, one after the other in entry order
// A key of up to 8 bytes is its prefix and length alone (no heap bytes, offset 0).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "format/layout.h"

namespace dptree::detail {

inline constexpr u64 kStringRootMagic = 0x4450545374725232ull;  // "DPTStrR2"
inline constexpr u64 kStringLeafType = 0x445054534c656632ull;   // "DPTSLef2"
// The string forms' first format (leaves without fingerprints): its pools are refused on open.
inline constexpr std::size_t kStringFormat = 2;
inline constexpr u64 string_magic_version(u64 magic, std::size_t version) {
  return (magic & 0x00ffffffffffffffull) | u64{'0' + version} << 56;
}
// The longest key the string form takes (the record's length field holds up to 2^16 - 1).
inline constexpr std::size_t kStringTreeMaxKey = 1024;
// The key bytes one leaf holds at most (besides the one key that always fits).
inline constexpr std::size_t kStringLeafHeap = 16 * 1024;

struct StringLeafHeader {
  OwnerSlotPtr owner_slot;
  u64 type;
  LeafPtr next[2];  // the next leaf of each version
  u64 count;
  u64 heap_bytes;
  u64 unused[2];
};
struct StringEntry {
  u64 prefix;  // the first 8 key bytes, big-endian: integer order is the keys' memcmp order
  std::uint32_t len;
  std::uint32_t off;  // from the leaf's start; 0 for a key of up to 8 bytes
  u64 value;
};
// The persistent layout: a change here changes the pool format.
static_assert(sizeof(StringLeafHeader) == 64 && offsetof(StringLeafHeader, next) == 16 &&
              offsetof(StringLeafHeader, count) == 32);
static_assert(sizeof(StringEntry) == 24 && offsetof(StringEntry, value) == 16);

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

// A view of one string leaf.
struct StringLeaf {
  std::byte* p;
  StringLeafHeader& h() const { return *reinterpret_cast<StringLeafHeader*>(p); }
  std::size_t count() const { return h().count; }
  static std::size_t fp_bytes(std::size_t count) { return (2 * count + 7) / 8 * 8; }
  std::uint16_t* fps() const { return reinterpret_cast<std::uint16_t*>(p + 64); }
  StringEntry* entries() const { return entries(count()); }
  // The entries of a leaf known to hold n (no read of the header).
  StringEntry* entries(std::size_t n) const {
    return reinterpret_cast<StringEntry*>(p + 64 + fp_bytes(n));
  }
  static std::size_t bytes(std::size_t count, std::size_t heap) {
    return 64 + fp_bytes(count) + 24 * count + heap;
  }
  std::size_t heap_start() const { return bytes(count(), 0); }
  // The key of entry i; its bytes live in the leaf (heap) or, up to 8, in a scratch `buf`.
  std::string_view key(std::size_t i, char (&buf)[8]) const {
    const StringEntry& e = entries()[i];
    if (e.len > 8) return {reinterpret_cast<const char*>(p + e.off), e.len};
    for (std::size_t j = 0; j < 8; ++j) buf[j] = static_cast<char>(e.prefix >> (56 - 8 * j));
    return {buf, e.len};
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

// Log records of the string form: one record is consecutive one-word slots of a log page
// (format/log_page.h; each word carries the validity bit in bit 0), holding the bits of
// [key length: 2 bytes][value: 8 bytes][key bytes], little-endian, 63 per word. A word whose
// payload is 0 (no key is empty) pads the rest of a page a record did not fit.
inline std::size_t string_record_words(std::size_t key_len) {
  return ((10 + key_len) * 8 + 62) / 63;
}
// Encodes into out[0 .. string_record_words(k.size())).
void encode_string_record(std::string_view k, u64 v, u64 vbit, u64* out);
// The key length a record's first word announces (0: a pad word).
inline std::size_t string_record_length(u64 first_word) {
  return static_cast<std::size_t>(first_word >> 1 & 0xffff);
}
// Decodes a record of `words` words whose validity bits were checked; `k` gets the key.
void decode_string_record(const u64* in, std::size_t words, std::string& k, u64& v);

}  // namespace dptree::detail
