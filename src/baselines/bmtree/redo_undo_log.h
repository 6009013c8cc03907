// The physiological redo/undo log of bm-btree, in one PM block (docs/bm-btree.md, the crash
// protocol). A record names a page (its pool offset), an offset inside it, and the bytes there
// before and after the change; a format record (a page written whole for the first time) has
// no before image; a commit record ends an operation.
//
// Line 0 of the block holds `tail`: the bytes of records that are durable. Records are
// appended past it with pm::store_bytes and become durable only in force(): flush them, fence,
// store the new tail, flush, fence. Recovery reads nothing past the tail, so a torn record
// (8-byte or 64-byte units) is never seen. An operation is acknowledged when the force of its
// commit record returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace dptree::pm {
class Pool;
}

namespace dptree::baselines::bmtree {

class RedoUndoLog {
 public:
  static constexpr std::size_t kHeaderBytes = 64;
  static constexpr std::size_t kRecordHeader = 24;
  // Bytes an update record of `len` image bytes takes in the log.
  static std::size_t update_bytes(std::size_t len) { return kRecordHeader + 2 * pad8(len); }

  // Formats a fresh block of `block_bytes` at `block` (tail = 0, flushed, not fenced: the
  // caller's activate fences it).
  static void format(pm::Pool& pool, std::uint64_t block);
  // Opens the log in `block`; throws Error(corrupt) when its tail is impossible.
  RedoUndoLog(pm::Pool& pool, std::uint64_t block);

  std::uint64_t block() const { return block_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t used() const { return end_; }
  std::size_t room() const { return capacity_ - end_; }
  bool pending() const { return end_ > durable_; }
  bool empty() const { return end_ == 0; }

  void append_update(std::uint64_t page, std::uint32_t off, const void* before, const void* after,
                     std::uint32_t len);
  void append_format(std::uint64_t page, std::uint32_t off, const void* after, std::uint32_t len);
  // Ends the operation: a commit record, then force(). Returns at once when the operation
  // appended nothing.
  void commit();
  // Write-ahead rule: every appended record becomes durable (before a changed line reaches PM).
  void force();
  // After a checkpoint: tail = 0, persisted.
  void truncate();

  // Recovery: applies the after image of every durable record in log order, then the before
  // image of those after the last commit record in reverse order (the operation a crash
  // interrupted), flushes what it wrote and fences. `valid(page, off, len)` says whether a
  // record's target lies inside a page of the index; any record it refuses, or that does not
  // fit the log, throws Error(corrupt) before anything is written. Idempotent: a crash inside
  // it leaves the log as it was, and the next replay ends in the same state.
  struct Replayed {
    std::size_t redone = 0, undone = 0;
  };
  Replayed replay(const std::function<bool(std::uint64_t, std::uint32_t, std::uint32_t)>& valid);

 private:
  static std::size_t pad8(std::size_t n) { return (n + 7) & ~std::size_t{7}; }
  void append(std::uint32_t type, std::uint64_t page, std::uint32_t off, const void* before,
              const void* after, std::uint32_t len);
  std::byte* area() const { return base_ + kHeaderBytes; }
  std::uint64_t* tail_word() const { return reinterpret_cast<std::uint64_t*>(base_); }

  pm::Pool& pool_;
  std::uint64_t block_;
  std::byte* base_;
  std::size_t capacity_ = 0;
  std::size_t end_ = 0;      // appended
  std::size_t durable_ = 0;  // covered by the tail
  bool open_op_ = false;     // records appended since the last commit
};

}  // namespace dptree::baselines::bmtree
