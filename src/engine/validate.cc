// Open-time checks of a DPTree family pool (validate.h).
#include "engine/validate.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dptree/error.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/pool.h"
#include "engine/leaf_table.h"
#include "engine/parallel_chunks.h"
#include "format/dir_blocks.h"

namespace dptree::detail {

void throw_corrupt(const pm::Pool& pool, const char* tree, const std::string& what, u64 off,
                   const std::string& problem) {
  throw Error(Errc::corrupt, "pool '" + pool.name() + "': " + tree + " " + what + " at offset " +
                                 std::to_string(off) + " " + problem +
                                 ": the pool is damaged; restore it from a copy (`dptree check "
                                 "POOL` reports without writing)");
}

namespace {

void require_block_bytes(const pm::Pool& pool, u64 off, std::size_t size, std::size_t bytes,
                         const std::string& what) {
  if (size < bytes)
    throw Error(Errc::corrupt, "pool '" + pool.name() + "': " + what + " at offset " +
                                   std::to_string(off) + " is a block of " + std::to_string(size) +
                                   " bytes, not " + std::to_string(bytes) +
                                   ": the pool is damaged; restore it from a copy");
}

}  // namespace

void require_owned_block(const pm::Pool& pool, u64 off, u64 owner, std::size_t bytes,
                         const std::string& what) {
  const auto& a = pool.allocator();
  if (a.owner_of(off) != owner)
    throw Error(Errc::corrupt, "pool '" + pool.name() + "': " + what + " at offset " +
                                   std::to_string(off) + " is not a live block owned by the word " +
                                   "at offset " + std::to_string(owner) +
                                   ": the pool is damaged; restore it from a copy");
  require_block_bytes(pool, off, a.block_size(off), bytes, what);
}

namespace {

// A set of block offsets, one bit per 64 bytes of the pool: live blocks are 64-byte aligned
// (the heap starts on a 4 KiB boundary, blocks are 64 B and up), so an offset that is not, or
// lies past the pool, is in no set. At 2^27 records a hash set's node per leaf made the
// directory walk the larger part of an open; a bit costs one line at most. The words come
// from calloc: a set of a large pool is fresh zero pages, touched only where a bit is set,
// not a pass that clears tens of megabytes before the walk.
class BlockBits {
 public:
  explicit BlockBits(std::size_t pool_bytes)
      : n_(pool_bytes / 64), words_(static_cast<u64*>(std::calloc(n_ / 64 + 1, sizeof(u64)))) {
    if (!words_) throw std::bad_alloc();
  }
  // False when `off` was in already (or cannot be a block).
  bool insert(u64 off) {
    if (!fits(off) || contains(off)) return false;
    words_[off / 64 / 64] |= bit(off);
    return true;
  }
  // insert() for threads filling one set at once (the directory's chunks).
  void insert_shared(u64 off) {
    if (fits(off)) std::atomic_ref<u64>(words_[off / 64 / 64]).fetch_or(bit(off));
  }
  bool contains(u64 off) const { return fits(off) && (words_[off / 64 / 64] & bit(off)); }

 private:
  struct Free {
    void operator()(u64* p) const { std::free(p); }
  };
  static u64 bit(u64 off) { return u64{1} << (off / 64 % 64); }
  bool fits(u64 off) const { return off % 64 == 0 && off / 64 < n_; }
  std::size_t n_;
  std::unique_ptr<u64[], Free> words_;
};

class Validator {
 public:
  Validator(const TreeParts& t, const Root& root, const TreeShape& shape)
      : t_(t),
        pool_(t.pool),
        root_(root),
        shape_(shape),
        cv_(static_cast<int>(root.gv & kVersionBit)),
        leaves_(pool_.size()),
        pages_(pool_.size()),
        in_logs_(pool_.size()) {}

