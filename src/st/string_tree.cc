// DPTree over byte-string keys (string_tree.h): create / open / recovery and the operations.
// The merge is in string_tree_merge.cc, check() in string_tree_check.cc.
#include "st/string_tree.h"

#include <algorithm>
#include <unordered_set>

#include "dptree/error.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/testing/phases.h"
#include "engine/merge.h"
#include "engine/phase.h"
#include "engine/validate.h"
#include "format/verify.h"

namespace dptree::detail {

namespace {
constexpr const char* kTree = "DPTree (string keys)";
}  // namespace

StringDPTree::StringDPTree(pm::Pool& pool, const DPTreeOptions& opt, bool create_new)
    : t_(pool, "DPTree"), opt_(opt) {
  opt_.key_bytes = opt_.value_bytes = 8;
  if (create_new)
    create();
  else
    open();
}

void StringDPTree::attach() {
  // Log records are runs of one-word slots (format/string_leaf.h).
  t_.attach_parts(*root_, opt_.leaf_capacity, 8, 8, opt_.log_page_size);
  L_.init(opt_.leaf_capacity);
  t_.codec.G.init(1, opt_.log_page_size);
  t_.pages->take_any_flavor();
  log_ = std::make_unique<PLog>(t_.pool, t_.codec, *t_.pages);
}

void StringDPTree::create() {
  opt_.validate();
  // A string leaf takes at most the 8 KiB block of the integer form's default leaf: 352 slots
  // of 24 bytes would take a 16 KiB one, 30% of it never used (docs/dptree.md "Leaves").
  opt_.leaf_capacity = std::min(opt_.leaf_capacity, string_leaf_capacity(kStringLeafBlock));
  require_page_for_longest_key(opt_.log_page_size, "DPTree over string keys");
  t_.require_empty_pool();
  pm::CategoryScope cat(pm::Category::alloc);
  u64 r = t_.alloc.reserve(sizeof(Root));
  auto* rt = t_.pool.at<Root>(r);
  Root init{};
  init.magic = kStringRootMagic;
  init.leaf_capacity = opt_.leaf_capacity;
  init.key_bytes = 8;  // a slot's prefix word
  init.value_bytes = 8;
  init.log_page_size = opt_.log_page_size;
  pm::store(rt, init);
  pm::flush(rt, sizeof(Root));
  t_.alloc.activate(t_.pool.root_word(), r);
  root_ = rt;
  attach();
  reset_bloom();
}

void StringDPTree::open() {
  auto* rt = static_cast<Root*>(open_string_root(
      t_, kStringRootMagic, kStringOlderMagics, sizeof(Root), kRootMagic, kDPTreeGvBits, "DPTree"));
  opt_.validate();
  opt_.leaf_capacity = rt->leaf_capacity;
  opt_.log_page_size = rt->log_page_size;
  t_.validate_stored([this] { opt_.validate(); });
  root_ = rt;
  attach();
  const TreeShape shape = string_tree_shape(
      t_.pool, kTree, kDPTreeGvBits,
      {t_.pool.offset_of(&root_->log_head[0]), t_.pool.offset_of(&root_->log_head[1])},
      opt_.leaf_capacity, opt_.log_page_size);
  validate_on_open(t_, *root_, shape);
  recover();
}

// Algorithm 4: an interrupted merge reclaimed or its garbage collection finished, the key
// pages counted from the leaves, the released log's chain released (its named pages kept as
// key pages), the log replayed, and every other page cached or freed (a key page no entry
// names among them).
void StringDPTree::recover() {
  PhaseScope ph(DPTreePhase::recovery);
  const int cv = static_cast<int>(root_->gv & kVersionBit);
  t_.dir->load();
  freed_ += finish_interrupted_merge(t_.pool, root_, *t_.dir, *t_.pending, string_next(t_.pool));
  rebuild_inner();
  key_pages_.rebuild(base_);
  if (root_->log_head[1 - cv])
    PLog::release_chain(t_.pool, &root_->log_head[1 - cv], 1 - cv,
                        [this](u64 page) { return key_pages_.named(page); });
  t_.dir->load();
  reset_bloom();
  clear_buffer();
  auto words_of = [&](u64 page, const u64* w, std::size_t room) {
    return replayed_record_words(t_.pool, page, w, room, cv);
  };
  log_->replay_words(
      &root_->log_head[cv], cv, words_of,
      [&](const u64* w, std::size_t) {
        const std::string_view k = string_record_key(w);
        bloom_.add_hashed(hash_string(k));
        buffer_put(k, StringSlot{string_record_value(w), t_.pool.offset_of(w)});
      },
      [&](const u64* w) { throw_record_after_end(t_.pool, kTree, w); },
      [](u64) { return std::size_t{0}; });  // this log inherits no page
  std::unordered_set<u64> in_use(log_->pages().begin(), log_->pages().end());
  for (u64 pg : key_pages_.pages()) in_use.insert(pg);
  t_.pages->sweep(in_use);
}

void StringDPTree::rebuild_inner() {
  const int cv = static_cast<int>(root_->gv & kVersionBit);
  base_.build(t_.pool, L_, root_->head[cv], cv, root_->base_count[cv]);
}

StringMergeSizes StringDPTree::merge_sizes() const {
  const auto cap = static_cast<double>(opt_.leaf_capacity);
  return {opt_.leaf_capacity, static_cast<std::size_t>(opt_.fill_rate * cap),
          static_cast<std::size_t>(opt_.consolidate_threshold * cap)};
}

std::size_t StringDPTree::merge_threshold() const {
  std::size_t floor_n = opt_.min_merge_records ? opt_.min_merge_records : opt_.leaf_capacity;
  const int cv = static_cast<int>(root_->gv & kVersionBit);
  auto r = static_cast<std::size_t>(opt_.merge_ratio * static_cast<double>(root_->base_count[cv]));
  return std::max(floor_n, r);
}

void StringDPTree::reset_bloom() {
  bloom_.reset(merge_threshold() + 1, opt_.bloom_error_rate);
}

// As DPTreeCore: after a merge failed for want of PM, only removes are taken until a retry.
void StringDPTree::write_allowed() {
  merge_block_.before_value([this] { merge(); });
}

// As DPTreeCore::upsert_raw, the record is fenced after the buffer has taken the entry, so
// that the buffer's insert overlaps the record's write-back; the write is acknowledged only
// after the fence. h = hash_string(k), which the caller's lookup has computed already.
void StringDPTree::upsert_raw(std::string_view k, u64 v, u64 h) {
  const int cv = static_cast<int>(root_->gv & kVersionBit);
  u64 rec;
  {
    PhaseScope ph(DPTreePhase::log_append);
    rec = append_string_record_unfenced(*log_, &root_->log_head[cv], cv, k, v);
  }
  buffer_put(k, StringSlot{v, rec});
  bloom_.add_hashed(h);
  {
    PhaseScope ph(DPTreePhase::log_append);
    PLog::fence_append();
  }
  merge_block_.after_write((v & kTombstone) != 0,
                           [this] { return buffer_.size() >= merge_threshold(); },
                           [this] { merge(); });
}

std::optional<u64> StringDPTree::find(std::string_view k, u64 h) const {
  const std::size_t leaf = base_.prefetch_leaf(t_.pool, k);  // loads while the buffer is probed
  if (bloom_.may_contain_hashed(h))
    if (const StringSlot* s = buffer_.find(BufferKey::of(k))) {
      if (s->value & kTombstone) return std::nullopt;
      return s->value;
    }
  if (base_.empty()) return std::nullopt;
  return base_.lookup_in(t_.pool, leaf, k, h);
}

std::optional<Value> StringDPTree::lookup(std::string_view k) const {
  check_string_key(k, kStringTreeMaxKey, "dptree");
  return find(k, hash_string(k));
}

void StringDPTree::upsert(std::string_view k, Value v) {
  check_string_key(k, kStringTreeMaxKey, "dptree");
  check_value(v, "DPTree");
  write_allowed();
  upsert_raw(k, v, hash_string(k));
}

bool StringDPTree::insert(std::string_view k, Value v) {
  check_string_key(k, kStringTreeMaxKey, "dptree");
  check_value(v, "DPTree");
  const u64 h = hash_string(k);
  if (find(k, h)) return false;
  write_allowed();
  upsert_raw(k, v, h);
  return true;
}

bool StringDPTree::update(std::string_view k, Value v) {
  check_string_key(k, kStringTreeMaxKey, "dptree");
  check_value(v, "DPTree");
  const u64 h = hash_string(k);
  if (!find(k, h)) return false;
  write_allowed();
  upsert_raw(k, v, h);
  return true;
}

bool StringDPTree::remove(std::string_view k) {
  check_string_key(k, kStringTreeMaxKey, "dptree");
  const u64 h = hash_string(k);
  if (!find(k, h)) return false;
  upsert_raw(k, kTombstone, h);
  return true;
}

std::size_t StringDPTree::scan(std::string_view start, std::size_t count,
                               std::vector<StringKV>& out) const {
  check_string_key(start, kStringTreeMaxKey, "dptree");
  std::size_t got = 0;
  auto bi = buffer_.lower_bound(BufferKey::of(start));
  const std::vector<u64>& leaves = base_.leaves;
  std::size_t li = base_.index_of(start), pos = 0;
  if (!leaves.empty()) {
    bool equal;
    pos = string_lower_bound(leaf(leaves[li]), base_.copy(li), start, equal);
  }
  auto settle = [&] {
    while (li < leaves.size() && pos >= leaf(leaves[li]).count(base_.copy(li))) {
      ++li;
      pos = 0;
    }
  };
  settle();
  while (got < count && (bi.valid() || li < leaves.size())) {
    std::string_view bk;
    const StringEntry* e = nullptr;
    StringKeyBuf buf;
    if (li < leaves.size()) {
      const StringLeaf lf = leaf(leaves[li]);
      const int c = base_.copy(li);
      const std::size_t slot = lf.order(c)[pos];
      e = &lf.slots()[slot];
      if (pos + 4 < lf.count(c)) {
        if (const u64 rec = lf.entry_at(c, pos + 4).rec()) __builtin_prefetch(lf.long_key(rec));
      }
      bk = lf.slot_key(c, slot, buf);
    }
    if (bi.valid() && (li >= leaves.size() || bi.key().view() <= bk)) {
      if (li < leaves.size() && bi.key().view() == bk) {  // the buffer's entry is newer
        ++pos;
        settle();
      }
      if (!(bi.value().value & kTombstone)) {
        out.emplace_back(std::string(bi.key().view()), bi.value().value);
        ++got;
      }
      ++bi;
    } else {
      out.emplace_back(std::string(bk), e->value());
      ++got;
      ++pos;
      settle();
    }
  }
  return got;
}

std::size_t StringDPTree::size() const {
  const int cv = static_cast<int>(root_->gv & kVersionBit);
  auto n = static_cast<long long>(root_->base_count[cv]);
  for (auto it = buffer_.begin(); it.valid(); ++it) {
    const std::string_view k = it.key().view();
    const u64 v = it.value().value;
    const bool in_base = base_.lookup(t_.pool, k, hash_string(k)).has_value();
    if (v & kTombstone)
      n -= in_base;
    else
      n += !in_base;
  }
  return static_cast<std::size_t>(n);
}

IndexStats StringDPTree::stats() const {
  IndexStats s;
  s.records = size();
  std::size_t pm = t_.alloc.block_size(*t_.pool.root_word());
  for (DirBlockPtr b : t_.dir->blocks()) pm += t_.alloc.block_size(b.off);
  t_.dir->for_each_owned([&](u64, u64 blk) { pm += t_.alloc.block_size(blk); });
  s.pm_bytes = pm;  // key pages (the key bytes) are owned by directory slots too
  const std::size_t keys = buffer_.memory_bytes() + keys_.bytes();  // nodes and key bytes
  const std::size_t inner = base_.dram_bytes();
  s.dram_bytes = sizeof(*this) + keys + bloom_.dram_bytes() + inner + t_.dir->dram_bytes() +
                 t_.pages->dram_bytes() + key_pages_.dram_bytes();
  auto d = [](std::size_t x) { return static_cast<double>(x); };
  s.extra = {{"buffer_entries", d(buffer_.size())},
             {"leaves", d(base_.leaves.size())},
             {"merges", d(merges_)},
             {"failed_merges", d(failed_merges_)},
             {"merge_wait_max_ms", merge_block_.longest_wait_ms()},
             {"merge_parts", d(parts_)},
             {"leaves_created", d(created_)},
             {"leaves_freed", d(freed_)},
             {"leaves_rewritten", d(rewritten_)},
             {"leaves_merged_in_place", d(in_place_)},
             {"log_pages", d(log_->pages().size())},
             {"key_pages", d(key_pages_.size())},
             {"key_pages_freed", d(key_pages_freed_)},
             {"free_log_pages", d(t_.pages->size(0) + t_.pages->size(1))}};
  return s;
}

}  // namespace dptree::detail
