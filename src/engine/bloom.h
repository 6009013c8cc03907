// The bloom filter over the buffer's keys (§2.1; §3.1 for the concurrent tree): a lookup
// whose key it rules out skips the buffer tree.
//
// Cache-line blocked: all k bits of a key lie in one 64-byte block chosen by the key's hash,
// so a lookup costs one cache miss (a classic filter costs up to k, one per bit) and can be
// prefetched while the base tree's inner index is searched. At equal size a blocked filter
// errs a little more often; it is given 1.25x the classic filter's bits to make up for it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "format/layout.h"

namespace dptree::detail {

// Size, hash count and bit positions, shared by the plain and the atomic filter.
class BloomShape {
 public:
  static constexpr std::size_t kWordsPerBlock = 8;  // 512 bits, one cache line

  BloomShape() = default;
  BloomShape(std::size_t expected, double error_rate) {
    expected = std::max<std::size_t>(expected, 64);
    // Classic sizing m = -n ln p / (ln 2)^2 and k = m/n ln 2, then 1.25x the bits.
    const double m = -static_cast<double>(expected) * std::log(error_rate) / 0.4804530139182014;
    k_ = std::clamp(static_cast<int>(m / static_cast<double>(expected) * 0.6931471805599453 + 0.5),
                    1, 16);
    blocks_ = static_cast<std::size_t>(m * 1.25 / 512) + 1;
  }
  std::size_t words() const { return blocks_ * kWordsPerBlock; }
  // First word of the block of a key whose hash_key() is h.
  std::size_t block_word(u64 h) const {
    __extension__ typedef unsigned __int128 u128;  // the high half of h * blocks: no division
    return static_cast<std::size_t>((static_cast<u128>(h) * blocks_) >> 64) * kWordsPerBlock;
  }
  // Whether has(word offset, bit mask) holds for each of the k bits of hash h, stopping at the
  // first that does not: most lookups miss the buffer, and about half of a filter's bits are
  // clear, so a miss reads about two bits instead of k.
  template <class F>
  bool all_bits(u64 h, F&& has) const {
    const u64 h2 = hash_key(h ^ 0x9e3779b97f4a7c15ull);
    const unsigned a = static_cast<unsigned>(h2), b = static_cast<unsigned>(h2 >> 32) | 1u;
    for (int i = 0; i < k_; ++i) {
      const unsigned bit = (a + static_cast<unsigned>(i) * b) & 511u;
      if (!has(bit / 64, u64{1} << (bit % 64))) return false;
    }
    return true;
  }
  // Calls f(word offset within the block, bit mask) for each of the k bits of hash h.
  template <class F>
  void for_each_bit(u64 h, F&& f) const {
    all_bits(h, [&](std::size_t w, u64 m) {
      f(w, m);
      return true;
    });
  }

 private:
  std::size_t blocks_ = 0;
  int k_ = 1;
};

// Single-threaded filter (DPTree's buffer, §2.1).
class Bloom {
 public:
  void reset(std::size_t expected, double error_rate) {
    shape_ = BloomShape(expected, error_rate);
    bits_.assign(shape_.words(), 0);
  }
  void add(u64 key) { add_hashed(hash_key(key)); }
  // `h` is the key's hash (hash_key, or hash_string for the string form).
  void add_hashed(u64 h) {
    u64* blk = bits_.data() + shape_.block_word(h);
    shape_.for_each_bit(h, [&](std::size_t w, u64 m) { blk[w] |= m; });
  }
  // `h` is hash_key(key): lookups hash once for the filter and the leaf probe.
  bool may_contain_hashed(u64 h) const {
    if (bits_.empty()) return false;
    const u64* blk = bits_.data() + shape_.block_word(h);
    return shape_.all_bits(h, [&](std::size_t w, u64 m) { return (blk[w] & m) != 0; });
  }
  bool may_contain(u64 key) const { return may_contain_hashed(hash_key(key)); }
  void prefetch(u64 h) const {
    if (!bits_.empty()) __builtin_prefetch(bits_.data() + shape_.block_word(h));
  }
  std::size_t dram_bytes() const { return bits_.size() * 8; }

