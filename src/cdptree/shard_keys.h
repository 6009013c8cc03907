// The keys of the concurrent string form's buffer shards (string_buffer.h). A buffered key is
// a ShardKey: its 8-byte big-endian prefix and its bytes, which live in its shard's KeyArena.
// A node of the shard's tree then holds trivially copyable 24-byte keys whose prefixes decide
// most comparisons without reading the bytes, and a buffer's keys are freed with its arenas,
// a few chunks, not one heap block per key: the merge that retires a Middle frees it on
// another thread than the writers that made its keys, and with a heap block per key, glibc's
// per-thread arenas made the two threads' mallocs and frees meet on the writers' arena locks
// (docs/cdptree.md, "Buffer").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "format/string_leaf.h"

namespace dptree::cdp {

struct ShardKey {
  std::uint64_t prefix = 0;  // format/string_leaf.h key_prefix
  const char* bytes = nullptr;
  std::uint32_t size = 0;

  // A key that names `k`'s bytes, for a search (valid while k is).
  static ShardKey of(std::string_view k) {
    return {detail::key_prefix(k), k.data(), static_cast<std::uint32_t>(k.size())};
  }
  std::string_view view() const { return {bytes, size}; }
};

// Its bytes (engine/string_base.h checked_buffer_entries reads keys so).
inline std::string_view key_view(const ShardKey& k) {
  return k.view();
}

// StringKeyLess's order (prefix, then the bytes) over ShardKeys.
struct ShardKeyLess {
  bool operator()(const ShardKey& a, const ShardKey& b) const {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    return a.view() < b.view();
  }
};

// The bytes of one shard's keys, in chunks that grow from 4 KiB to 64 KiB (a shard of a small
// buffer takes little); used under the shard's lock, freed all at once with the buffer.
class KeyArena {
 public:
  // A ShardKey holding a copy of q's bytes here.
  ShardKey keep(const ShardKey& q) {
    char* p = take(q.size);
    std::memcpy(p, q.bytes, q.size);
    return {q.prefix, p, q.size};
  }
  std::size_t bytes() const { return held_; }

 private:
  static constexpr std::size_t kFirstChunk = 4096, kLastChunk = 64 << 10;
  char* take(std::size_t n) {
    if (left_ < n) {
      const std::size_t grow =
          std::min(kLastChunk, kFirstChunk << std::min<std::size_t>(chunks_.size(), 4));
      const std::size_t c = std::max(n, grow);
      chunks_.emplace_back(new char[c]);  // not zeroed: every byte handed out is written
      next_ = chunks_.back().get();
      left_ = c;
      held_ += c;
    }
    char* p = next_;
    next_ += n;
    left_ -= n;
    return p;
  }
  std::vector<std::unique_ptr<char[]>> chunks_;
  char* next_ = nullptr;
  std::size_t left_ = 0, held_ = 0;
};

}  // namespace dptree::cdp