  // The current version's leaves in list order, as leaf_list() walked them.
  OpenedList run() {
    const u64 root_off = pool_.offset_of(&root_);
    if (root_.gv & ~shape_.gv_bits) fail("root's gv word", root_off, "has unknown bits set");
    directory();
    pending();
    const int cv = cv_;
    std::size_t leaves = leaf_list(cv);
    if (root_.base_count[cv] > leaves * t_.L.cap)
      fail("root's base count", root_off,
           "says " + std::to_string(root_.base_count[cv]) + " keys in " + std::to_string(leaves) +
               " leaves of " + std::to_string(t_.L.cap) + " slots");
    if (root_.base_count[1 - cv] > pool_.size())
      fail("root's base count of the other version", root_off, "is larger than the pool");
    old_leaf_list(1 - cv);
    for (u64 head : shape_.logs) log_chain(head);
    return std::move(list_);
  }

 private:
  [[noreturn]] void fail(const std::string& what, u64 off, const std::string& problem) const {
    throw_corrupt(pool_, shape_.tree, what, off, problem);
  }
  u64 word(u64 off) const { return *pool_.at<u64>(off); }
  u64 off_of(const void* w) const { return pool_.offset_of(w); }
  u64 next_off(u64 leaf, int v) const {
    return shape_.next_word ? shape_.next_word(leaf, v) : pool_.offset_of(&t_.leaf(leaf).next(v));
  }

  // Directory blocks, each owned by the word linking it; every slot's block owned by the slot
  // and a leaf or log page that names the slot as its owner.
  // The walk resolves each link checked (format/dir_blocks.h); the slots are then checked by
  // shape_.threads threads, since each reads a block of its own (one leaf each, millions at
  // 2^27 records); they note each leaf's words of the current version in table_.
  void directory() {
    std::vector<DirBlockPtr> blocks;
    walk_blocks(pool_, root_.dir, kDirList, [&](DirBlockPtr b, u64 link) {
      require_owned_block(pool_, b.off, link, kDirBlockBytes,
                          std::string(shape_.tree) + " owner directory block");
      dir_blocks_.insert(b.off);
      blocks.push_back(b);
    });
    table_ = std::make_unique<LeafTable>(blocks.size() * kDirSlots);
    first_leaf_.assign(blocks.size(), 0);
    std::atomic<std::size_t> leaves{0};
    std::mutex mu;
    std::map<std::size_t, std::vector<std::pair<u64, u64>>> pages;  // each chunk's, by first block
    for_chunks(blocks.size(), shape_.threads, [&](std::size_t lo, std::size_t hi) {
      std::size_t mine = 0;
      std::vector<std::pair<u64, u64>> pg;
      for (std::size_t i = lo; i < hi; ++i) mine += owned_slots(blocks[i], first_leaf_[i], pg);
      leaves += mine;
      std::lock_guard g(mu);
      pages[lo] = std::move(pg);
    });
    leaf_count_ = leaves;
    for (auto& [lo, pg] : pages) list_.pages.insert(list_.pages.end(), pg.begin(), pg.end());
  }

  // The slots of one directory block: their blocks' owners under one allocator lock, and the
  // header lines of the blocks requested before the first is read. Returns the leaves, and
  // the first of them in `first`; appends the log pages to `pages`.
  std::size_t owned_slots(DirBlockPtr b, u64& first, std::vector<std::pair<u64, u64>>& pages) {
    const DirBlock& d = *pool_.get(b);
    std::array<u64, kDirSlots> blk;
    std::array<pm::Allocator::Owned, kDirSlots> own;
    // The line of the current version's next, max key and restart counter (layout.h).
    const std::size_t meta = integer_leaves() ? t_.L.meta_p[cv_] + 8 * t_.L.bm_words : 0;
    for (std::size_t i = 0; i < kDirSlots; ++i) {
      blk[i] = d.slot[i].off;
      if (!blk[i] || blk[i] >= pool_.size()) continue;  // owned() refuses it
      __builtin_prefetch(pool_.base() + blk[i]);
      if (meta && pool_.size() - blk[i] > meta) {  // the slot's words are untrusted yet
        __builtin_prefetch(pool_.base() + blk[i] + meta);
        table_->prefetch(blk[i]);
      }
    }
    pool_.allocator().owners_of(blk, own);
    std::size_t leaves = 0;
    for (std::size_t i = 0; i < kDirSlots; ++i) {
      if (!blk[i]) continue;
      const u64 slot = dir_slot(b, i).off;
      if (!owned(slot, blk[i], own[i]))
        pages.emplace_back(slot, blk[i]);
      else if (!leaves++)
        first = blk[i];
    }
    return leaves;
  }

