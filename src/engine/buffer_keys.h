// The keys of the string forms' buffer trees (DPTree's buffer, the concurrent form's shards).
// A buffered key is a BufferKey: its 8-byte big-endian prefix and its bytes, which live in the
// tree's KeyArena. A node of the tree then holds trivially copyable 24-byte keys whose prefixes
// decide most comparisons without reading the bytes, and a buffer's keys are freed with its
// arena, a few chunks, not one heap block per key: a merge that retires a buffer frees it all
// at once (the concurrent form's on another thread than the writers that made its keys, where
// glibc's per-thread arenas made the two threads' mallocs and frees meet on the writers' arena
// locks; docs/cdptree.md, "Buffer").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "format/string_leaf.h"

namespace dptree::detail {

struct BufferKey {
  std::uint64_t prefix = 0;  // format/string_leaf.h key_prefix
  const char* bytes = nullptr;
  std::uint32_t size = 0;

  // A key that names `k`'s bytes, for a search (valid while k is).
  static BufferKey of(std::string_view k) {
    return {key_prefix(k), k.data(), static_cast<std::uint32_t>(k.size())};
  }
  std::string_view view() const { return {bytes, size}; }
};

// Its bytes (engine/string_base.h checked_buffer_entries reads keys so).
inline std::string_view key_view(const BufferKey& k) {
  return k.view();
}

// StringKeyLess's order (prefix, then the bytes) over BufferKeys.
struct BufferKeyLess {
  bool operator()(const BufferKey& a, const BufferKey& b) const {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    return a.view() < b.view();
  }
};

// The bytes of one buffer tree's keys, in chunks that grow from 4 KiB to 64 KiB (a shard of a
// small buffer takes little); used under the tree's lock (a shard's, in the concurrent form),
// freed all at once with the buffer.
class KeyArena {
 public:
  // A BufferKey holding a copy of q's bytes here.
  BufferKey keep(const BufferKey& q) {
    char* p = take(q.size);
    std::memcpy(p, q.bytes, q.size);
    return {q.prefix, p, q.size};
  }
  std::size_t bytes() const { return held_; }
  // Every key handed out is gone (the tree that named them is cleared first).
  void clear() {
    chunks_.clear();
    next_ = nullptr;
    left_ = held_ = 0;
  }

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

}  // namespace dptree::detail
