// The log record codec (format/log_page.h).
#include "format/log_page.h"

#include <string>

#include "dptree/index.h"
#include "dptree/pm/pool.h"

namespace dptree::detail {

const LogPageHeader* checked_page(const pm::Pool& pool, LogPagePtr link, const LogGeometry& G,
                                  CheckReport& r) {
  if (pool.holds(link) && pool.size() - link.off >= G.page_span()) return pool.get(link);
  r.fail("a log page link holds " + std::to_string(link.off) +
         ", which is misaligned or leaves no whole page inside the pool");
  return nullptr;
}

void RecordCodec::encode(u64 k, u64 v, u64 vbit, u64* out) const {
  // The entry's bits (key field, then value field, padding zero) cut into 63-bit payloads,
  // each with the validity bit in bit 0.
  u64 e[16] = {};
  e[0] = k;
  e[kbytes / 8] = v;
  std::size_t n = ebytes / 8;
  for (std::size_t j = 0; j < G.words; ++j) {
    std::size_t b = 63 * j, wi = b / 64, sh = b % 64;
    u64 x = wi < n ? e[wi] >> sh : 0;
    if (sh > 1 && wi + 1 < n) x |= e[wi + 1] << (64 - sh);
    out[j] = (x << 1) | vbit;
  }
}

bool RecordCodec::decode(const u64* in, u64 vbit, u64& k, u64& v) const {
  u64 e[17] = {};
  for (std::size_t j = 0; j < G.words; ++j) {
    if ((in[j] & 1) != vbit) return false;
    u64 x = in[j] >> 1;
    std::size_t b = 63 * j, wi = b / 64, sh = b % 64;
    e[wi] |= x << sh;
    if (sh > 1) e[wi + 1] |= x >> (64 - sh);
  }
  k = e[0];
  v = e[kbytes / 8];
  return true;
}

bool RecordCodec::any_word_valid(const u64* in, u64 vbit) const {
  for (std::size_t j = 0; j < G.words; ++j)
    if ((in[j] & 1) == vbit) return true;
  return false;
}

}  // namespace dptree::detail
