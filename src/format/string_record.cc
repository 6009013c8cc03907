// The string form's log records (format/string_leaf.h).
#include <xxhash.h>

#include <cstring>

#include "format/string_leaf.h"

namespace dptree::detail {

namespace {
constexpr u64 kCheckBits = 47;

// The checksum of a record: the key's bytes hashed with a seed that binds the value, the
// record's place (pool offset, page epoch) and its length and validity bit.
u64 record_check(std::string_view k, u64 v, u64 vbit, u64 off, u64 epoch) {
  const u64 bind[4] = {v, off, epoch, k.size() << 1 | vbit};
  const u64 seed = XXH3_64bits(bind, sizeof bind);
  return XXH3_64bits_withSeed(k.data(), k.size(), seed) >> (64 - kCheckBits);
}
}  // namespace

u64 hash_long_string(std::string_view k) {
  return XXH3_64bits(k.data(), k.size());
}

void encode_string_record(std::string_view k, u64 v, u64 vbit, u64 off, u64 epoch, u64* out) {
  const std::size_t words = string_record_words(k.size());
  out[0] = record_check(k, v, vbit, off, epoch) << 17 | u64{k.size()} << 1 | vbit;
  out[1] = v;
  out[words - 1] = 0;  // the padding after the key's last byte
  std::memcpy(out + 2, k.data(), k.size());
}

u64 encode_inherit_mark(u64 vbit, u64 off, u64 epoch) {
  const u64 bind[4] = {~u64{0}, off, epoch, kInheritMark << 1 | vbit};
  return (XXH3_64bits(bind, sizeof bind) >> (64 - kCheckBits)) << 17 | kInheritMark << 1 | vbit;
}

bool inherit_mark_whole(u64 w, u64 off, u64 epoch) {
  return string_record_length(w) == kInheritMark && w == encode_inherit_mark(w & 1, off, epoch);
}

bool string_record_whole(const u64* in, u64 vbit, u64 off, u64 epoch) {
  if ((in[0] & 1) != vbit) return false;
  return in[0] >> 17 ==
         record_check(string_record_key(in), string_record_value(in), vbit, off, epoch);
}

}  // namespace dptree::detail