  // Whether the block is a leaf (else a log page); throws for anything else.
  bool owned(u64 slot, u64 blk, pm::Allocator::Owned own) {
    if (own.owner != slot)
      fail("owner directory slot", slot,
           "holds " + std::to_string(blk) + ", which is not a live block it owns");
    const u64 type = own.size >= 16 ? word(blk + 8) : 0;
    const bool leaf = type == shape_.leaf_type;
    const std::size_t need = !leaf               ? page_bytes()
                             : shape_.leaf_bytes ? shape_.leaf_bytes
                                                 : t_.L.bytes;
    if (!leaf && type != kPageType)
      fail("block owned by directory slot " + std::to_string(slot), blk,
           "is neither a leaf nor a log page (type word " + std::to_string(type) + ")");
    require_block_bytes(pool_, blk, own.size, need,
                        std::string(shape_.tree) + (leaf ? " leaf" : " log page"));
    if (word(blk) != slot)
      fail(leaf ? "leaf" : "log page", blk,
           "names owner slot " + std::to_string(word(blk)) + ", not " + std::to_string(slot));
    (leaf ? leaves_ : pages_).insert_shared(blk);
    if (leaf) note_leaf(blk);
    return leaf;
  }

  bool integer_leaves() const { return !shape_.next_word; }

  // The words leaf_list() and recovery's inner index read of a leaf (block size checked).
  void note_leaf(u64 blk) {
    LeafTable::Entry e{blk, word(next_off(blk, cv_)), 0, 0};
    if (integer_leaves()) {
      const Leaf lf = t_.leaf(blk);
      e.max = lf.max_key(cv_);
      e.rc = lf.rc(cv_);
    }
    table_->put(e);
  }

  // The bytes a page's records span (the page size rounded down to whole records).
  std::size_t page_bytes() const {
    const auto& G = t_.codec.G;
    return G.offset(G.per_page - 1) + G.words * 8;
  }

  bool is_dir_slot(u64 s) const {
    if (s % 8) return false;
    for (u64 b : dir_blocks_)
      if (s >= b + offsetof(DirBlock, slot) && s < b + sizeof(DirBlock)) return true;
    return false;
  }

  // pendingLeaves blocks, owned by their links; every entry a directory slot.
  void pending() {
    walk_blocks(pool_, root_.pending, kPendingList, [&](PendingBlockPtr b, u64 link) {
      require_owned_block(pool_, b.off, link, kPendingBlockBytes,
                          std::string(shape_.tree) + " pendingLeaves block");
      for (const OwnerSlotPtr& e : pool_.get(b)->slot)
        if (e && !is_dir_slot(e.off))
          fail("pendingLeaves entry", off_of(&e),
               "holds " + std::to_string(e.off) + ", which is not an owner directory slot");
    });
  }

  // The leaf list of the current version: owned leaves, no cycle, restart counts not ahead.
  // Its words come from table_ (the leaves' words as directory() read them). The integer
  // leaves' list is walked in stretches between the first leaves of the directory blocks
  // (leaf_table.h) when that proves it; else, or when it is damaged, one link after another.
  std::size_t leaf_list(int v) {
    const u64 head = word(pool_.offset_of(&root_.head[v]));
    if (!integer_leaves() ||
        !walk_in_stretches(*table_, head, marks(), leaf_count_, shape_.threads, list_.leaves))
      return walk_list(v);
    list_.max.reserve(list_.leaves.size());
    for (u64 l : list_.leaves) {
      const LeafTable::Entry* e = table_->find(l);  // the walk found it
      list_.max.push_back(e->max);
      check_rc(l, *e);
    }
    return list_.leaves.size();
  }

  // The first leaves of the directory blocks in list order, if their max keys tell it (the
  // list of a sound tree ascends by max key).
  std::vector<u64> marks() const {
    std::vector<std::pair<u64, u64>> m;  // max key, leaf
    for (u64 l : first_leaf_)
      if (l) m.emplace_back(table_->find(l)->max, l);
    std::sort(m.begin(), m.end());
    std::vector<u64> out;
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (i && m[i].first == m[i - 1].first) return {};  // no order: no marks
      out.push_back(m[i].second);
    }
    return out;
  }

