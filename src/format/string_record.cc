// The string form's log records (format/string_leaf.h).
#include <algorithm>
#include <string>

#include "format/string_leaf.h"

namespace dptree::detail {

namespace {
// Bits [63 j, 63 j + 63) of the little-endian byte string b, which is readable and zero for
// 16 bytes past the record's end: the 8 bytes that hold their start, and the next one.
u64 bits63(const unsigned char* b, std::size_t j) {
  const std::size_t first = 63 * j, shift = first % 8;
  u64 lo;
  std::memcpy(&lo, b + first / 8, 8);
  u64 x = lo >> shift;
  if (shift) x |= u64{b[first / 8 + 8]} << (64 - shift);
  return x & ~(u64{1} << 63);
}
}  // namespace

void encode_string_record(std::string_view k, u64 v, u64 vbit, u64* out) {
  const std::size_t n = 10 + k.size();
  unsigned char b[10 + kStringTreeMaxKey + 16];
  b[0] = static_cast<unsigned char>(k.size());
  b[1] = static_cast<unsigned char>(k.size() >> 8);
  for (int i = 0; i < 8; ++i) b[2 + i] = static_cast<unsigned char>(v >> (8 * i));
  std::memcpy(b + 10, k.data(), k.size());
  std::memset(b + n, 0, 16);
  const std::size_t words = string_record_words(k.size());
  for (std::size_t j = 0; j < words; ++j) out[j] = bits63(b, j) << 1 | vbit;
}

void decode_string_record(const u64* in, std::size_t words, std::string& k, u64& v) {
  const std::size_t len = string_record_length(in[0]);
  const std::size_t total = std::min(10 + len, (63 * words) / 8);
  unsigned char b[10 + kStringTreeMaxKey] = {};
  // The payloads' bits in order, a byte out as soon as 8 are in: at most 7 wait when a half
  // payload (32 bits or fewer) comes, so the accumulator never overflows.
  u64 acc = 0;
  std::size_t nb = 0, out = 0;
  auto push = [&](u64 bits, std::size_t n) {
    acc |= bits << nb;
    nb += n;
    for (; nb >= 8 && out < total; nb -= 8, acc >>= 8) b[out++] = static_cast<unsigned char>(acc);
  };
  for (std::size_t j = 0; j < words && out < total; ++j) {
    const u64 x = in[j] >> 1;
    push(x & 0xffffffffull, 32);
    push(x >> 32, 31);
  }
  v = 0;
  for (int i = 0; i < 8; ++i) v |= u64{b[2 + i]} << (8 * i);
  k.assign(reinterpret_cast<const char*>(b + 10), len);
}

}  // namespace dptree::detail
