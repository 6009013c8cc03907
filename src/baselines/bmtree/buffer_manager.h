// The DRAM buffer of bm-btree's PM pages, after "Managing Non-Volatile Memory in Database
// Systems" (van Renen et al., SIGMOD 2018), two-tier (DRAM over PM, no SSD): see
// docs/bm-btree.md.
//
// A frame caches one page. Cache-line-grained pages: a frame loads only the 64-byte lines it
// touches (a resident bit per line) and remembers which it changed (a dirty bit per line);
// eviction and checkpoints write back only the dirty lines (flush each, one fence). Every
// change goes through write(), which appends the change's log record before it changes the
// frame; before a dirty line leaves for PM the log is forced (the write-ahead rule), so a line
// of an operation still in flight can reach PM (steal) and recovery undoes it.
//
// Pointer swizzling: a cached inner page keeps, beside its bytes, the frame of each child
// reached through it (Frame::kids), so a descent follows frame pointers instead of looking
// pages up; an evicted child clears its entry, a changed inner page clears all of its. The
// page bytes, and so the log and the write-backs, never hold a DRAM address.
//
// Mini pages: a leaf is first cached in a frame of kMiniLines lines (a table says which line
// is where); it becomes a full frame when it needs one line more, or a read or write that
// spans lines (a split, a sorted leaf's shift, a scan).
//
// Inner pages stay cached once loaded; leaf frames are limited to a budget (the share of
// leaves that fits in DRAM, in lines: a mini page takes kMiniLines) and evicted by a clock. A
// pinned frame is never evicted; a page the caller pins beyond the budget (a split holds two
// leaves) is evicted when unpinned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace dptree::pm {
class Pool;
}

namespace dptree::baselines::bmtree {

class RedoUndoLog;

struct Frame {
  std::uint64_t page = 0;  // pool offset of the page
  bool leaf = false;
  bool ref = false;  // the clock's second chance
  unsigned pins = 0;
  std::vector<std::uint64_t> resident, dirty;  // one bit per line
  std::unique_ptr<std::uint64_t[]> data;       // a full frame: the page's bytes
  // A mini page: up to kMiniLines lines of the page, line l in slot mini_slot[l] - 1.
  bool mini = false;
  std::uint32_t mini_used = 0;
  std::vector<std::uint8_t> mini_slot;
  std::unique_ptr<std::uint64_t[]> mini_data;
  // Pointer swizzling: kids[i] is the frame of child i of this (inner) page while that child
  // is cached and has been reached through here; parent / parent_slot point back at the entry.
  std::vector<Frame*> kids;
  Frame* parent = nullptr;
  std::uint32_t parent_slot = 0;
  std::byte* bytes() { return reinterpret_cast<std::byte*>(data.get()); }
  std::byte* mini_bytes() { return reinterpret_cast<std::byte*>(mini_data.get()); }
  // Where resident line l is held.
  std::byte* line(std::size_t l) {
    return mini ? mini_bytes() + (mini_slot[l] - 1) * 64 : bytes() + l * 64;
  }
};

struct BufferStats {
  std::uint64_t evictions = 0, lines_loaded = 0, lines_written = 0, steals = 0, checkpoints = 0;
  std::uint64_t swizzle_hits = 0;  // children reached through a swizzled pointer
  std::uint64_t promotions = 0;    // mini pages that needed a full frame
};

class BufferManager {
 public:
  static constexpr std::uint32_t kMiniLines = 16;

  // `mini_pages`: a leaf is first cached as a mini page (used only when a page has at least
  // 2 * kMiniLines lines).
  BufferManager(pm::Pool& pool, std::size_t page_bytes, bool mini_pages);

  void set_log(RedoUndoLog* log) { log_ = log; }
  // DRAM for n leaf pages (at least 1): n full frames, or kMiniLines-line mini pages in
  // their place (lines_ / kMiniLines of them per page).
  void set_leaf_budget(std::size_t n);
  std::size_t leaf_budget() const { return budget_; }

