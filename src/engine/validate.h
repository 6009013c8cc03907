// Open-time checks of a DPTree family pool (single-threaded §2 and concurrent §3): PM is
// untrusted input, so before recovery follows any offset, count or state word read from the
// pool, these checks prove that every block it will reach is a live allocator block of the
// right size, owned by the word that points to it, that lists end (no cycle) and that version
// and state words are in range. A violation throws Error(corrupt) naming the structure and
// its offset. They run once per open; lookups and writes trust what they proved.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "engine/family.h"

namespace dptree::detail {

// What differs between the two trees.
struct TreeShape {
  const char* tree;       // "DPTree" or "cdptree", for messages
  u64 gv_bits;            // the bits gv may hold
  u64 rc_mask;            // the bits of a leaf's rc word that hold a restart count
  std::vector<u64> logs;  // offsets of the words that start each log page chain
  // The string form's leaves (format/string_leaf.h); left empty, the integer leaves (layout.h).
  u64 leaf_type = kLeafType;
  std::function<u64(u64 leaf, int v)> next_word = {};  // the offset of a leaf's next word
  // Throws corrupt for a leaf of the current list (version v) whose contents are damaged.
  std::function<void(u64 leaf, int v)> leaf_contents = {};
  std::size_t leaf_bytes = 0;  // the string leaves' block size (0: the integer leaves')
  // Threads that check the directory's slots (each reads one leaf or log page).
  unsigned threads = 1;
};

// Throws Error(corrupt) unless `off` is a live block of at least `bytes` bytes whose owner
// word is at `owner` (an offset in the pool). `what` names the structure.
void require_owned_block(const pm::Pool& pool, u64 off, u64 owner, std::size_t bytes,
                         const std::string& what);

// The current version's leaf list as the open-time check found it.
struct OpenedList {
  std::vector<u64> leaves;  // in list order
  // Each leaf's max key word in the current version (the integer leaves; empty for the string
  // leaves): what the inner index is built from, read by the check's threads.
  std::vector<u64> max;
  // The log pages the directory owns (slot, page), in directory order: what recovery's sweep
  // reads (LogPageCache::sweep) instead of every block the directory owns.
  std::vector<std::pair<u64, u64>> pages;
};

// Every check above over the tree whose persistent parts are `t` (attached) and root `root`:
// directory, pendingLeaves, the leaf lists, the logs of `shape.logs`, counts. Returns the
// current version's leaves in list order and their max keys, so that recovery need not read
// the leaves again: recovery changes only the other version's list (Algorithm 4 reclaims a
// merge's new leaves and collects the old version's garbage).
OpenedList validate_on_open(const TreeParts& t, const Root& root, const TreeShape& shape);

// The format words of a root (leaf capacity, log page size, ...) put into default `Options`
// must pass Options::validate(); its complaint becomes Error(corrupt): the pool, not the
// caller, is wrong.
template <class Options>
void validate_format(const pm::Pool& pool, const Options& format, const char* tree) {
  try {
    format.validate();
  } catch (const Error& e) {
    throw Error(Errc::corrupt, "pool '" + pool.name() + "': the " + tree +
                                   " root holds an impossible format (" + e.what() +
                                   "): the pool is damaged; restore it from a copy");
  }
}

// Error(corrupt) for `tree` in `pool`: "<what> at offset <off>: <problem>".
[[noreturn]] void throw_corrupt(const pm::Pool& pool, const char* tree, const std::string& what,
                                u64 off, const std::string& problem);

}  // namespace dptree::detail
