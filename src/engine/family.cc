// What the two DPTrees share (family.h).
#include "engine/family.h"

#include "format/verify.h"

#include "dptree/error.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/pool.h"

namespace dptree::detail {

TreeParts::TreeParts(pm::Pool& p, std::string_view who)
    : claim(p, who), pool(p), alloc(p.allocator()) {}

Leaf TreeParts::leaf(u64 off) const {
  return Leaf{pool.at(off), &L};
}

void TreeParts::attach_parts(Root& root, std::size_t leaf_capacity, std::size_t key_bytes,
                             std::size_t value_bytes, std::size_t log_page_size) {
  L.init(leaf_capacity, key_bytes, value_bytes);
  codec.init(key_bytes, value_bytes, log_page_size);
  dir = std::make_unique<OwnerDir>(pool, &root.dir);
  pending = std::make_unique<PendingLeaves>(pool, &root.pending);
  pages = std::make_unique<LogPageCache>(pool, *dir, log_page_size);
}

void TreeParts::require_empty_pool() const {
  if (*pool.root_word() != 0)
    throw Error(Errc::already_exists, "pool '" + pool.name() +
                                          "' already holds an index: open it instead of "
                                          "creating a new one, or use a new pool");
}

void* TreeParts::existing_root(u64 magic, std::size_t bytes, std::string_view index) const {
  return find_root(pool, magic, bytes, index);
}

void TreeParts::validate_stored(const std::function<void()>& validate) const {
  try {
    validate();
  } catch (const Error& e) {
    if (e.code() != Errc::invalid_argument) throw;
    throw Error(Errc::stored_setting,
                "pool '" + pool.name() + "' stores a setting out of range (" + e.what() +
                    "): the pool's root was damaged or written by another build; restore the " +
                    "pool from a copy");
  }
}

bool LeafWalk::enter(u64 l) {
  if (++leaves > owned_.size() + 1) {
    r_.fail("leaf list has a cycle");
    return false;
  }
  chain.push_back(l);
  at = "leaf " + std::to_string(leaves - 1) + " (offset " + std::to_string(l) + ")";
  if (!owned_.contains(l)) r_.fail(at + " is not owned by the directory");
  if (!t_.alloc.is_live(l)) r_.fail(at + " is not a live block");
  reach_.insert(l);
  Leaf lf = t_.leaf(l);
  if (lf.type() != kLeafType) r_.fail(at + " has a wrong type word");
  if (!slot_owns(t_.pool, lf.owner_slot(), l))
    r_.fail(at + ": its owner slot does not point to it");
  mk = lf.max_key(v_);
  if (!first && mk <= prev_max) r_.fail(at + ": max keys not increasing");
  return true;
}

std::size_t TreeParts::check_free_pages_and_blocks(const std::unordered_set<u64>& owned,
                                                   std::set<u64>& reach, CheckReport& r,
                                                   bool word_records) const {
  for (int fl = 0; fl < 2; ++fl)
    for (u64 pg : pages->pages(fl)) {
      if (!reach.insert(pg).second) r.fail("free log page also in use");
      if (pool.at<LogPageHeader>(pg)->flavor != static_cast<u64>(fl))
        r.fail("free log page in the wrong freelist");
      if (!owned.contains(pg)) r.fail("free log page not owned");
      // The log of version fl takes this page: no word may already carry its validity bit.
      for (std::size_t rr = 0; word_records && rr < codec.G.per_page; ++rr)
        if (codec.any_word_valid(pool.at<u64>(pg + codec.G.offset(rr)), log_valid_bit(fl))) {
          r.fail("free log page at " + std::to_string(pg) + " of freelist " + std::to_string(fl) +
                 ": record " + std::to_string(rr) +
                 " holds a word valid for the log that will take it");
          break;
        }
    }
  return check_block_ownership(pool, owned, reach, r);
}

void MergeBlock::fail(const Error& e) {
  blocked_ = true;
  removes_since_ = 0;
  throw Error(Errc::pool_full,
              std::string(e.what()) +
                  " (during a DPTree merge: the merge was undone, every write is still in "
                  "the buffer and its log; delete keys or use a bigger pool)");
}

void throw_merge_blocked(const pm::Pool& pool) {
  throw Error(Errc::pool_full, "pool '" + pool.name() +
                                   "' is full: the last DPTree merge did not fit, so new "
                                   "writes are refused (nothing was written); remove keys "
                                   "(then write or call merge()) or use a bigger pool");
}

void check_value(Value v, const char* tree) {
  if (v & kTombstone)
    throw Error(Errc::invalid_argument,
                std::string(tree) + " value " + std::to_string(v) +
                    " is out of range: the top bit is the tombstone bit (§2), use values up to "
                    "9223372036854775807 (2^63-1)");
}

}  // namespace dptree::detail
