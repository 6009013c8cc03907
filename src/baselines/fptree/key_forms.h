// What FPTree's two forms store in a slot's key word (layout.h), behind one interface the tree
// (tree.h) is written against:
//  - IntKeys: the 8-byte key itself.
//  - StringKeys: a key blob word, `offset | class`: a slot of 16 << class bytes in one of the
//    blob arenas (slab/slab_arena.h) holding the key's length (8 bytes) and then its bytes
//    (the paper's variable-size keys: the leaf keeps a fingerprint and a pointer to the key).
//    A blob is written and flushed before the slot that names it is published by the bitmap
//    store; which blob slots are used is volatile, rebuilt on open from the blobs the valid
//    slots and the leaves' low keys reach, so a blob no valid slot reaches after a crash is
//    free again and a published slot always has its key.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "baselines/fptree/layout.h"
#include "baselines/slab/slab_arena.h"
#include "baselines/slab/version_lock.h"
#include "dptree/index.h"
#include "dptree/pm/pool.h"

namespace dptree::baselines::fptree {

class IntKeys {
 public:
  using Arg = Key;
  using Stored = Key;  // the inner nodes' separators
  static constexpr u64 kForm = kFormInts;
  static constexpr const char* kName = "integer";

  IntKeys(pm::Pool&, Root*, bool) {}
  static std::uint8_t fingerprint(Key k) {
    return static_cast<std::uint8_t>((k * 0x9E3779B97F4A7C15ull) >> 56);
  }
  static Key view(u64 word) { return word; }
  static u64 make(Key k) { return k; }  // the key word of a new key
  static void drop(u64) {}              // a key word no valid slot names any more
  static std::string show(Key k) { return std::to_string(k); }

  // Recovery: open, validate every word a leaf holds, mark those reached, finish.
  static void open() {}
  static void validate(u64, bool, const std::function<void(const std::string&)>&) {}
  static bool mark(u64) { return true; }
  static void finish() {}

  static std::size_t pm_bytes() { return 0; }
  static void for_each_block(const std::function<void(u64)>&) {}
  static void check(const std::vector<u64>&, CheckReport&) {}
};

class StringKeys {
 public:
  using Arg = std::string_view;
  using Stored = std::string;
  static constexpr u64 kForm = kFormStrings;
  static constexpr const char* kName = "string";
  static constexpr std::size_t kMaxKeyBytes = 1024;

  StringKeys(pm::Pool& pool, Root* root, bool shared);
  static std::uint8_t fingerprint(std::string_view k);
  std::string_view view(u64 word) const;  // word 0: the empty key (the first leaf's low key)
  u64 make(std::string_view k);           // a new blob, written and flushed
  void drop(u64 word);
  static std::string show(std::string_view k);

  void open();
  // Throws through `corrupt` unless `word` names a blob slot whose length fits the slot;
  // 0 passes where `empty_ok` (a low key).
  void validate(u64 word, bool empty_ok,
                const std::function<void(const std::string&)>& corrupt) const;
  bool mark(u64 word);  // false: not a blob, or reached before
  void finish();

  std::size_t pm_bytes() const;
  void for_each_block(const std::function<void(u64)>& fn) const;
  // `reached`: every blob word the leaves name; each must be a used blob, reached once, and
  // every used blob reached.
  void check(const std::vector<u64>& reached, CheckReport& r) const;

 private:
  static constexpr u64 kClassMask = 15;
  static std::size_t slot_bytes(u64 c) { return std::size_t{16} << c; }
  const SlabArena* arena_of(u64 word) const;
  bool length_fits(u64 word) const;  // for a word arena_of() takes

  pm::Pool& pool_;
  std::array<std::unique_ptr<SlabArena>, kBlobClasses> arenas_;
  mutable Switchable<std::mutex> mu_;  // the arenas' volatile free lists
};

}  // namespace dptree::baselines::fptree