  void check_rc(u64 l, const LeafTable::Entry& e) const {
    if (shape_.rc_mask && (e.rc & shape_.rc_mask) > root_.restart_count)
      fail("leaf", l, "has a restart count ahead of the root's");
  }

  // leaf_list() one link after another. Every leaf on the list is an owned one, so a list
  // longer than the owned leaves repeats one.
  std::size_t walk_list(int v) {
    list_.leaves.clear();
    std::size_t n = 0;
    list_.leaves.reserve(leaf_count_);
    if (integer_leaves()) list_.max.reserve(leaf_count_);
    u64 link = pool_.offset_of(&root_.head[v]);
    for (u64 l = word(link); l;) {
      const LeafTable::Entry* e = table_->find(l);  // exactly the leaves in leaves_
      if (!e)
        fail("leaf list of version " + std::to_string(v) + ": the word", link,
             "points to " + std::to_string(l) + ", which is not a leaf the directory owns");
      if (++n > leaf_count_) cycle(v);
      list_.leaves.push_back(l);
      if (integer_leaves()) list_.max.push_back(e->max);
      if (shape_.leaf_contents) shape_.leaf_contents(l, v);
      check_rc(l, *e);
      link = next_off(l, v);
      l = e->next;
    }
    return n;
  }

  // Names the leaf where version v's list, known to repeat an owned leaf, first comes back.
  [[noreturn]] void cycle(int v) const {
    BlockBits seen(pool_.size());
    u64 l = word(pool_.offset_of(&root_.head[v]));
    while (seen.insert(l)) l = word(next_off(l, v));
    fail("leaf list of version " + std::to_string(v), l, "has a cycle");
  }

  // The list of the other version, as garbage collection walks it after a crash (merge.cc
  // collect_garbage): up to the first leaf whose owner slot no longer holds it. Every leaf
  // before that must be owned; the first freed one must still name a directory slot.
  void old_leaf_list(int v) {
    if (root_.gv & kInMerge) return;  // recovery reclaims the merge: the list is not read
    if (!(root_.gv & kInGc) && !root_.pending) return;
    std::size_t n = 0;
    u64 link = pool_.offset_of(&root_.head[v]);
    for (u64 l = word(link); l; link = next_off(l, v), l = word(link)) {
      if (leaves_.contains(l)) {
        if (++n > leaf_count_) cycle(v);
        continue;
      }
      // A leaf freed by the interrupted collection: its header names its old slot, unless a
      // writer's log page took its block since (the walk stops there too, merge.cc).
      if (l % 8 || l < 64 || l > pool_.size() - 16 ||
          (word(l + 8) == shape_.leaf_type && (!is_dir_slot(word(l)) || word(word(l)) == l)))
        fail("leaf list of version " + std::to_string(v) + ": the word", link,
             "points to " + std::to_string(l) + ", which is neither an owned leaf nor a freed one");
      return;
    }
  }

  // A log page chain linked through each page's next word: owned pages, no page in two places.
  void log_chain(u64 head) {
    u64 link = head;
    for (u64 pg = word(link); pg; link = pg + offsetof(LogPageHeader, next), pg = word(link)) {
      if (!pages_.contains(pg))
        fail("log: the word", link,
             "points to " + std::to_string(pg) + ", which is not a log page the directory owns");
      if (!in_logs_.insert(pg)) fail("log page", pg, "is in two logs, or twice in one");
    }
  }

  const TreeParts& t_;
  const pm::Pool& pool_;
  const Root& root_;
  const TreeShape& shape_;
  const int cv_;  // the current version
  std::unordered_set<u64> dir_blocks_;
  BlockBits leaves_, pages_, in_logs_;
  std::unique_ptr<LeafTable> table_;
  std::vector<u64> first_leaf_;  // of each directory block (0: none)
  std::size_t leaf_count_ = 0;
  OpenedList list_;
};

}  // namespace

OpenedList validate_on_open(const TreeParts& t, const Root& root, const TreeShape& shape) {
  return Validator(t, root, shape).run();
}

}  // namespace dptree::detail
