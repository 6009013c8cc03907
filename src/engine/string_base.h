// What the two string forms of DPTree share (the single-threaded StringDPTree, string_tree.h,
// and the concurrent one, cdptree/string_cdptree.h): the base tree's inner index over the
// leaves of one version (a DRAM snapshot), searches and scans of string leaves, the merge of
// sorted buffer entries into a leaf list in place (a leaf that overflows split), the
// validation of a log record's length during replay, and check()'s walks of the leaf list and
// of one log page chain. The leaf and record formats are format/string_leaf.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "btree/btree.h"
#include "dptree/index.h"
#include "dptree/pm/pool.h"
#include "engine/buffer_keys.h"
#include "engine/family.h"
#include "engine/key_pages.h"
#include "engine/key_search.h"
#include "engine/merge.h"
#include "engine/validate.h"
#include "format/string_leaf.h"

namespace dptree::detail {

using StringEntries = std::vector<std::pair<std::string, u64>>;
using StringMap = std::map<std::string, u64, StringKeyLess>;
// A buffered key's value and the pool offset of its latest log record: a merge that adds a key
// longer than 16 bytes to the leaves names its bytes there (format/string_leaf.h).
struct StringSlot {
  u64 value = 0;
  u64 rec = 0;
};
// Buffered entries in key order, as a merge takes them: each key a view of its bytes in the
// buffer's KeyArena, valid while that arena is (not a copy: at 64-byte keys the copies, their
// mallocs and frees and the merge heap's string compares were about a quarter of an insert's
// time in the concurrent form, docs/cdptree.md "Buffer").
using BufferedEntry = std::pair<std::string_view, StringSlot>;
using BufferedEntries = std::vector<BufferedEntry>;
using BufferedSpan = std::span<const BufferedEntry>;
// The string forms' buffer (§2.1; the concurrent form's shards): a DRAM B+-tree whose nodes
// hold the keys as BufferKeys (their prefixes, their bytes in the tree's KeyArena), so a search
// reads a few lines per level instead of one scattered node per comparison, and the merge
// walks it leaf by leaf.
using StringBufferTree = btree::BPlusTree<BufferKey, StringSlot, 32, 32, BufferKeyLess>;
// k's value slot in a buffer tree and whether k was added (a new slot holds `v`): one descent,
// and k's bytes copied into `keys`, the tree's arena, only when k is added.
inline std::pair<StringSlot*, bool> find_or_add(StringBufferTree& t, KeyArena& keys,
                                                std::string_view k, const StringSlot& v = {}) {
  return t.find_or_insert(BufferKey::of(k), v,
                          [&keys](const BufferKey& n) { return keys.keep(n); });
}
using StringSlotMap = std::map<std::string, StringSlot, StringKeyLess>;

// The next word of a string leaf of version v (merge.h LeafNext).
LeafNext string_next(const pm::Pool& pool);

// Position in metadata copy c's order array of `lf` of the first key not below k (a binary
// search over the slots' prefixes, reading a key's record only on a tie); `equal` when that
// key is k.
std::size_t string_lower_bound(StringLeaf lf, int c, std::string_view k, bool& equal);

// Requests the lines a lookup in `lf` reads first (metadata copy c, slots below hw): the bitmap
// and the fingerprints of slots [0, hw), which share its line.
void request_leaf_lines(StringLeaf lf, int c, std::size_t hw);
// The slot of `lf` live in metadata copy c whose key is k (fp: its string_fingerprint), or -1:
// the fingerprints of slots [0, hw) are scanned (hw: one past the highest live slot, from the
// inner index), and only a slot whose fingerprint matches is looked up in the bitmap and read
// (its prefix, and its bytes 8..15 or length; a key longer than 16 bytes in its record when
// they match).
long string_leaf_find(StringLeaf lf, int c, std::size_t hw, std::string_view k, std::uint16_t fp);
// One past the highest slot live in metadata copy c (0: none).
std::size_t string_leaf_high_water(StringLeaf lf, int c);

// The inner index over the leaf list of one version: each leaf and its last key. Immutable
// once built, so the concurrent form publishes it as its base snapshot.
struct StringBase {
  StringLeafLayout L;
  int v = 0;  // the version the leaves are read in
  std::vector<u64> leaves;
  // Per leaf, all a lookup reads of the index after its search, in one word whose line the
  // search requests with its last block: the leaf's pool offset (the low 48 bits),
  // string_leaf_high_water of the metadata copy version v reads (bits 48-60: what a lookup
  // scans) and that copy (bit 63). The address of the leaf's first line a lookup requests
  // depends on the copy: kept in an array of its own, its load was a miss of its own between
  // the search and the leaf's.
  std::vector<u64> ref;
  std::vector<std::string> last;
  std::vector<u64> last_prefix;  // key_prefix of last: most searches compare only these
  KeySearch search;              // over last_prefix
  u64 count = 0;                 // keys in the leaves (Root::base_count of the version)
  // Which snapshot this is, where a form makes several (the concurrent form numbers them from
  // 1): a leaf number found in one is meaningful only in the snapshot of the same serial.
  u64 serial = 0;
  static constexpr u64 kRefOffset = (u64{1} << 48) - 1;
  int copy(std::size_t i) const { return static_cast<int>(ref[i] >> 63); }
  std::size_t hw(std::size_t i) const { return static_cast<std::size_t>(ref[i] >> 48 & 0x1fff); }

