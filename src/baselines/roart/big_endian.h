// Integer keys as tries see them: their 8 bytes, most significant first, so that byte order
// is numeric order (ROART's and PACTree's integer forms).
#pragma once

#include <cstring>
#include <string_view>

#include "dptree/index.h"

namespace dptree::baselines {

struct BigEndian {
  char b[8];
  explicit BigEndian(Key k) {
    Key x = __builtin_bswap64(k);
    std::memcpy(b, &x, 8);
  }
  operator std::string_view() const { return {b, 8}; }
};

inline Key from_big_endian(std::string_view s) {
  Key x = 0;
  std::memcpy(&x, s.data(), 8);
  return __builtin_bswap64(x);
}

}  // namespace dptree::baselines