  // Pins `page` (a frame is made if it has none; line 0, the header, is loaded). `leaf` says
  // which kind of page it is, for the budget.
  Frame& fix(std::uint64_t page, bool leaf);
  // Pins child `slot` of the inner page `parent` (pinned), whose entry holds `page`: through
  // the swizzled frame pointer when there is one, else by fix() and then swizzled.
  Frame& fix_child(Frame& parent, std::uint32_t slot, std::uint64_t page, bool leaf);
  // Pins a frame for a page not yet written (no line resident: format() fills it).
  Frame& fix_new(std::uint64_t page, bool leaf);
  void unfix(Frame& f);

  // The bytes [off, off + len) of f's page in its frame (loads the lines it lacks). Inline
  // for the common case, one line already resident: every read of the tree comes here.
  const std::byte* read(Frame& f, std::uint32_t off, std::uint32_t len) {
    const std::uint32_t line = off / 64;
    if (line == (off + len - 1) / 64 && ((f.resident[line / 64] >> (line % 64)) & 1))
      return f.line(line) + off % 64;
    return read_slow(f, off, len);
  }
  // Logs the change (before and after images), then makes it in the frame.
  void write(Frame& f, std::uint32_t off, const void* src, std::uint32_t len);
  // Rewrites the whole page as `image` in a few records: one per run of changed lines.
  void rewrite(Frame& f, const std::byte* image);
  // Fills the lines `lines` marks of a page from fix_new with `image` and logs them as format
  // records. The other lines stay as PM holds them (not resident): the page's format never
  // reads them, and frame and PM agree on them across a crash.
  void format(Frame& f, const std::byte* image, const std::vector<bool>& lines);
  // The page of f turned from a leaf into an inner page (the root's first split).
  void set_leaf(Frame& f, bool leaf);

  // Writes back every dirty line (one fence for all); the caller then truncates the log.
  void write_back_all();
  // A copy of `page` as the index sees it (frame lines where resident, else PM); no loading.
  void peek(std::uint64_t page, std::byte* out) const;

  std::size_t frames() const { return map_.size(); }
  std::size_t leaf_frames() const { return leaf_frames_; }
  std::size_t mini_frames() const;
  std::size_t page_bytes() const { return page_bytes_; }
  const BufferStats& stats() const { return stats_; }
  BufferStats& stats() { return stats_; }
  struct Swizzle {
    std::uint64_t parent;
    std::uint32_t slot;
    std::uint64_t child;
  };
  // Every swizzled child pointer, for check() to compare with the parent's bytes.
  std::vector<Swizzle> swizzles() const;
  // Problems of the frames' own invariants (check()).
  std::vector<std::string> problems() const;

 private:
  const std::byte* read_slow(Frame& f, std::uint32_t off, std::uint32_t len);
  const std::byte* load_into_mini(Frame& f, std::size_t line);
  void promote(Frame& f);  // a mini page becomes a full frame
  std::size_t units(const Frame& f) const { return f.mini ? kMiniLines : lines_; }
  Frame& make_frame(std::uint64_t page, bool leaf, bool mini);
  static void unswizzle_kids(Frame& f);  // f's children may move: forget their frames
  void load(Frame& f, std::size_t first_line, std::size_t end_line);
  void write_back(Frame& f);  // dirty lines: store and flush each, no fence
  void evict(Frame& f);
  void shrink();  // evicts unpinned leaf frames while over the budget

  pm::Pool& pool_;
  std::size_t page_bytes_, lines_, words_;
  RedoUndoLog* log_ = nullptr;
  bool mini_pages_;
  std::size_t budget_ = 1, leaf_frames_ = 0, hand_ = 0;
  std::size_t leaf_units_ = 0;                  // lines the leaf frames can hold: the budget's unit
  std::vector<std::unique_ptr<Frame>> frames_;  // live and spare frames
  std::vector<Frame*> spare_;
  std::unordered_map<std::uint64_t, Frame*> map_;
  BufferStats stats_;
};

}  // namespace dptree::baselines::bmtree
