// What a root must hold before anything else in a pool can be read: its magic names the tree
// and the format version, the gv word carries only the bits that tree defines, and the stored
// format words (leaf capacity, entry widths, log page size) lie in the ranges the layouts are
// computed for. Both trees' open paths and check()s ask here first.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "format/layout.h"

namespace dptree::pm {
class Pool;
}

namespace dptree::detail {

// The format version this build writes and reads; the last byte of every root magic
// ("DPTreeR1", "CDPTreR1") is its digit.
inline constexpr u64 kFormatVersion = 1;

// The ranges of the stored format words.
inline constexpr std::size_t kMinLeafCapacity = 4, kMaxLeafCapacity = 4096;
inline constexpr std::size_t kLogPageUnit = 1024, kMaxLogPage = std::size_t{64} << 20;
bool entry_width_ok(std::size_t bytes);    // 8..56, a multiple of 8
bool log_page_size_ok(std::size_t bytes);  // a multiple of 1 KiB, 1 KiB..64 MiB

// The version a root magic names: its last byte's digit, 0 for a magic that is not one of
// this project's roots.
u64 format_version(u64 magic);

// The problems of a root's format words, each naming the word and its value (empty: the
// root's format is readable). `magic` is the tree's expected magic, `gv_bits` every gv bit
// it may set.
std::vector<std::string> verify_format(const Root& root, u64 magic, u64 gv_bits);

// The root block of the `index` (a name for messages) in `pool`: the live block the pool's
// root word owns, at least `bytes` long, starting with `magic`. Throws Error: not_found for
// an empty pool, corrupt for a root word that owns no live block, wrong_index for another
// index's root.
void* find_root(pm::Pool& pool, u64 magic, std::size_t bytes, std::string_view index);
// The same root, or nullptr for an empty pool or another index's root (a caller that looks
// before it creates or opens); throws Error(corrupt) as find_root does.
void* root_if_ours(const pm::Pool& pool, u64 magic, std::size_t bytes);

}  // namespace dptree::detail
