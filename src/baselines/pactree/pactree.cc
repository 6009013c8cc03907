// PACTree's operations (pactree.h, layout.h). Every change to the data layer is made durable
// by one 8-byte store after what it names is written back (the paper's crash consistency): a new
// pair and its fingerprint into a free slot, then the bitmap bit that makes them valid; a new
// data node into its left neighbour's `next`. A split's second step, clearing the moved pairs'
// bits in the old node, is redone by recovery when a crash interrupts it.
#include "baselines/pactree/pactree.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "baselines/common.h"
#include "baselines/phase.h"
#include "baselines/roart/big_endian.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"

namespace dptree::baselines::pactree {

namespace {
struct PacTreePhases;
using Phase = baselines::PhaseScope<PacTreePhases>;

std::size_t slot_bytes(int arena) {
  return arena == kArenaNode ? sizeof(DataNode) : std::size_t{32} << (arena - kArenaLeaf0);
}

// A key's first 8 bytes as a big-endian word, zero-padded: words order as the keys do, up to
// ties between keys that share those bytes.
u64 key_word(std::string_view k) {
  u64 w = 0;
  std::memcpy(&w, k.data(), std::min<std::size_t>(8, k.size()));
  return __builtin_bswap64(w);
}

// The one-byte fingerprint a pair's slot carries (the paper's data nodes carry one a key).
unsigned fingerprint(bool ints, std::string_view k, u64 word) {
  u64 h = (ints ? word : roart::fingerprint(k)) * 0x9E37'79B9'7F4A'7C15ull;
  return static_cast<unsigned>(h >> 56);
}

// The earlier format the pool holds, if any: a sentence for the error that refuses it.
const char* earlier_format(const pm::Pool& pool) {
  if (*pool.root_word() == 0) return nullptr;
  owned_root(pool, "pactree");
  const u64 magic = *pool.root<u64>();
  if (magic == kMagicOutOfPlace) return "the first format (every key in an out-of-place leaf)";
  if (magic == kMagicLeafArrays)
    return "the second format (a search layer ending at one-leaf arrays)";
  return nullptr;
}

// Fingerprint word `w` with slot i's byte (i % 8 of the word) set to fp.
u64 with_fp(u64 w, int i, unsigned fp) {
  const unsigned sh = 8 * (i % 8);
  return (w & ~(u64{0xFF} << sh)) | u64(fp) << sh;
}
void set_fp(DataNode& d, int i, unsigned fp) {
  d.fp[i / 8] = with_fp(d.fp[i / 8], i, fp);
}
unsigned fp_at(const DataNode& d, int i) {
  return static_cast<unsigned>(d.fp[i / 8] >> (8 * (i % 8))) & 0xFF;
}
}  // namespace

const char* current_phase() {
  return PhaseName<PacTreePhases>::current;
}

PacTree::PacTree(pm::Pool& pool, u64 form, unsigned threads, bool background)
    : claim_(pool, "pactree"),
      pool_(pool),
      ints_(form == roart::kFormInts),
      concurrent_(threads != 1),
      background_(background && threads != 1) {
  if (const char* earlier = earlier_format(pool))
    throw Error(Errc::version_mismatch, "pool '" + pool.name() + "' holds a pactree of " + earlier +
                                            ", an earlier format this build does not read: load "
                                            "its keys into a new pool");
  root_ = static_cast<Root*>(open_arena_root(pool, sizeof(Root), kMagic, "pactree"));
  if (root_->dir[0] == 0 && root_->head == 0) {  // never opened: this open decides the form
    pm::store(&root_->form, form);
    pm::persist(&root_->form, 8);
  } else if (root_->form != form) {
    const char* held = root_->form == roart::kFormStrings ? "string" : "integer";
    throw Error(Errc::wrong_index, "pool '" + pool.name() + "' holds a pactree over " + held +
                                       " keys: open it with --key-type " +
                                       (root_->form == roart::kFormStrings ? "string" : "u64"));
  }
  arenas_.create(pool, root_->dir, root_->slab_size, slot_bytes, concurrent_);
  recover(threads);
  if (background_) updater_ = std::thread([this] { updater(); });
}

PacTree::~PacTree() {
  if (!updater_.joinable()) return;
  {
    std::lock_guard g(q_mu_);
    stop_ = true;  // the updater finishes the queue first
  }
  q_cv_.notify_all();
  updater_.join();
}

// ---- reads ------------------------------------------------------------------------------

// The search layer's key of data node n: the integer form's inline anchor bytes, in the line
// a lookup reads next; the string form's anchor leaf. A floor query reads it at the end of its
// path, so the node's fingerprint line is requested with it (prefetch_probe_lines).
std::string_view PacTree::key(u64 n) const {
  prefetch_probe_lines(n);
  const DataNode* d = node(n);
  if (ints_) return {reinterpret_cast<const char*>(&d->anchor_bytes), 8};
  const Leaf* l = leaf(d->anchor_leaf);
  return {l->key(), l->len};
}

// A data node in the list (recovery marked the list's nodes used and freed every other slot),
// not the head, which no anchor names.
bool PacTree::valid(u64 n) const {
  return n != root_->head && arenas_[kArenaNode].is_used(n);
}

Probe PacTree::probe(std::string_view k) const {
  u64 w = key_word(k);
  return {k, w, fingerprint(ints_, k, w)};
}

// The anchor is inline: an integer compares with it alone, a string only when their first 8
// bytes tie reads the anchor's leaf.
int PacTree::compare_anchor(const Probe& p, u64 n) const {
  const DataNode* d = node(n);
  if (p.word != d->anchor) return p.word < d->anchor ? -1 : 1;
  if (ints_) return 0;
  const Leaf* l = leaf(d->anchor_leaf);
  return p.k.compare(std::string_view(l->key(), l->len));
}

// Whether data node n still covers p, that is p is below the next node's anchor; `next` is
// what n's next word held. Reads n's first line (its `limit`); a string that ties with the
// limit's 8 bytes reads the next node's anchor leaf. `limit` is read before `next`: a split
// stores them in the other order, so a new limit comes with its new next. An old limit with a
// new next (only while the split holds n's lock) is above the new one, the last node's
// kNoLimit too, so it can only say "covered" wrongly, never send a key right past its node:
// writers check again under the lock, and readers' version checks catch it.
bool PacTree::covers_next(u64 n, const Probe& p, u64& next) const {
  const u64 limit = load8(&node(n)->limit);
  next = load8(&node(n)->next);
  if (!next || p.word < limit) return true;
  return p.word == limit && !ints_ && compare_anchor(p, next) < 0;
}

// The data node that covers p: the search layer's greatest anchor <= p, then right along the
// data layer past the anchors the search layer does not hold yet (the paper's jump).
u64 PacTree::find_node(const Probe& p) const {
  u64 n = root_->head;
  if (auto f = search_->floor_value(p.k)) n = *f;
  for (u64 next = 0;; n = next) {
    prefetch_probe_lines(n);
    if (covers_next(n, p, next)) return n;
  }
}

// A node's first line and its fingerprint line are both read by a lookup: both misses are
// started at once instead of the second after the first (the probe of find_pair).
void PacTree::prefetch_probe_lines(u64 n) const {
  __builtin_prefetch(node(n));
  __builtin_prefetch(node(n)->fp);
}

// The slot of p's pair in node n (-1: none): the fingerprints of the valid slots, eight a word,
// then the key words of the slots whose fingerprint matched (and a string's leaf on a tie).
int PacTree::find_pair(u64 n, const Probe& p) const {
  constexpr u64 kOnes = 0x0101'0101'0101'0101ull;
  const DataNode* d = node(n);
  const u64 live = load8(&d->bitmap), want = kOnes * p.fp;
  for (unsigned w = 0; w < kNodeEntries / 8; ++w) {
    const unsigned bits = (live >> (8 * w)) & 0xFF;
    if (!bits) continue;
    const u64 x = load8(&d->fp[w]) ^ want;
    // A set high bit for each zero byte of x (and maybe for bytes above one): candidates.
    for (u64 z = (x - kOnes) & ~x & (kOnes << 7); z; z &= z - 1) {
      const unsigned i = unsigned(std::countr_zero(z)) / 8;
      const Pair& pr = d->pair[8 * w + i];
      if (!(bits >> i & 1) || load8(&pr.key) != p.word) continue;
      if (ints_) return int(8 * w + i);
      const Leaf* l = leaf(load8(&pr.val));
      if (std::string_view(l->key(), l->len) == p.k) return int(8 * w + i);
    }
  }
  return -1;
}

Value PacTree::value_at(const Pair& pr) const {
  u64 v = load8(&pr.val);
  return ints_ ? v : load8(&leaf(v)->value);
}

std::string PacTree::key_at(const Pair& pr) const {
  if (!ints_) {
    const Leaf* l = leaf(pr.val);
    return std::string(l->key(), l->len);
  }
  return std::string(std::string_view(BigEndian(pr.key)));
}

std::string PacTree::anchor_key(u64 n) const {
  if (n == root_->head) return {};
  const DataNode* d = node(n);
  return ints_ ? key_at(Pair{d->anchor, 0}) : key_at(Pair{d->anchor, d->anchor_leaf});
}

// A lock-free read of node n is one moment's state when its version did not move meanwhile
// (the paper's optimistic readers); with one thread there is nothing to check. The guard keeps
// the string form's leaves from reuse; the integer form reads no leaf (data nodes are never
// freed, the search layer guards its own nodes), so it takes none: two atomic read-modify-writes
// less per lookup.
std::optional<Value> PacTree::lookup(std::string_view key) const {
  std::optional<roart::Epochs::Guard> g;
  if (!ints_) g.emplace(arenas_.epochs());
  const Probe p = probe(key);
  for (u64 n = find_node(p), next = 0;;) {
    const u64 v = concurrent_ ? versions_.begin(n) : 0;
    if (!covers_next(n, p, next)) {  // a split moved p right before this began
      n = next;
      continue;
    }
    std::optional<Value> r;
    if (int i = find_pair(n, p); i >= 0) r = value_at(node(n)->pair[i]);
    if (!concurrent_ || versions_.still(n, v)) return r;
  }
}

// Node n's pairs with keys >= start into kv (integer keys as big-endian bytes in `words`).
std::size_t PacTree::gather(u64 n, const Probe& start, std::pair<std::string_view, Value>* kv,
                            char (*words)[8], u64& next) const {
  const DataNode* d = node(n);
  next = load8(&d->next);
  std::size_t m = 0;
  for (u64 live = load8(&d->bitmap); live; live &= live - 1) {
    const Pair& pr = d->pair[std::countr_zero(live)];
    const u64 kw = load8(&pr.key), val = load8(&pr.val);
    std::string_view k;
    Value v = val;
    if (ints_) {
      std::memcpy(words[m], BigEndian(kw).b, 8);
      k = {words[m], 8};
    } else {
      if (!val) continue;  // a torn read the version check will discard
      const Leaf* l = leaf(val);
      k = {l->key(), l->len};
      v = load8(&l->value);
    }
    if (k >= start.k) kv[m++] = {k, v};
  }
  return m;
}

std::size_t PacTree::scan(std::string_view start, std::size_t count, const Emit& emit) const {
  roart::Epochs::Guard g(arenas_.epochs());
  const Probe s = probe(start);
  std::size_t got = 0;
  std::pair<std::string_view, Value> kv[kNodeEntries];
  char words[kNodeEntries][8];
  for (u64 n = count ? find_node(s) : 0, next = 0; n; n = next) {
    std::size_t m = 0;
    for (bool done = false; !done;) {
      const u64 v = concurrent_ ? versions_.begin(n) : 0;
      m = gather(n, s, kv, words, next);
      done = !concurrent_ || versions_.still(n, v);
    }
    m = roart::sorted_unique(kv, m);
    for (std::size_t i = 0; i < m; ++i) {
      emit(kv[i].first, kv[i].second);
      if (++got == count) return got;
    }
  }
  return got;
}

// ---- writes -----------------------------------------------------------------------------

u64 PacTree::take(int arena) {
  Phase ph("alloc");
  return arenas_.take(arena);
}

// The pair p names: the integer form's key and value, or the string form's key word and a new
// leaf (written back, unfenced: the publish's fence orders it).
Pair PacTree::new_pair(const Probe& p, Value v) {
  if (ints_) return {p.word, v};
  u64 off = take(kArenaLeaf0 + roart::leaf_class(p.k.size()));
  Phase ph("leaf");
  return {p.word, roart::write_leaf(pool_, off, p.k, v)};
}

// The one store that makes node n's pairs what `bitmap` says, after a fence that orders it
// behind the pairs it names.
void PacTree::publish_bitmap(u64 n, u64 bitmap) {
  {
    Phase ph("fence");
    pm::fence();
  }
  Phase ph("publish");
  u64* word = &node(n)->bitmap;
  pm::store_release(word, bitmap);
  pm::persist(word, 8);
}

bool PacTree::put(std::string_view k, Value v, bool may_insert, bool may_update) {
  pm::CategoryScope cat(pm::Category::node);
  const Probe p = probe(k);
  for (;;) {
    std::optional<bool> r;
    {
      roart::Epochs::Guard g(arenas_.epochs());
      r = put_once(p, v, may_insert, may_update);
    }
    arenas_.collect();
    if (r) return *r;
  }
}

// Under the lock of the node that covers p: nullopt when a split moved p right meanwhile.
std::optional<bool> PacTree::put_once(const Probe& p, Value v, bool may_insert, bool may_update) {
  u64 n = find_node(p), next = 0;
  std::optional<VersionLocks::Guard> lock;
  if (concurrent_) lock.emplace(versions_, n);
  if (!covers_next(n, p, next)) return std::nullopt;
  if (int i = find_pair(n, p); i >= 0) {
    if (!may_update) return false;
    update_value(n, i, v);
    return true;
  }
  if (!may_insert) return false;
  if (std::popcount(node(n)->bitmap) < int(kNodeEntries))
    insert_pair(n, p, v);
  else
    split(n, p, v);
  ++records_;
  return true;
}

// In place, one 8-byte store: the integer form's inline value, the string form's leaf value.
void PacTree::update_value(u64 n, int i, Value v) {
  Phase ph("value");
  Pair& pr = node(n)->pair[i];
  u64* w = ints_ ? &pr.val : &pool_.at<Leaf>(roart::entry_leaf(pr.val))->value;
  pm::store_release(w, v);
  pm::persist(w, 8);
}

// Into n's first free slot: the pair and its fingerprint written back, then the bitmap bit.
// A crash before the bitmap's store leaves the slot free, whatever of it reached PM.
void PacTree::insert_pair(u64 n, const Probe& p, Value v) {
  DataNode* d = node(n);
  const u64 bitmap = d->bitmap;
  const int i = std::countr_one(bitmap);
  const Pair pr = new_pair(p, v);
  {
    Phase ph("pair");
    pm::store_release(&d->pair[i].key, pr.key);
    pm::store_release(&d->pair[i].val, pr.val);
    pm::store_release(&d->fp[i / 8], with_fp(d->fp[i / 8], i, p.fp));
    pm::flush(&d->pair[i], sizeof(Pair));
    pm::flush(&d->fp[i / 8], 8);
  }
  publish_bitmap(n, bitmap | u64{1} << i);
}

// Data node n is full (the paper's split): the upper half of its keys, with p if it
// belongs there, goes to a new node written back and linked after n by one store of n's
// `next`; then one store of n's bitmap drops the moved pairs; then p goes into n if it belongs
// there, and the new anchor is handed to the search layer. Recovery redoes the drop after a
// crash between the link and the drop (the moved keys are at or above the next anchor).
void PacTree::split(u64 n, const Probe& p, Value v) {
  DataNode* d = node(n);
  std::vector<std::pair<std::string, int>> keys;
  for (int i = 0; i < int(kNodeEntries); ++i) keys.emplace_back(key_at(d->pair[i]), i);
  std::sort(keys.begin(), keys.end());
  const std::size_t half = kNodeEntries / 2;
  std::string anchor = keys[half].first;
  const bool right = p.k >= anchor;
  u64 m = take(kArenaNode);
  DataNode img{};
  img.next = d->next;
  img.limit = d->limit;
  img.anchor = d->pair[keys[half].second].key;
  if (ints_) img.anchor_bytes = __builtin_bswap64(img.anchor);
  if (!ints_) img.anchor_leaf = new_pair(probe(anchor), 0).val;
  u64 moved = 0;
  int j = 0;
  for (std::size_t r = half; r < kNodeEntries; ++r, ++j) {
    const int s = keys[r].second;
    img.pair[j] = d->pair[s];
    set_fp(img, j, fp_at(*d, s));
    moved |= u64{1} << s;
  }
  if (right) {
    img.pair[j] = new_pair(p, v);
    set_fp(img, j++, p.fp);
  }
  img.bitmap = (u64{1} << j) - 1;
  {
    Phase ph("node");
    pm::store(node(m), img);
    pm::flush(node(m), sizeof(DataNode));
  }
  {
    Phase ph("fence");
    pm::fence();
  }
  {
    Phase ph("link");
    pm::store_release(&d->next, m);
    pm::persist(&d->next, 8);
  }
  {
    Phase ph("split_drop");  // recovery redoes both stores after a crash here
    pm::store_release(&d->limit, img.anchor);
    pm::store_release(&d->bitmap, d->bitmap & ~moved);
    pm::persist(d, 64);  // the first line, before a slot the drop frees is written again
  }
  if (!right) insert_pair(n, p, v);
  ++splits_;
  hand_to_search_layer(std::move(anchor), m);
}

bool PacTree::remove(std::string_view k) {
  pm::CategoryScope cat(pm::Category::node);
  const Probe p = probe(k);
  for (;;) {
    std::optional<bool> r;
    {
      roart::Epochs::Guard g(arenas_.epochs());
      r = remove_once(p);
    }
    arenas_.collect();
    if (r) return *r;
  }
}

// One store of the bitmap, persisted before the slot can be written again.
std::optional<bool> PacTree::remove_once(const Probe& p) {
  u64 n = find_node(p), next = 0;
  std::optional<VersionLocks::Guard> lock;
  if (concurrent_) lock.emplace(versions_, n);
  if (!covers_next(n, p, next)) return std::nullopt;
  const int i = find_pair(n, p);
  if (i < 0) return false;
  DataNode* d = node(n);
  const u64 gone = d->pair[i].val;
  {
    Phase ph("unlink");
    pm::store_release(&d->bitmap, d->bitmap & ~(u64{1} << i));
    pm::persist(&d->bitmap, 8);
  }
  if (!ints_) arenas_.retire(kArenaLeaf0 + roart::entry_class(gone), roart::entry_leaf(gone));
  --records_;
  return true;
}

// ---- the search layer's updater (the paper's asynchronous SMO) ---------------------------

void PacTree::hand_to_search_layer(std::string anchor, u64 n) {
  if (!background_) {
    Phase ph("smo");
    search_->put(anchor, n, true, true);
    ++anchors_inserted_;
    return;
  }
  {
    std::lock_guard g(q_mu_);
    queue_.emplace_back(std::move(anchor), n);
  }
  q_cv_.notify_one();
}

void PacTree::updater() {
  std::unique_lock l(q_mu_);
  for (;;) {
    q_cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopped, and nothing left
    auto [anchor, n] = std::move(queue_.front());
    queue_.pop_front();
    ++in_flight_;
    l.unlock();
    {
      Phase ph("smo");
      pm::CategoryScope cat(pm::Category::node);
      search_->put(anchor, n, true, true);
    }
    ++anchors_inserted_;
    l.lock();
    --in_flight_;
    if (queue_.empty() && in_flight_ == 0) idle_cv_.notify_all();
  }
}

void PacTree::drain() const {
  std::unique_lock l(q_mu_);
  idle_cv_.wait(l, [&] { return queue_.empty() && in_flight_ == 0; });
}

IndexStats PacTree::stats() const {
  IndexStats s;
  s.records = records_.load();
  auto search = search_->stats();
  s.pm_bytes = search.pm_bytes;  // with the root block, which holds both layers' roots
  const auto u = arenas_.usage();
  s.pm_bytes += u.pm_bytes;
  s.dram_bytes = u.dram_bytes + search.dram_bytes;
  s.extra = {{"data_nodes", double(u.used[kArenaNode])},
             {"splits", double(splits_.load())},
             {"anchors_inserted", double(anchors_inserted_.load())},
             {"leftovers_cleared", double(leftovers_cleared_)},
             {"anchors_recovered", double(anchors_recovered_)},
             {"search_nodes", double(search_->node_count())}};
  return s;
}

}  // namespace dptree::baselines::pactree
