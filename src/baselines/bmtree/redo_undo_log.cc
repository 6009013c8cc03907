// bm-btree's redo/undo log (redo_undo_log.h): appending records, commit, forcing the log to
// PM and truncating it.
#include "baselines/bmtree/redo_undo_log.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"

namespace dptree::baselines::bmtree {
namespace {

enum Type : std::uint32_t { kUpdate = 1, kFormat = 2, kCommit = 3 };

struct RecordHeader {
  std::uint32_t type;
  std::uint32_t len;   // image bytes
  std::uint64_t page;  // pool offset of the page (commit: 0)
  std::uint32_t off;   // offset inside the page
  std::uint32_t pad;
};
static_assert(sizeof(RecordHeader) == RedoUndoLog::kRecordHeader);

}  // namespace

void RedoUndoLog::format(pm::Pool& pool, std::uint64_t block) {
  auto* tail = pool.at<std::uint64_t>(block);
  pm::store(tail, 0);
  pm::flush(tail, 8);
}

RedoUndoLog::RedoUndoLog(pm::Pool& pool, std::uint64_t block)
    : pool_(pool), block_(block), base_(pool.at(block)) {
  const std::size_t bytes = pool.allocator().block_size(block);
  capacity_ = bytes > kHeaderBytes ? bytes - kHeaderBytes : 0;
  const std::uint64_t tail = *tail_word();
  if (tail > capacity_ || tail % 8)
    throw Error(Errc::corrupt, "bm-btree in " + pool.name() + ": log tail " + std::to_string(tail) +
                                   " does not fit its " + std::to_string(capacity_) +
                                   "-byte log: the pool is damaged; restore it from a copy");
  end_ = durable_ = tail;
}

void RedoUndoLog::append(std::uint32_t type, std::uint64_t page, std::uint32_t off,
                         const void* before, const void* after, std::uint32_t len) {
  const std::size_t images = (before ? pad8(len) : 0) + (after ? pad8(len) : 0);
  if (end_ + kRecordHeader + images > capacity_)  // the operation's reservation prevents it
    throw std::logic_error("bm-btree: a log record does not fit the room reserved for it");
  RecordHeader h{type, len, page, off, 0};
  std::byte* p = area() + end_;
  pm::CategoryScope cat(pm::Category::log);
  pm::store_bytes(p, &h, sizeof h);
  p += sizeof h;
  if (before) {
    pm::store_bytes(p, before, len);
    p += pad8(len);
  }
  if (after) pm::store_bytes(p, after, len);
  end_ += kRecordHeader + images;
  open_op_ = type != kCommit;
}

void RedoUndoLog::append_update(std::uint64_t page, std::uint32_t off, const void* before,
                                const void* after, std::uint32_t len) {
  append(kUpdate, page, off, before, after, len);
}

void RedoUndoLog::append_format(std::uint64_t page, std::uint32_t off, const void* after,
                                std::uint32_t len) {
  append(kFormat, page, off, nullptr, after, len);
}

void RedoUndoLog::commit() {
  if (!open_op_) return;
  append(kCommit, 0, 0, nullptr, nullptr, 0);
  force();
}

void RedoUndoLog::force() {
  if (!pending()) return;
  pm::CategoryScope cat(pm::Category::log);
  pm::flush(area() + durable_, end_ - durable_);
  pm::fence();  // the records before the tail that covers them
  pm::store(tail_word(), end_);
  pm::persist(tail_word(), 8);
  durable_ = end_;
}

void RedoUndoLog::truncate() {
  pm::CategoryScope cat(pm::Category::log);
  pm::store(tail_word(), 0);
  pm::persist(tail_word(), 8);
  end_ = durable_ = 0;
  open_op_ = false;
}

RedoUndoLog::Replayed RedoUndoLog::replay(
    const std::function<bool(std::uint64_t, std::uint32_t, std::uint32_t)>& valid) {
  struct Rec {
    RecordHeader h;
    const std::byte* before;
    const std::byte* after;
  };
  std::vector<Rec> recs;
  std::size_t last_commit = 0;  // records before this index belong to committed operations
  for (std::size_t at = 0; at < durable_;) {
    auto bad = [&](const std::string& why) {
      return Error(Errc::corrupt, "bm-btree in " + pool_.name() + ": log record at byte " +
                                      std::to_string(at) + " " + why +
                                      ": the pool is damaged; restore it from a copy");
    };
    if (durable_ - at < kRecordHeader) throw bad("is cut short");
    Rec r{};
    std::memcpy(&r.h, area() + at, sizeof r.h);
    if (r.h.type < kUpdate || r.h.type > kCommit) throw bad("has an unknown type");
    const std::size_t images = (r.h.type == kUpdate ? 2 : r.h.type == kFormat ? 1 : 0);
    const std::size_t size = kRecordHeader + images * pad8(r.h.len);
    if (size > durable_ - at) throw bad("runs past the log's tail");
    if (r.h.type != kCommit && !valid(r.h.page, r.h.off, r.h.len))
      throw bad("names no page of the index");
    const std::byte* img = area() + at + kRecordHeader;
    r.before = r.h.type == kUpdate ? img : nullptr;
    r.after = r.h.type == kUpdate ? img + pad8(r.h.len) : img;
    recs.push_back(r);
    if (r.h.type == kCommit) last_commit = recs.size();
    at += size;
  }
  Replayed out;
  pm::CategoryScope cat(pm::Category::node);
  for (const Rec& r : recs) {
    if (r.h.type == kCommit) continue;
    std::byte* dst = pool_.at(r.h.page) + r.h.off;
    pm::store_bytes(dst, r.after, r.h.len);
    pm::flush(dst, r.h.len);
    ++out.redone;
  }
  for (std::size_t i = recs.size(); i-- > last_commit;) {
    const Rec& r = recs[i];
    if (!r.before) continue;  // a page formatted by the interrupted operation: unreachable
    std::byte* dst = pool_.at(r.h.page) + r.h.off;
    pm::store_bytes(dst, r.before, r.h.len);
    pm::flush(dst, r.h.len);
    ++out.undone;
  }
  pm::fence();
  return out;
}

}  // namespace dptree::baselines::bmtree
