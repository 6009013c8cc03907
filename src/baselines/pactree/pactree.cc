// PACTree's operations (pactree.h, layout.h). Every change to the data layer is made durable
// by one 8-byte store after what it names is written back: a new leaf into a free entry, a
// new data node into its left neighbour's `next`. A split's second step, clearing the moved
// entries from the old node, is redone by recovery when a crash interrupts it.
#include "baselines/pactree/pactree.h"

#include <algorithm>
#include <cstring>

#include "baselines/common.h"
#include "baselines/phase.h"
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
}  // namespace

const char* current_phase() {
  return PhaseName<PacTreePhases>::current;
}

PacTree::PacTree(pm::Pool& pool, u64 form, unsigned threads, bool background)
    : claim_(pool, "pactree"),
      pool_(pool),
      concurrent_(threads != 1),
      background_(background && threads != 1),
      locks_(threads != 1 ? std::make_unique<roart::WriteLocks>(pool.size()) : nullptr) {
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
  search_ = std::make_unique<roart::Tree>(pool, &root_->search, threads == 1 ? 1 : 0);
  recover();
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

std::string_view PacTree::key_of(u64 entry) const {
  const Leaf* l = pool_.at<Leaf>(roart::entry_leaf(entry));
  return {l->key(), l->len};
}

std::string_view PacTree::anchor_of(u64 n) const {
  u64 a = node(n)->anchor;
  return a ? key_of(a) : std::string_view();
}

// Whether data node n still covers k, that is k is below the next node's anchor; `next` is
// what n's next word held.
bool PacTree::covers_next(u64 n, std::string_view k, u64& next) const {
  next = load8(&node(n)->next);
  return !next || k < anchor_of(next);
}

// The data node that covers k: the search layer's greatest anchor <= k, then right along the
// data layer past the anchors the search layer does not hold yet (the paper's jump).
u64 PacTree::find_node(std::string_view k) const {
  u64 n = root_->head;
  if (auto f = search_->floor_value(k)) n = *f;
  for (u64 next = 0; !covers_next(n, k, next);) n = next;
  return n;
}

// The index of k's entry in node n (-1: none) and, in `e`, the entry as it was read: a
// lock-free reader must use that word, since the entry may be cleared right after.
int PacTree::find_entry(u64 n, std::string_view k, u64& e) const {
  unsigned fp = roart::fingerprint(k);
  const DataNode* d = node(n);
  for (int i = 0; i < int(kNodeEntries); ++i) {
    e = load8(&d->entry[i]);
    if (e && roart::entry_fp(e) == fp && key_of(e) == k) return i;
  }
  return -1;
}

std::optional<Value> PacTree::lookup(std::string_view k) const {
  roart::Epochs::Guard g(arenas_.epochs());
  for (u64 n = find_node(k), next = 0;;) {
    if (u64 e = 0; find_entry(n, k, e) >= 0)
      return load8(&pool_.at<Leaf>(roart::entry_leaf(e))->value);
    // A split publishes the new node before it clears the moved entries: if k was moved
    // while this looked, `next` now names where it went.
    if (covers_next(n, k, next)) return std::nullopt;
    n = next;
  }
}

std::size_t PacTree::scan(std::string_view start, std::size_t count, const Emit& emit) const {
  roart::Epochs::Guard g(arenas_.epochs());
  std::size_t got = 0;
  std::pair<std::string_view, Value> kv[kNodeEntries];
  for (u64 n = count ? find_node(start) : 0; n;) {
    u64 next = load8(&node(n)->next);
    std::string_view limit = next ? anchor_of(next) : std::string_view();
    std::size_t m = 0;
    for (const u64& w : node(n)->entry)
      if (u64 e = load8(&w)) {
        std::string_view k = key_of(e);
        if (k >= start && (!next || k < limit))
          kv[m++] = {k, load8(&pool_.at<Leaf>(roart::entry_leaf(e))->value)};
      }
    if (load8(&node(n)->next) != next) continue;  // split meanwhile: read n again
    m = roart::sorted_unique(kv, m);
    for (std::size_t i = 0; i < m; ++i) {
      emit(kv[i].first, kv[i].second);
      if (++got == count) return got;
    }
    n = next;
  }
  return got;
}

// ---- writes -----------------------------------------------------------------------------

u64 PacTree::take(int arena) {
  Phase ph("alloc");
  return arenas_.take(arena);
}

u64 PacTree::new_leaf(std::string_view k, Value v) {
  u64 off = take(kArenaLeaf0 + roart::leaf_class(k.size()));
  Phase ph("leaf");
  return roart::write_leaf(pool_, off, k, v);
}

void PacTree::publish(u64* word, u64 v) {
  {
    Phase ph("fence");
    pm::fence();
  }
  Phase ph("publish");
  pm::store_release(word, v);
  pm::persist(word, 8);
}

bool PacTree::put(std::string_view k, Value v, bool may_insert, bool may_update) {
  pm::CategoryScope cat(pm::Category::node);
  for (;;) {
    std::optional<bool> r;
    {
      roart::Epochs::Guard g(arenas_.epochs());
      r = put_once(k, v, may_insert, may_update);
    }
    arenas_.collect();
    if (r) return *r;
  }
}

// Under the lock of the node that covers k: nullopt when a split moved k right meanwhile.
std::optional<bool> PacTree::put_once(std::string_view k, Value v, bool may_insert,
                                      bool may_update) {
  u64 n = find_node(k), next = 0;
  std::optional<roart::WriteLocks::Pair> lock;
  if (concurrent_) lock.emplace(*locks_, n, n);
  if (!covers_next(n, k, next)) return std::nullopt;
  DataNode* d = node(n);
  if (u64 e = 0; find_entry(n, k, e) >= 0) {  // under n's lock: e stays
    if (!may_update) return false;
    Phase ph("value");
    u64* value = &pool_.at<Leaf>(roart::entry_leaf(e))->value;
    pm::store_release(value, v);
    pm::persist(value, 8);
    return true;
  }
  if (!may_insert) return false;
  auto free_at = std::find(std::begin(d->entry), std::end(d->entry), u64{0});
  if (free_at != std::end(d->entry))
    publish(free_at, new_leaf(k, v));
  else
    split(n, k, v);
  ++records_;
  return true;
}

// Data node n is full: the upper half of its keys, with k if it belongs there, goes to a new
// node linked after n by one store; then the moved entries are cleared from n, and the new
// anchor is handed to the search layer.
void PacTree::split(u64 n, std::string_view k, Value v) {
  DataNode* d = node(n);
  std::vector<std::pair<std::string_view, int>> keys;
  for (int i = 0; i < int(kNodeEntries); ++i) keys.emplace_back(key_of(d->entry[i]), i);
  std::sort(keys.begin(), keys.end());
  std::string anchor(keys[kNodeEntries / 2].first);
  u64 m = take(kArenaNode);
  DataNode img{};
  img.next = d->next;
  img.anchor = new_leaf(anchor, 0);
  std::size_t j = 0;
  for (std::size_t i = kNodeEntries / 2; i < kNodeEntries; ++i)
    img.entry[j++] = d->entry[keys[i].second];
  u64 mine = new_leaf(k, v);
  if (k >= anchor) img.entry[j++] = mine;
  {
    Phase ph("node");
    pm::store(node(m), img);
    pm::flush(node(m), sizeof(DataNode));
  }
  publish(&d->next, m);
  {
    Phase ph("split_clear");  // recovery clears what a crash leaves here
    for (std::size_t i = kNodeEntries / 2; i < kNodeEntries; ++i)
      pm::store_release(&d->entry[keys[i].second], u64{0});
    pm::flush(d->entry, sizeof(d->entry));
  }
  if (k < anchor)
    publish(&d->entry[keys[kNodeEntries / 2].second], mine);  // its fence orders the clears
  else
    pm::fence();
  ++splits_;
  hand_to_search_layer(std::move(anchor), m);
}

bool PacTree::remove(std::string_view k) {
  pm::CategoryScope cat(pm::Category::node);
  for (;;) {
    std::optional<bool> r;
    {
      roart::Epochs::Guard g(arenas_.epochs());
      r = remove_once(k);
    }
    arenas_.collect();
    if (r) return *r;
  }
}

std::optional<bool> PacTree::remove_once(std::string_view k) {
  u64 n = find_node(k), next = 0;
  std::optional<roart::WriteLocks::Pair> lock;
  if (concurrent_) lock.emplace(*locks_, n, n);
  if (!covers_next(n, k, next)) return std::nullopt;
  u64 e = 0;
  int i = find_entry(n, k, e);
  if (i < 0) return false;
  u64 gone = e;
  {
    Phase ph("unlink");
    pm::store_release(&node(n)->entry[i], u64{0});
    pm::persist(&node(n)->entry[i], 8);
  }
  arenas_.retire(kArenaLeaf0 + roart::entry_class(gone), roart::entry_leaf(gone));
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
