// Checks of a DPTree pool's format before anything else reads it (verify.h): the root's magic,
// version and parameters, and finding the root in a pool.
#include "format/verify.h"

#include "dptree/error.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/pool.h"
#include "format/cdptree_root.h"
#include "format/string_leaf.h"

#include <algorithm>
#include <iterator>

namespace dptree::detail {

bool entry_width_ok(std::size_t bytes) {
  return bytes >= 8 && bytes <= 56 && bytes % 8 == 0;
}

bool log_page_size_ok(std::size_t bytes) {
  return bytes >= kLogPageUnit && bytes % kLogPageUnit == 0 && bytes <= kMaxLogPage;
}

u64 format_version(u64 magic) {
  // The first seven bytes name the tree ("DPTreeR", "CDPTreR"), the last is '0' + version.
  const u64 name = magic & 0x00ffffffffffffffull;
  const u64 names[] = {kRootMagic, kCRootMagic, kStringRootMagic, kCStringRootMagic};
  if (std::none_of(std::begin(names), std::end(names),
                   [name](u64 m) { return name == (m & 0x00ffffffffffffffull); }))
    return 0;
  const u64 digit = magic >> 56;
  return digit >= '1' && digit <= '9' ? digit - '0' : 0;
}

std::vector<std::string> verify_format(const Root& root, u64 magic, u64 gv_bits) {
  std::vector<std::string> bad;
  auto word = [](const char* name, u64 v, const char* want) {
    return std::string("root word ") + name + " = " + std::to_string(v) + ": " + want;
  };
  if (root.magic != magic) {
    const u64 version = format_version(root.magic);
    bad.push_back(version && version != kFormatVersion
                      ? "the pool has format version " + std::to_string(version) +
                            ", this build reads version " + std::to_string(kFormatVersion)
                      : "root magic is wrong");
    return bad;  // the other words are not this tree's
  }
  if (root.gv & ~gv_bits) bad.push_back(word("gv", root.gv, "it holds bits no version sets"));
  if (root.leaf_capacity < kMinLeafCapacity || root.leaf_capacity > kMaxLeafCapacity)
    bad.push_back(word("leaf_capacity", root.leaf_capacity, "outside 4..4096"));
  if (!entry_width_ok(root.key_bytes))
    bad.push_back(word("key_bytes", root.key_bytes, "not a multiple of 8 in 8..56"));
  if (!entry_width_ok(root.value_bytes))
    bad.push_back(word("value_bytes", root.value_bytes, "not a multiple of 8 in 8..56"));
  if (!log_page_size_ok(root.log_page_size))
    bad.push_back(
        word("log_page_size", root.log_page_size, "not a multiple of 1 KiB up to 64 MiB"));
  return bad;
}

void* root_if_ours(const pm::Pool& pool, u64 magic, std::size_t bytes) {
  const u64 off = *pool.root_word();
  if (off == 0) return nullptr;
  // A live block the root word owns (pm/allocator.h); any other is damage, not an index.
  const auto& alloc = pool.allocator();
  if (alloc.owner_of(off) != pool.offset_of(pool.root_word()))
    throw Error(Errc::corrupt, "pool '" + pool.name() + "' is damaged: its root word (in the " +
                                   "pool header) points to offset " + std::to_string(off) +
                                   ", which is no live block of an index root; restore the " +
                                   "pool from a copy");
  // A smaller root block than this tree's is another index's (its fields cannot be read).
  if (alloc.block_size(off) < bytes || *pool.at<u64>(off) != magic) return nullptr;
  return pool.at(off);
}

void* find_root(pm::Pool& pool, u64 magic, std::size_t bytes, std::string_view index) {
  const std::string in = "pool '" + pool.name() + "'";
  if (*pool.root_word() == 0)
    throw Error(Errc::not_found, in + " is empty (it holds no index): create a " +
                                     std::string(index) + " in it instead of opening one");
  if (void* root = root_if_ours(pool, magic, bytes)) return root;
  throw Error(Errc::wrong_index, in + " holds another index, not a " + std::string(index) +
                                     ": open it with the index that created it, or use " +
                                     "a new pool");
}

}  // namespace dptree::detail
