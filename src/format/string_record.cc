// The string form's log records (format/string_leaf.h).
#include <string>
#include <vector>

#include "format/string_leaf.h"

namespace dptree::detail {

namespace {
// Bits [63 j, 63 j + 63) of the little-endian byte string b (zero beyond its end).
u64 bits63(const unsigned char* b, std::size_t n, std::size_t j) {
  u64 x = 0;
  const std::size_t first = 63 * j;
  for (std::size_t i = 0; i < 9; ++i) {  // the 9 bytes that hold those 63 bits
    const std::size_t byte = first / 8 + i;
    if (byte >= n) break;
    const u64 c = b[byte];
    const std::size_t at = 8 * byte;  // bit position of this byte's bit 0
    if (at >= first)
      x |= at - first < 64 ? c << (at - first) : 0;
    else
      x |= c >> (first - at);
  }
  return x & ~(u64{1} << 63);
}
}  // namespace

void encode_string_record(std::string_view k, u64 v, u64 vbit, u64* out) {
  const std::size_t n = 10 + k.size();
  unsigned char b[10 + kStringTreeMaxKey];
  b[0] = static_cast<unsigned char>(k.size());
  b[1] = static_cast<unsigned char>(k.size() >> 8);
  for (int i = 0; i < 8; ++i) b[2 + i] = static_cast<unsigned char>(v >> (8 * i));
  std::memcpy(b + 10, k.data(), k.size());
  const std::size_t words = string_record_words(k.size());
  for (std::size_t j = 0; j < words; ++j) out[j] = bits63(b, n, j) << 1 | vbit;
}

void decode_string_record(const u64* in, std::size_t words, std::string& k, u64& v) {
  const std::size_t len = string_record_length(in[0]);
  std::vector<unsigned char> b((63 * words + 7) / 8 + 1, 0);
  for (std::size_t j = 0; j < words; ++j) {
    const u64 x = in[j] >> 1;
    for (std::size_t bit = 0; bit < 63; ++bit)
      if (x >> bit & 1) {
        const std::size_t at = 63 * j + bit;
        b[at / 8] |= static_cast<unsigned char>(1u << (at % 8));
      }
  }
  v = 0;
  for (int i = 0; i < 8; ++i) v |= u64{b[2 + i]} << (8 * i);
  k.assign(reinterpret_cast<const char*>(b.data() + 10), len);
}

}  // namespace dptree::detail
