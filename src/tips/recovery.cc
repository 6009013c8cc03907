// TIPS creation, opening and recovery (TIPS paper, "Recovery algorithm"), and the self-check.
//
// Recovery, per partition: roll back the uncommitted epoch with the ULog (entries tagged with
// the applied timestamp and whole by their checksum); release what the MLog says (the
// allocations of an uncommitted epoch, the frees of a committed one whose MLog was not yet
// cleared); clear both logs. Then replay every OLog record newer than each partition's
// applied timestamp, in timestamp order, with the same epochs as a normal replay (a crash
// during recovery is recovered the same way). The cache starts empty.
#include <algorithm>
#include <cstring>
#include <set>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"
#include "tips/engine.h"

namespace dptree::tips::detail {

namespace {

std::size_t pow2_at_least(std::size_t n) {
  std::size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Reserves, fills (fill may be empty: zeroes), persists and activates a block into `dest`.
std::uint64_t make_block(pm::Pool& pool, std::uint64_t* dest, std::size_t bytes) {
  auto& a = pool.allocator();
  std::uint64_t blk = a.reserve(bytes);
  pm::fill_bytes(pool.at(blk), 0, bytes);
  pm::flush(pool.at(blk), bytes);
  a.activate(dest, blk);
  return blk;
}

}  // namespace

Engine::Engine(pm::Pool& pool, std::shared_ptr<const Adapter> adapter, const Options& opt)
    : claim_(pool, "TIPS"), pool_(pool), adapter_(std::move(adapter)), opt_(opt) {
  if (*pool_.root_word())
    open_layout();
  else
    create_layout();
  const std::size_t buckets = pow2_at_least(std::max<std::size_t>(opt_.cache_entries, 1024));
  buckets_.assign(buckets, nullptr);
  bucket_mask_ = buckets - 1;
  stripes_ = std::vector<std::mutex>(std::min<std::size_t>(buckets, 4096));
  {
    PhaseScope phase("recovery");
    for (auto& p : parts_) recover_partition(*p);
    validate_partitions();
    rebuild_slots();
    replay_logs_at_open();
  }
  if (opt_.background) bg_ = std::thread([this] { background_loop(); });
}

Engine::~Engine() {
  if (bg_.joinable()) {
    stop_.store(true);
    {
      std::lock_guard g(bg_mu_);
      bg_cv_.notify_all();
    }
    bg_.join();
  }
  try {  // leave the backend complete, so the next open has nothing to replay
    sync();
  } catch (...) {  // the PM state is recoverable either way
  }
  for (CacheEntry* b : buckets_)
    while (b) {
      CacheEntry* n = b->next;
      delete b;
      b = n;
    }
}

void Engine::create_layout() {
  if (opt_.partitions > layout::kMaxPartitions || opt_.lanes > layout::kMaxLanes)
    throw Error(Errc::invalid_argument, "tips: at most 64 partitions and 64 lanes");
  auto& a = pool_.allocator();
  std::uint64_t blk = a.reserve(sizeof(layout::Root));
  auto* r = pool_.at<layout::Root>(blk);
  layout::Root init{};
  init.magic = layout::kMagic;
  init.format = layout::kFormat;
  init.partitions = opt_.partitions;
  init.lanes = opt_.lanes;
  init.lane_records = opt_.lane_records;
  init.ulog_lines = opt_.ulog_lines;
  init.mlog_entries = opt_.mlog_entries;
  init.header_bytes = adapter_->header_bytes();
  std::strncpy(init.adapter, adapter_->name().c_str(), sizeof(init.adapter) - 1);
  pm::store(r, init);
  pm::flush(r, sizeof(*r));
  a.activate(pool_.root_word(), blk);
  open_layout();
}

// PM is untrusted: each block the layout names must be a live block of the size the layout
// needs, owned by the word that names it, before anything reads it.
void Engine::require_block(std::uint64_t off, const std::uint64_t* owner, std::size_t bytes,
                           const std::string& what) const {
  const auto& a = pool_.allocator();
  if (a.owner_of(off) != pool_.offset_of(owner) || a.block_size(off) < bytes)
    throw Error(Errc::corrupt, "pool '" + pool_.name() + "': the TIPS " + what + " at offset " +
                                   std::to_string(off) + " is not a live block of " +
                                   std::to_string(bytes) + " bytes owned by the word at " +
                                   std::to_string(pool_.offset_of(owner)) +
                                   ": the pool is damaged; restore it from a copy");
}

// Reads the root; finishes a creation a crash interrupted (missing blocks are made now).
void Engine::open_layout() {
  read_root();
  if (!root_->dir) make_block(pool_, &root_->dir, layout::kDirPages * 8);
  require_block(root_->dir, &root_->dir, layout::kDirPages * 8, "node directory");
  dir_ = pool_.at<std::uint64_t>(root_->dir);
  for (std::size_t pg = 0; pg < layout::kDirPages; ++pg)
    if (dir_[pg]) require_block(dir_[pg], &dir_[pg], layout::kSlotsPerPage * 8, "directory page");
  for (std::size_t i = 0; i < opt_.partitions; ++i) open_partition(i);
  for (std::size_t i = 0; i < opt_.lanes; ++i) open_lane(i);
}

// The root block: TIPS's, of this format and adapter, with a possible layout, which then
// wins over the options given now.
void Engine::read_root() {
  const std::string where = "pool '" + pool_.name() + "'";
  require_block(*pool_.root_word(), pool_.root_word(), 8, "root");
  if (pool_.allocator().block_size(*pool_.root_word()) < sizeof(layout::Root))
    throw Error(Errc::wrong_index,
                where + " holds another index, not TIPS: open it with the index that made it");
  root_ = pool_.root<layout::Root>();
  if (root_->magic != layout::kMagic)
    throw Error(Errc::wrong_index,
                where + " holds another index, not TIPS: open it with the index that made it");
  if (root_->format != layout::kFormat)
    throw Error(Errc::version_mismatch, where + " holds TIPS format " +
                                            std::to_string(root_->format) + ", this build reads " +
                                            std::to_string(layout::kFormat));
  const std::string name(root_->adapter, strnlen(root_->adapter, sizeof(root_->adapter)));
  if (name != adapter_->name() || root_->header_bytes != adapter_->header_bytes())
    throw Error(Errc::invalid_argument, where + " holds TIPS over '" + name +
                                            "': open it with that adapter, not '" +
                                            adapter_->name() + "'");
  const std::uint64_t most = pool_.size() / 8;  // no log can hold more words than the pool
  if (root_->partitions == 0 || root_->partitions > layout::kMaxPartitions || root_->lanes == 0 ||
      root_->lanes > layout::kMaxLanes || root_->lane_records == 0 || root_->lane_records > most ||
      root_->ulog_lines > most || root_->mlog_entries > most || root_->header_bytes > pool_.size())
    throw Error(Errc::corrupt, where + ": TIPS root has an impossible layout");
  opt_.partitions = static_cast<unsigned>(root_->partitions);
  opt_.lanes = static_cast<unsigned>(root_->lanes);
  opt_.lane_records = root_->lane_records;
  opt_.ulog_lines = root_->ulog_lines;
  opt_.mlog_entries = root_->mlog_entries;
  playout_ = layout::PartitionLayout(root_->header_bytes, opt_.mlog_entries, opt_.ulog_lines);
}

void Engine::open_partition(std::size_t i) {
  if (!root_->part[i]) {
    // A fresh partition: zeroed logs, then the adapter's empty index (no epoch needed: the
    // block is not reachable until activated, and a crash before that leaves it free).
    auto& a = pool_.allocator();
    std::uint64_t blk = a.reserve(playout_.bytes);
    pm::fill_bytes(pool_.at(blk), 0, playout_.bytes);
    auto* u = pool_.at<layout::UndoEntry>(blk + playout_.ulog_off);
    for (std::size_t j = 0; j < opt_.ulog_lines; ++j) pm::store(&u[j].tag, layout::kClearedTag);
    adapter_->create(pool_.at(blk + playout_.header_off));  // plain stores: noted
    pm::note_stores(pool_.at(blk + playout_.header_off), adapter_->header_bytes());
    pm::flush(pool_.at(blk), playout_.bytes);
    a.activate(&root_->part[i], blk);
  }
  require_block(root_->part[i], &root_->part[i], playout_.bytes, "partition block");
  auto p = std::make_unique<Partition>();
  p->id = static_cast<unsigned>(i);
  std::byte* b = pool_.at(root_->part[i]);
  p->hdr = reinterpret_cast<layout::PartitionHeader*>(b);
  p->header = b + playout_.header_off;
  p->mlog = reinterpret_cast<std::uint64_t*>(b + playout_.mlog_off);
  p->ulog = reinterpret_cast<layout::UndoEntry*>(b + playout_.ulog_off);
  parts_.push_back(std::move(p));
}

void Engine::open_lane(std::size_t i) {
  const std::size_t bytes = layout::kLaneHeader + opt_.lane_records * 32;
  if (!root_->lane[i]) make_block(pool_, &root_->lane[i], bytes);
  require_block(root_->lane[i], &root_->lane[i], bytes, "OLog lane");
  auto l = std::make_unique<Lane>();
  std::byte* b = pool_.at(root_->lane[i]);
  l->hdr = reinterpret_cast<layout::LaneHeader*>(b);
  l->rec = reinterpret_cast<layout::Record*>(b + layout::kLaneHeader);
  l->head = l->hdr->head;
  l->tail = l->hdr->tail;
  if (l->tail < l->head || l->tail - l->head > opt_.lane_records)
    throw Error(Errc::corrupt, "pool '" + pool_.name() + "': a TIPS OLog lane has head " +
                                   std::to_string(l->head) + " and tail " +
                                   std::to_string(l->tail));
  lanes_.push_back(std::move(l));
}

void Engine::recover_partition(Partition& p) {
  const std::uint64_t applied = p.hdr->applied;
  // 1. Roll back the uncommitted epoch: restore every whole undo entry of it.
  bool restored = false;
  for (std::size_t i = 0; i < opt_.ulog_lines; ++i) {
    layout::UndoEntry& u = p.ulog[i];
    if (u.tag != applied || u.sum != layout::undo_sum(u.off, u.tag, u.data)) continue;
    if (u.off < 64 || u.off % 64 || u.off + 64 > pool_.size())
      throw Error(Errc::corrupt, "pool '" + pool_.name() + "': a TIPS undo entry points outside");
    pm::store_bytes(pool_.at(u.off), u.data, 64);
    pm::flush(pool_.at(u.off), 64);
    restored = true;
  }
  if (restored) pm::fence();
  // 2. The MLog: entries belong to the epoch that began at mlog_base.
  bool any = false;
  const bool committed = p.hdr->mlog_base != applied;
  for (std::size_t i = 0; i < opt_.mlog_entries; ++i) {
    const std::uint64_t w = p.mlog[i];
    if (!(w & layout::kMlogUsed)) continue;
    any = true;
    const bool is_free = w & layout::kMlogFree;
    const std::uint64_t slot = w & layout::kMlogSlotMask;
    if (slot >= layout::kDirPages * layout::kSlotsPerPage || !dir_[slot / layout::kSlotsPerPage])
      continue;  // a slot on a page that never came to be: nothing was allocated into it
    if (is_free == committed) pool_.allocator().free(slot_word(slot));  // no-op when 0
  }
  // 3. Clear both logs (a crash before this point repeats steps 1-2 with the same result).
  bool cleared = false;
  for (std::size_t i = 0; i < opt_.ulog_lines; ++i)
    if (p.ulog[i].tag == applied) {
      pm::store(&p.ulog[i].tag, layout::kClearedTag);
      pm::flush(&p.ulog[i].tag, 8);
      cleared = true;
    }
  if (any) {
    pm::fill_bytes(p.mlog, 0, opt_.mlog_entries * 8);
    pm::flush(p.mlog, opt_.mlog_entries * 8);
    cleared = true;
  }
  if (cleared) pm::fence();
}

// A block tips::alloc handed out (live, owned by a directory slot its header names, large
// enough) holding `bytes` at `p`.
bool Engine::owns_node(const void* p, std::size_t bytes) const {
  if (!pool_.contains(p, bytes)) return false;
  const std::uint64_t off = pool_.offset_of(p);
  if (off % 64 || off < layout::kNodeHeader) return false;
  const std::uint64_t blk = off - layout::kNodeHeader;
  const auto& a = pool_.allocator();
  const std::uint64_t owner = a.owner_of(blk);
  if (!owner || a.block_size(blk) < bytes + layout::kNodeHeader) return false;
  const std::uint64_t slot = pool_.at<std::uint64_t>(blk)[0];
  if (slot >= layout::kDirPages * layout::kSlotsPerPage || !dir_[slot / layout::kSlotsPerPage])
    return false;
  return pool_.offset_of(slot_word(slot)) == owner;
}

void Engine::validate_partitions() const {
  for (const auto& p : parts_) {
    std::string bad = adapter_->validate(
        p->header, [this](const void* n, std::size_t bytes) { return owns_node(n, bytes); });
    if (!bad.empty())
      throw Error(Errc::corrupt, "pool '" + pool_.name() + "': the TIPS index of partition " +
                                     std::to_string(p->id) + " (block at offset " +
                                     std::to_string(root_->part[p->id]) + ") has " + bad +
                                     ": the pool is damaged; restore it from a copy");
  }
}

void Engine::rebuild_slots() {
  free_slots_.clear();
  for (std::size_t pg = layout::kDirPages; pg-- > 0;) {
    if (!dir_[pg]) continue;
    const auto* w = pool_.at<std::uint64_t>(dir_[pg]);
    for (std::size_t i = layout::kSlotsPerPage; i-- > 0;)
      if (w[i] == 0) free_slots_.push_back(pg * layout::kSlotsPerPage + i);
  }
}

// Replays every record newer than its partition's applied timestamp; afterwards the lanes
// are empty and the global timestamp continues after everything seen.
void Engine::replay_logs_at_open() {
  std::uint64_t top = 0;
  for (auto& p : parts_) top = std::max(top, p->hdr->applied);
  for (auto& lp : lanes_) {
    Lane& lane = *lp;
    for (std::uint64_t i = lane.head; i < lane.tail; ++i) {
      const layout::Record& r = lane.rec[i % opt_.lane_records];
      top = std::max(top, r.ts);
      Partition& p = partition_of(r.key);
      if (r.ts > p.hdr->applied) p.batch.push_back(r);
    }
  }
  for (auto& p : parts_) {
    if (p->batch.empty()) continue;
    std::sort(p->batch.begin(), p->batch.end(),
              [](const layout::Record& a, const layout::Record& b) { return a.ts < b.ts; });
    apply_partition(*p);
  }
  bool moved = false;
  for (auto& lp : lanes_) {
    if (lp->head == lp->tail) continue;
    lp->head = lp->tail;
    pm::store(&lp->hdr->head, lp->head);
    pm::flush(&lp->hdr->head, 8);
    moved = true;
  }
  if (moved) pm::fence();
  global_ts_.store(top);
  applied_all_.store(top);
  round_ts_ = top;
}

IndexStats Engine::stats() {
  sync();
  std::lock_guard g(replay_mu_);
  IndexStats s;
  std::uint64_t undo = 0, skipped = 0, epochs = 0, records = 0;
  for (auto& p : parts_) {
    std::shared_lock pg(p->mu);
    s.records += adapter_->size(p->header);
    undo += p->undo_lines;
    skipped += p->undo_skipped;
    epochs += p->epochs;
    records += p->records;
    adapter_->for_each_block(p->header, [&](const void* n) {
      auto* h = static_cast<const std::byte*>(n) - layout::kNodeHeader;
      s.pm_bytes += pool_.allocator().block_size(pool_.offset_of(h));
    });
  }
  s.dram_bytes = cache_size_.load() * sizeof(CacheEntry) + buckets_.size() * sizeof(void*);
  auto d = [](auto x) { return static_cast<double>(x); };
  s.extra = {{"cache_entries", d(cache_size_.load())},
             {"replayed_records", d(records)},
             {"epochs", d(epochs)},
             {"undo_lines", d(undo)},
             {"undo_skipped_uno", d(skipped)},
             {"replay_rounds", d(rounds_)},
             {"writers_last", d(last_writers_)},
             {"writers_mean", rounds_ ? d(writer_sum_) / d(rounds_) : 0.0}};
  return s;
}

// Structure of every partition's index, owner slots against reachable nodes, and every live
// PM block accounted for (root, directory, slot pages, partitions, lanes, reachable nodes).
CheckReport Engine::check() {
  CheckReport r;
  std::lock_guard g(replay_mu_);
  std::set<std::uint64_t> expected{*pool_.root_word(), root_->dir};
  for (std::size_t i = 0; i < opt_.partitions; ++i) expected.insert(root_->part[i]);
  for (std::size_t i = 0; i < opt_.lanes; ++i) expected.insert(root_->lane[i]);
  std::set<std::uint64_t> used_slots;
  std::size_t records = 0, nodes = 0;
  for (auto& p : parts_) {
    std::shared_lock pg(p->mu);
    for (auto& prob : adapter_->check(p->header))
      r.fail("partition " + std::to_string(p->id) + ": " + prob);
    records += adapter_->size(p->header);
    adapter_->for_each_block(p->header, [&](const void* n) {
      ++nodes;
      auto* h = reinterpret_cast<const std::uint64_t*>(static_cast<const std::byte*>(n) -
                                                       layout::kNodeHeader);
      const std::uint64_t off = pool_.offset_of(h);
      if (h[1] != layout::kNodeMagic || h[0] >= layout::kDirPages * layout::kSlotsPerPage ||
          !dir_[h[0] / layout::kSlotsPerPage] || *slot_word(h[0]) != off) {
        r.fail("node at offset " + std::to_string(off) + " is not owned by its slot");
        return;
      }
      if (!used_slots.insert(h[0]).second) r.fail("two nodes share slot " + std::to_string(h[0]));
      expected.insert(off);
    });
  }
  for (std::size_t pg = 0; pg < layout::kDirPages; ++pg) {
    if (!dir_[pg]) continue;
    expected.insert(dir_[pg]);
    const auto* w = pool_.at<std::uint64_t>(dir_[pg]);
    for (std::size_t i = 0; i < layout::kSlotsPerPage; ++i)
      if (w[i] && !used_slots.contains(pg * layout::kSlotsPerPage + i))
        r.fail("slot " + std::to_string(pg * layout::kSlotsPerPage + i) +
               " owns a block no index reaches (a leak)");
  }
  pool_.allocator().for_each_live_block([&](std::uint64_t off, std::size_t) {
    if (!expected.erase(off)) r.fail("live PM block at offset " + std::to_string(off) + " leaked");
  });
  for (std::uint64_t off : expected)
    r.fail("block at offset " + std::to_string(off) + " is in use but not allocated");
  for (auto& l : lanes_) {
    std::lock_guard lg(l->mu);
    if (l->tail < l->head || l->tail - l->head > opt_.lane_records) r.fail("OLog lane overflow");
  }
  r.facts = {{"records", static_cast<double>(records)}, {"nodes", static_cast<double>(nodes)}};
  return r;
}

}  // namespace dptree::tips::detail