  void build(const pm::Pool& pool, const StringLeafLayout& layout, LeafPtr head, int version,
             u64 keys);
  StringLeaf leaf(const pm::Pool& pool, std::size_t i) const {
    return StringLeaf{pool.at(ref[i] & kRefOffset), pool.base(), &L};
  }
  bool empty() const { return leaves.empty(); }
  // The leaf whose key range holds k (the last one for keys above every leaf).
  std::size_t index_of(std::string_view k) const;
  // k's value in the leaves (hash: hash_string(k)).
  std::optional<u64> lookup(const pm::Pool& pool, std::string_view k, u64 hash) const {
    if (empty()) return std::nullopt;
    const std::size_t i = index_of(k);
    request_leaf_lines(leaf(pool, i), copy(i), hw(i));
    return lookup_in(pool, i, k, hash);
  }
  // index_of(k), the first lines of that leaf (request_leaf_lines) requested from memory: a
  // caller with other work before lookup_in (the buffer's search) overlaps their misses.
  std::size_t prefetch_leaf(const pm::Pool& pool, std::string_view k) const;
  // k's value in leaf number `leaf` (which must exist).
  std::optional<u64> lookup_in(const pm::Pool& pool, std::size_t leaf, std::string_view k,
                               u64 hash) const;
  // Appends up to n entries with key >= start in order; true when the base has no more.
  bool collect(const pm::Pool& pool, std::string_view start, std::size_t n,
               StringEntries& out) const;
  std::size_t dram_bytes() const;
};

// What a merge of string leaves did (counts for stats).
struct StringMergeResult {
  std::vector<u64> out;  // the leaf list of version nv
  u64 count = 0;         // keys in it
  std::size_t created = 0, rewritten = 0, in_place = 0;
  // The log records of keys longer than 16 bytes that entries of version nv name and no entry of
  // version cv did (keys added), and those entries of cv named that no entry of nv does (keys
  // removed):
  // the key pages' counts change by them after the flip (key_pages.h).
  std::vector<u64> named, unnamed;
};

// A merge's leaf sizes: the capacity, the entries of a leaf a split creates (FR x capacity),
// and the count below which a leaf is consolidated with the next (CT x capacity).
struct StringMergeSizes {
  std::size_t cap = 0, fill = 0, small = 0;
};

// The merge's leaf phases (string_merge.cc, §2.3): the sorted entries `es` (tombstones
// included) meet the leaves of `base` (version base.v; the merge builds version 1 - base.v). A
// leaf whose key range receives none is kept; one that receives some and still fits is merged
// in place: new slots (free in base.v) and the next version's metadata written; one that would
// overflow, or fall below `small` entries, is rewritten with its new entries (the latter
// together with the next leaf) into new leaves recorded in pendingLeaves before their
// activation. Needs begin_merge first; throws pool_full (the caller undoes the merge with
// reclaim_interrupted_merge; a leaf merged in place changed only what version base.v ignores).
void merge_string_leaves(TreeParts& t, const StringMergeSizes& sz, const StringBase& base,
                         BufferedSpan es, StringMergeResult& r);
// The same over the run of leaves [first, end) of `base`, `es` the entries of its key range (a
// partition of §3.3; thread-safe between disjoint runs). A rewrite is not carried past `end`.
void merge_string_leaves(TreeParts& t, const StringMergeSizes& sz, const StringBase& base,
                         std::size_t first, std::size_t end, BufferedSpan es, StringMergeResult& r);
// The position of the first of the sorted entries `es` whose key is above k.
std::size_t string_entries_above(BufferedSpan es, std::string_view k);
// The leaves `out` linked in order through their next words of version nv, the last one's to
// `after` (0: the end of the list), each changed word written back without a fence.
void link_string_leaves(pm::Pool& pool, std::span<const u64> out, int nv, u64 after = 0);

// A merge that does not fit goes in parts (docs/dptree.md): cycle(n) merges the first n of
// `total` entries as a whole merge cycle, undone when it throws pool_full; then n is halved
// (failed() told) and the cycle runs again. Returns the n that fit; rethrows the pool_full of a
// part of one entry. The test limit (set_dptree_string_merge_part) bounds n.
std::size_t merge_fitting_part(std::size_t total, const std::function<void(std::size_t)>& cycle,
                               const std::function<void()>& failed);
// While it lives, the merge on this thread is (or is not) a part of its buffer
// (dptree_string_merge_in_part, for crash tests); then the flag is what it was.
struct InMergePart {
  explicit InMergePart(bool on);
  ~InMergePart();
  bool saved;
  InMergePart(const InMergePart&) = delete;
  InMergePart& operator=(const InMergePart&) = delete;
};

// Appends k's record (format/string_leaf.h) to the log at `head` of version `ver`: the log
// write of an upsert in both string forms, and of an entry a merge part leaves in the buffer.
// Returns the record's pool offset. May throw pool_full (nothing written then).
u64 append_string_record(PLog& log, LogPagePtr* head, int ver, std::string_view k, u64 v);
// The same without the last fence: the caller calls PLog::fence_append() before it
// acknowledges the write.
u64 append_string_record_unfenced(PLog& log, LogPagePtr* head, int ver, std::string_view k, u64 v);

// Where the newest log's records begin in log page `page` (its first record word w0, `per`
// of them): after the last inherit mark (format/string_leaf.h) in the run of whole records of
// either version and marks from the page's start; 0 for a page not of the key flavor (one
// its log began: only an inherited page stays a key page in a log) or with no mark.
std::size_t inherited_start(const pm::Pool& pool, u64 page, const u64* w0, std::size_t per);
// Replay's length in words of the record at `w` on log page `page` of a log of version `ver`
// with `room` words left on the page: 0 for a pad word, PLog::kLogEnd for a record that is not
// whole (validity bit, length, checksum: the log ends there).
std::size_t replayed_record_words(const pm::Pool& pool, u64 page, const u64* w, std::size_t room,
                                  int ver);
// Replay's Error(corrupt) naming `tree` for the whole record at `w` after its log's end.
[[noreturn]] void throw_record_after_end(const pm::Pool& pool, const char* tree, const u64* w);

// open(): the root block of a string form (`magic`, at least `bytes` long, starting with a
// Root), its format words verified against `gv_bits`. A pool of an earlier string format
// (`older`: the tree's magics of formats 3, 4, ..., kStringFormat - 1; formats 1 and 2 derive
// from format 3's) is version_mismatch naming both formats; a pool of the same tree's integer
// form (`integer_magic`) is wrong_index naming `tree` and how to open it; other errors as
// TreeParts::existing_root, a damaged format Error(corrupt).
// The earlier string format (1 .. kStringFormat - 1) of the tree whose root `pool` holds, for
// the tree whose magics of formats 3 on are `older` (formats 1 and 2 derive theirs from
// format 3's); 0 when it holds none of them.
std::size_t older_string_format(const pm::Pool& pool,
                                const std::array<u64, kStringFormat - 3>& older);
void* open_string_root(const TreeParts& t, u64 magic,
                       const std::array<u64, kStringFormat - 3>& older, std::size_t bytes,
                       u64 integer_magic, u64 gv_bits, const char* tree);

// open(): what validate_on_open checks of a string form's pool: string leaves (their next
// words, and the contents of those on the current list, of `capacity` slots) and the log page
// chains starting at `logs`.
TreeShape string_tree_shape(const pm::Pool& pool, const char* tree, u64 gv_bits,
                            std::vector<u64> logs, std::size_t capacity, std::size_t page_bytes);

// Error(invalid_argument) naming `tree` when pages of `page_bytes` cannot hold the record of a
// key of kStringTreeMaxKey bytes.
void require_page_for_longest_key(std::size_t page_bytes, const char* tree);

// A damaged string leaf's problem in version v (empty: its contents are in bounds): the
// block's size, the bitmap (no bit past the capacity), the count (1..capacity, the bitmap's
// bits), the order array (slots in range, live, each once, keys strictly increasing), and
// each live slot's key length, prefix, fingerprint and record: none for a key of up to 8 bytes
// (its prefix zero past its length) or of 9..16 (tagged, its meta word zero past its length),
// else inside a live log page of the directory
// (`page_bytes` long), of the slot's length and prefix, whole (its checksum holds).
std::string string_leaf_problem(const pm::Pool& pool, u64 leaf, int v, const StringLeafLayout& L,
                                std::size_t page_bytes);

// check(): the leaf list of version v from `head` (each leaf owned, live, reached once,
// contents in bounds, keys strictly increasing), its key count against
// `base_count`, and `base` against it. Returns false when the walk could not go on.
bool check_string_leaves(const TreeParts& t, const StringLeafLayout& L, LeafPtr head, int v,
                         u64 base_count, const StringBase& base,
                         const std::unordered_set<u64>& owned, std::set<u64>& reach,
                         CheckReport& r);

// check(): the key pages (key_pages.h): every page an entry of the leaf list from `head` (version
// v) names is a live owned log page, in a live log (`live_logs`) or flagged kKeyFlavor, and
// `pages` counts exactly the entries naming it; every kKeyFlavor page the directory owns is
// named (none leaked). Adds the key pages to `reach`.
void check_key_pages(const TreeParts& t, const StringLeafLayout& L, LeafPtr head, int v,
                     const KeyPages& pages, const std::unordered_set<u64>& live_logs,
                     std::set<u64>& reach, CheckReport& r);

// check(): a buffer tree (DPTree's, or a shard of the concurrent form's buffer)
// against the replay of its log: the tree's own structure, and its entries equal to `replay`
// (failures start with `prefix`; `what` names the entries). Returns the entries, for the
// caller's checks of each key.
template <class Tree>
StringMap checked_buffer_entries(const Tree& tree, const StringSlotMap& replay,
                                 const std::string& prefix, std::string_view what, CheckReport& r) {
  for (const auto& p : tree.check()) r.fail(prefix + "buffer tree: " + p);
  StringMap entries;
  bool same = replay.size() == tree.size();
  for (auto it = tree.begin(); it.valid(); ++it) {
    const std::string_view k = key_view(it.key());
    entries.emplace(k, it.value().value);
    auto in = replay.find(k);
    same = same && in != replay.end() && in->second.value == it.value().value &&
           in->second.rec == it.value().rec;
  }
  if (!same)
    r.fail(prefix + "replaying the log does not give " + std::string(what) +
           " (keys, values and records)");
  return entries;
}

// check(): one log page chain of version v from `head`: owned pages of flavor v, records that
// decode (replayed into `replay`), after its end no word of version v. With `inherits` (the
// concurrent form's shard logs, PLog::inherit) a page of the key flavor may hold records of
// earlier logs, then this log's after its mark (inherited_start). Adds its pages to `reach`
// and counts pages and records. Returns false when the walk could not go on.
bool check_string_log_chain(const TreeParts& t, LogPagePtr head, int v,
                            const std::unordered_set<u64>& owned, std::set<u64>& reach,
                            StringSlotMap& replay, std::size_t& pages, std::size_t& records,
                            CheckReport& r, bool inherits = false);

}  // namespace dptree::detail
