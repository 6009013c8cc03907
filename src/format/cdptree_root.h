// Persistent root of the concurrent DPTree (§3): the single-threaded tree's Root
// (format/layout.h) followed by one owner word per log version for the header table of its
// partition tail words (§3.1), and the partition count.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "format/layout.h"

namespace dptree::detail {

inline constexpr u64 kCRootMagic = 0x4344505472655231ull;  // "CDPTreR1"
// The string form (cdptree/string_cdptree.h): the same root; its log tables hold one head word
// per shard of a chain of word records, its leaves are string leaves (string_leaf.h).
inline constexpr u64 kCStringRootMagic = 0x4344505374725237ull;  // "CDPStrR7" (string format 7)
// String format 7 before a shard's log went on in the previous log's last key page
// (engine/plog.h PLog::inherit): a build of that format would end such a log early, so the
// magic changed; refused on open.
inline constexpr u64 kCStringRootMagicR6 = 0x4344505374725236ull;  // "CDPStrR6"
// The string form's magics of string formats 3 (leaves rewritten by each merge), 4 (slots of
// one word naming records of key and value), 5 (fingerprints of FNV-1a) and 6 (keys of 9 to
// 16 bytes named in their records), refused on open.
inline constexpr u64 kCStringRootMagicR2 = 0x4344505374725232ull;  // "CDPStrR2"
inline constexpr u64 kCStringRootMagicR3 = 0x4344505374725233ull;  // "CDPStrR3"
inline constexpr u64 kCStringRootMagicR4 = 0x4344505374725234ull;  // "CDPStrR4"
inline constexpr u64 kCStringRootMagicR5 = 0x4344505374725235ull;  // "CDPStrR5"
// Those of formats 3 on, as open_string_root (engine/string_base.h) takes them.
inline constexpr std::array<u64, 4> kCStringOlderMagics = {
    kCStringRootMagicR2, kCStringRootMagicR3, kCStringRootMagicR4, kCStringRootMagicR5};

struct CRoot {
  Root base;  // base.magic = kCRootMagic; base.log_head unused
  // Owner words of the header table of each log version: one page word per partition (the
  // tail of its chain) or, in the string form, per shard (the head of its PLog).
  PPtr<LogPagePtr> log_table[2];
  u64 partitions;
};
// The persistent layout: a change here changes the pool format.
static_assert(sizeof(CRoot) == 144);
static_assert(offsetof(CRoot, log_table) == 120 && offsetof(CRoot, partitions) == 136);

}  // namespace dptree::detail