 private:
  BloomShape shape_;
  std::vector<u64> bits_;
};

// Zeroed words for a filter. The writer that makes a new Front (Algorithm 7 line 9) must not
// clear tens of megabytes inside its insert (at 2^27 records a filter for twice the merge
// trigger is about 31 MB): a filter of kMappedWordsBytes or more is a mapping of its own,
// fresh zero pages that the adds then touch. calloc gave that only for the first such filter:
// once glibc has freed a mapped block it raises its mapping threshold to that size, and the
// next one came from the heap, cleared by memset (17 ms for 31 MB in a test program; the
// hand-over took 0.34-0.44 ms in most merges of a 2^26-record preload, 0.02-0.13 ms mapped).
// Smaller filters come from calloc. Both are declared here and made in bloom.cc.
inline constexpr std::size_t kMappedWordsBytes = std::size_t{256} << 10;
struct FreeWords {
  std::size_t bytes = 0;  // of a mapping; 0: calloc's
  void operator()(u64* p) const;
};
std::unique_ptr<u64, FreeWords> zeroed_words(std::size_t n);

// The whole pages inside bytes [from, from + bytes) of `words` (n words) handed back to the
// system (they read as zero afterwards); returns the end of the range. Declared here, made in
// bloom.cc.
std::size_t drop_word_pages(u64* words, std::size_t n, std::size_t from, std::size_t bytes);

// Whether block `blk` of an atomic filter holds every bit of hash h, each word read with
// acquire, so that whoever set a bit happens before the reader that sees it. The words are only
// read (atomic_ref needs a non-const word).
inline bool has_all_acquire(const BloomShape& shape, u64* blk, u64 h) {
  return shape.all_bits(h, [&](std::size_t w, u64 m) {
    return (std::atomic_ref<u64>(blk[w]).load(std::memory_order_acquire) & m) != 0;
  });
}

// Filter with atomic words: adds from any writer, lookups from any reader (§3.1).
class ConcurrentBloom {
 public:
  ConcurrentBloom(std::size_t expected, double error_rate)
      : shape_(expected, error_rate), bits_(zeroed_words(shape_.words())) {}
  void add(u64 key) { add_hashed(hash_key(key)); }
  bool may_contain(u64 key) const { return may_contain_hashed(hash_key(key)); }
  // A key hashed by the caller (the string form: hash_string).
  // One locked OR per word that lacks a bit, not one per bit: each locked OR is a full
  // barrier, and a key's k bits share few of the block's 8 words. A word that has them all
  // is read with acquire, so whoever set them happens before this add's caller returns.
  void add_hashed(u64 h) {
    u64* blk = bits_.get() + shape_.block_word(h);
    u64 mask[BloomShape::kWordsPerBlock] = {};
    shape_.for_each_bit(h, [&](std::size_t w, u64 m) { mask[w] |= m; });
    for (std::size_t w = 0; w < BloomShape::kWordsPerBlock; ++w) {
      std::atomic_ref<u64> word(blk[w]);
      if ((word.load(std::memory_order_acquire) & mask[w]) != mask[w])
        word.fetch_or(mask[w], std::memory_order_release);
    }
  }
  // Requested for writing: an add's locked OR then does not wait for the line.
  void prefetch_for_add(u64 h) const { __builtin_prefetch(bits_.get() + shape_.block_word(h), 1); }
  bool may_contain_hashed(u64 h) const {
    return has_all_acquire(shape_, bits_.get() + shape_.block_word(h), h);
  }
  std::size_t dram_bytes() const { return shape_.words() * 8; }
  // A filter no one reads any more (a retired buffer's) hands back the pages of up to `bytes`
  // more of its words; returns whether any are left. The free that follows then unmaps
  // little, so a merge in steps spreads the cost of giving back tens of megabytes.
  bool drop_pages(std::size_t bytes) {
    dropped_ = drop_word_pages(bits_.get(), shape_.words(), dropped_, bytes);
    return dropped_ < shape_.words() * 8;
  }

 private:
  BloomShape shape_;
  std::unique_ptr<u64, FreeWords> bits_;
  std::size_t dropped_ = 0;  // bytes from the start whose pages were handed back
};

// A filter in `shards` parts, each over blocks of its own and written only by a holder of its
// shard's lock (the concurrent string buffer's shards, §3.1): an add is plain stores, where
// ConcurrentBloom's locked OR is a full barrier, which after a log append waits for the
// record's write-back and for the filter's line. Lookups from any reader, without the lock.
class ShardedBloom {
 public:
  ShardedBloom(std::size_t shards, std::size_t expected, double error_rate)
      : shards_(std::max<std::size_t>(shards, 1)),
        shape_(expected / shards_ + 1, error_rate),
        bits_(zeroed_words(shards_ * shape_.words())) {}
  // Shard s's add of a key hashed by the caller: s's lock held exclusively.
  void add_hashed(std::size_t s, u64 h) {
    u64* blk = block(s, h);
    shape_.for_each_bit(h, [&](std::size_t w, u64 m) {
      std::atomic_ref<u64> word(blk[w]);
      word.store(word.load(std::memory_order_relaxed) | m, std::memory_order_release);
    });
  }
  void prefetch_for_add(std::size_t s, u64 h) const { __builtin_prefetch(block(s, h), 1); }
  bool may_contain_hashed(std::size_t s, u64 h) const {
    return has_all_acquire(shape_, block(s, h), h);
  }
  std::size_t dram_bytes() const { return shards_ * shape_.words() * 8; }

 private:
  u64* block(std::size_t s, u64 h) const {
    return bits_.get() + s * shape_.words() + shape_.block_word(h);
  }
  std::size_t shards_;
  BloomShape shape_;
  std::unique_ptr<u64, FreeWords> bits_;
};

}  // namespace dptree::detail
