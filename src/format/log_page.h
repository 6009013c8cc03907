// The log page format of both trees (DPTree paper §2.1, Figure 2): a header line, then
// records. An entry is cut into 63-bit payloads, one per 64-bit word, each word carrying the
// validity bit in bit 0; a record with any word lacking the validity bit is torn or absent.
// A free page's record words all carry the bit its flavor names, so a page taken for the log
// of the other flavor needs no initialising writes (§2.1 caching allocation).
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/layout.h"

namespace dptree {
struct CheckReport;
namespace pm {
class Pool;
}
}  // namespace dptree

namespace dptree::detail {

inline constexpr u64 kPageType = 0x4450545061676531ull;  // "DPTPage1"
inline constexpr u64 kDiscardFlavor = 2;                 // a log page to give back (§2.1)
// A page of a released string log whose records leaf entries still name (a key page): kept
// until none does (format/string_leaf.h).
inline constexpr u64 kKeyFlavor = 3;
// The word after the header: the page's epoch, one more each time the page is taken again from
// a freelist, so that the string form's record checksums (string_leaf.h) tell the records of
// its current use from those its earlier uses left.
inline constexpr std::size_t kPageEpochOffset = 32;

// The first line of every log page.
struct LogPageHeader {
  OwnerSlotPtr owner_slot;  // the owner-directory slot that owns the page (format/layout.h)
  u64 type;                 // kPageType
  LogPagePtr next;          // the next page of the log (DPTree), or the previous one (cdptree's
                            // partition lists, §3.1); null ends the list
  u64 flavor;  // the validity bit the page's free record words carry, or kDiscardFlavor
};
// The persistent layout: a change here changes the pool format.
static_assert(sizeof(LogPageHeader) == 32);
static_assert(offsetof(LogPageHeader, type) == 8 && offsetof(LogPageHeader, next) == 16 &&
              offsetof(LogPageHeader, flavor) == 24);

// Record layout inside a page: records start after the header line, and a record never
// straddles a cache line when it fits one, so an append costs one flush and one fence.
struct LogGeometry {
  std::size_t words = 0, per_line = 0, lines_per_record = 0, per_page = 0;
  void init(std::size_t entry_bytes, std::size_t page_bytes) {
    words = (entry_bytes * 8 + 62) / 63;
    std::size_t lines = (page_bytes - 64) / 64;
    if (words <= 8) {
      per_line = 8 / words;
      lines_per_record = 1;
      per_page = lines * per_line;
    } else {
      per_line = 1;
      lines_per_record = (words + 7) / 8;
      per_page = lines / lines_per_record;
    }
  }
  // The bytes from a page's start to the end of its last record.
  std::size_t page_span() const { return offset(per_page - 1) + words * 8; }
  // Byte offset of record r inside its page.
  std::size_t offset(std::size_t r) const {
    if (lines_per_record == 1) return 64 + (r / per_line) * 64 + (r % per_line) * words * 8;
    return 64 + r * lines_per_record * 64;
  }
};

// Serialises entries of key_bytes + value_bytes (key and value in the first 8 bytes of their
// fields, zero padding) into G.words validity-bit words and back.
struct RecordCodec {
  LogGeometry G;
  std::size_t kbytes = 8, ebytes = 16;
  void init(std::size_t key_bytes, std::size_t value_bytes, std::size_t page_bytes) {
    kbytes = key_bytes;
    ebytes = key_bytes + value_bytes;
    G.init(ebytes, page_bytes);
  }
  void encode(u64 k, u64 v, u64 vbit, u64* out) const;
  // False for a torn or absent record (some word without validity bit `vbit`).
  bool decode(const u64* in, u64 vbit, u64& k, u64& v) const;
  // Whether any word of the record carries `vbit` (a torn record must be invalidated before
  // it is appended over, see PLog::replay).
  bool any_word_valid(const u64* in, u64 vbit) const;
};

// For a check() walking a log: the header of the page `link` names, or nullptr, with a
// failure in `r`, when the page's records do not lie inside the pool or `link` is misaligned.
const LogPageHeader* checked_page(const pm::Pool& pool, LogPagePtr link, const LogGeometry& G,
                                  CheckReport& r);

// The validity bit records of the log of version `ver` carry (pages of freelist_ver hold the
// opposite bit, `ver`, in every word).
inline u64 log_valid_bit(int ver) {
  return static_cast<u64>(1 - ver);
}

}  // namespace dptree::detail
