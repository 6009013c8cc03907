// FPTree (Oukid et al., SIGMOD 2016) on our PM layer, over either key form (key_forms.h):
// inner nodes in DRAM, leaves in PM (layout.h). A leaf holds unsorted key-value slots, a
// validity bitmap, one-byte fingerprints of the keys and a next pointer. An insert writes the
// pair (for a string key: its key blob first) and its fingerprint into a free slot, persists
// them, then sets the slot's bit with one 8-byte store and persists it; an update writes the
// new pair out of place (the same key word) and flips both bits in one store; a delete clears
// the bit (then frees the key blob). A leaf split goes through a persistent micro-log (split
// leaf, new leaf) that recovery redoes or undoes. The DRAM inner index is rebuilt from the leaf
// list on open.
//
// The DRAM inner nodes are the project's B+-tree (btree.h) from each leaf's low key to the
// leaf, built bottom-up from the leaf list on open. Simplifications (docs/peers.md): empty leaves
// are kept (no delete micro-log). Concurrency is the paper's lock fallback only (no RTM path; the
// CPUs this was written on had no RTM): leaf operations share the inner lock and take the leaf's
// lock, splits take the inner lock alone.
#pragma once

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "baselines/common.h"
#include "baselines/fptree/key_forms.h"
#include "baselines/fptree/layout.h"
#include "baselines/node_chain.h"
#include "baselines/slab/version_lock.h"
#include "btree/btree.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"

namespace dptree::baselines::fptree {

template <class Keys>
class Tree {
  using Arg = typename Keys::Arg;

 public:
  Tree(pm::Pool& pool, std::size_t capacity_opt, bool explicit_cap, bool shared)
      : claim_(pool, "fptree"), pool_(pool), shared_(shared) {
    inner_mu_.set_on(shared_);
    {
      pm::CategoryScope cat(pm::Category::node);
      root_ = open_root<Root>(pool_, kMagic, "fptree", "leaf_capacity", capacity_opt, explicit_cap);
    }
    cap_ = root_->param;
    if (cap_ < 2 || cap_ > kMaxCapacity)
      corrupt(pool_.offset_of(root_), "(the root) holds leaf capacity " + std::to_string(cap_));
    full_ = cap_ == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << cap_) - 1;
    leaf_bytes_ = sizeof(Leaf) + cap_ * sizeof(Entry);
    open_form();
    keys_ = std::make_unique<Keys>(pool_, root_, shared_);
    recover();
  }

  bool write(Arg k, Value v, bool may_insert, bool may_update) {
    pm::CategoryScope cat(pm::Category::node);
    for (;;) {
      std::shared_lock g(inner_mu_);
      auto* ref = route(k);
      std::unique_lock lk(ref->mu);
      auto* l = leaf(ref->off);
      int old = find_slot(l, k);
      if (old >= 0 && !may_update) return false;
      if (old < 0 && !may_insert) return false;
      std::uint64_t bm = l->bitmap;
      if (bm == full_) {
        // Splits change the inner index: they run alone (the paper's lock fallback path for
        // its HTM-protected inner nodes; this build has no RTM path).
        lk.unlock();
        g.unlock();
        std::unique_lock x(inner_mu_);
        auto* r = route(k);
        if (leaf(r->off)->bitmap == full_) split(r);
        continue;
      }
      int j = std::countr_zero(~bm);
      const u64 word = old >= 0 ? kvs(l)[old].key : keys_->make(k);
      pm::store(&kvs(l)[j], Entry{word, v});
      pm::store(&l->fp[j], Keys::fingerprint(k));
      // The pair, its fingerprint and its key blob are durable before the bit that makes them
      // visible.
      pm::flush(&kvs(l)[j], sizeof(Entry));
      pm::flush(&l->fp[j], 1);
      pm::fence();
      bm |= std::uint64_t{1} << j;
      if (old >= 0) bm &= ~(std::uint64_t{1} << old);  // update: both bits in one store
      store8(&l->bitmap, bm);
      pm::persist(&l->bitmap, 8);
      return true;
    }
  }

  bool remove(Arg k) {
    pm::CategoryScope cat(pm::Category::node);
    std::shared_lock g(inner_mu_);
    auto* ref = route(k);
    std::lock_guard lk(ref->mu);
    auto* l = leaf(ref->off);
    int i = find_slot(l, k);
    if (i < 0) return false;
    store8(&l->bitmap, l->bitmap & ~(std::uint64_t{1} << i));
    pm::persist(&l->bitmap, 8);
    keys_->drop(kvs(l)[i].key);  // unreachable now: a crash before this frees it on open
    return true;
  }

  std::optional<Value> lookup(Arg k) const {
    std::shared_lock g(inner_mu_);
    auto* ref = route(k);
    std::lock_guard lk(ref->mu);
    const auto* l = leaf(ref->off);
    int i = find_slot(l, k);
    if (i < 0) return std::nullopt;
    return kvs(l)[i].val;
  }

  // Up to `count` pairs with key >= start, ascending, appended to `out` (of KV or StringKV).
  template <class Out>
  std::size_t scan(Arg start, std::size_t count, std::vector<Out>& out) const {
    std::size_t got = 0;
    std::vector<std::pair<Arg, Value>> buf;
    std::shared_lock g(inner_mu_);
    for (auto* ref = route(start); ref && got < count; ref = ref->next) {
      std::lock_guard lk(ref->mu);
      const auto* l = leaf(ref->off);
      buf.clear();
      for (auto bm = l->bitmap; bm; bm &= bm - 1) {
        const auto& e = kvs(l)[std::countr_zero(bm)];
        if (keys_->view(e.key) >= start) buf.emplace_back(keys_->view(e.key), e.val);
      }
      std::sort(buf.begin(), buf.end());  // unsorted leaves: FPTree sorts for range scans
      for (const auto& [k, v] : buf) {
        if (got == count) break;
        out.emplace_back(typename Out::first_type(k), v);
        ++got;
      }
    }
    return got;
  }

  IndexStats stats() const {
    IndexStats s;
    std::unique_lock g(inner_mu_);
    std::size_t leaves = 0;
    for (auto off = root_->chain.first; off; off = leaf(off)->next) {
      ++leaves;
      s.records += std::popcount(leaf(off)->bitmap);
    }
    s.pm_bytes = leaves * pm::Allocator::block_size_for(leaf_bytes_) +
                 pool_.allocator().block_size(*pool_.root_word()) + keys_->pm_bytes();
    s.dram_bytes = inner_bytes() + refs_.size() * sizeof(LeafRef);
    s.extra = {{"leaves", double(leaves)},
               {"inner_nodes", double(inner_.leaf_count() + inner_.inner_count())},
               {"inner_height", double(inner_.height())}};
    return s;
  }

  CheckReport check() const;

 private:
  Leaf* leaf(std::uint64_t off) const { return pool_.at<Leaf>(off); }

  // A leaf as the DRAM inner nodes see it: its offset, the lock that serialises its readers
  // and writers, and the next leaf's (scans walk these in key order).
  struct LeafRef {
    LeafRef(std::uint64_t o, bool shared) : off(o) { mu.set_on(shared); }
    std::uint64_t off;
    Switchable<std::mutex> mu;
    LeafRef* next = nullptr;
  };

  // The leaf whose range holds k (the first leaf's low key is the smallest key: there is one).
  LeafRef* route(Arg k) const { return *inner_.find_floor(k); }
  // The inner nodes, and the separators' own heap bytes (a std::string beyond its inline buffer).
  std::size_t inner_bytes() const {
    std::size_t n = inner_.memory_bytes();
    if constexpr (std::is_same_v<typename Keys::Stored, std::string>)
      inner_.for_each_stored_key([&](const std::string& k) {
        const auto* in = reinterpret_cast<const char*>(&k);
        const std::less<const char*> lt;  // a total order also for unrelated pointers
        if (lt(k.data(), in) || !lt(k.data(), in + sizeof(k))) n += k.capacity() + 1;
      });
    return n;
  }

  // Callers hold the leaf's lock.
  int find_slot(const Leaf* l, Arg k) const {
    auto f = Keys::fingerprint(k);
    for (auto bm = l->bitmap; bm; bm &= bm - 1) {
      int i = std::countr_zero(bm);
      if (l->fp[i] == f && keys_->view(kvs(l)[i].key) == k) return i;
    }
    return -1;
  }

  // The split micro-log protocol; recovery redoes from step 3 or undoes before it.
  void split(LeafRef* ref) {
    const std::uint64_t off = ref->off;
    auto* l = leaf(off);
    std::vector<Arg> keys(cap_);
    for (std::size_t i = 0; i < cap_; ++i) keys[i] = keys_->view(kvs(l)[i].key);
    std::nth_element(keys.begin(), keys.begin() + cap_ / 2, keys.end());
    // The new leaf's low key (a blob of its own in the string form) and the leaf are taken
    // before anything is written, so a full pool throws with the leaf untouched.
    const u64 low = keys_->make(keys[cap_ / 2]);
    std::uint64_t s = 0;
    try {
      s = pool_.allocator().reserve(leaf_bytes_);
    } catch (...) {
      keys_->drop(low);
      throw;
    }
    {
      pm::CategoryScope cat(pm::Category::log);
      store8(&root_->log_leaf, off);  // 1. log the leaf being split
      pm::persist(&root_->log_leaf, 8);
    }
    // 2. allocate the new leaf (activate below; its first fence orders the low key's blob)
    auto* sl = leaf(s);
    Leaf init{};
    init.links.prev = root_->chain.last;
    init.links.creator = off;
    init.low_key = low;
    pm::store(sl, init);
    pm::flush(sl, sizeof(Leaf));
    chain_activate(pool_, &root_->chain, s);
    {
      pm::CategoryScope cat(pm::Category::log);
      store8(&root_->log_new_leaf, s);
      pm::persist(&root_->log_new_leaf, 8);
    }
    finish_split(off, s);
    pm::CategoryScope cat(pm::Category::log);
    pm::store(&root_->log_leaf, 0);  // 6. clear the log
    pm::store(&root_->log_new_leaf, 0);
    pm::persist(&root_->log_leaf, 16);
    refs_.push_back(std::make_unique<LeafRef>(s, shared_));
    LeafRef* nr = refs_.back().get();
    nr->next = ref->next;
    ref->next = nr;
    inner_.insert(typename Keys::Stored(keys_->view(low)), nr);
  }

  // Steps 3-5: copy the full leaf into the new one and keep the keys at or above the new
  // leaf's low key there, link it, then keep the lower half in the old leaf. Idempotent while
  // the old leaf is still full.
  void finish_split(std::uint64_t off, std::uint64_t s) {
    auto* l = leaf(off);
    auto* sl = leaf(s);
    const Arg median = keys_->view(sl->low_key);
    std::uint64_t upper = 0;
    for (std::size_t i = 0; i < cap_; ++i)
      if (keys_->view(kvs(l)[i].key) >= median) upper |= std::uint64_t{1} << i;
    pm::store_bytes(kvs(sl), kvs(l), cap_ * sizeof(Entry));
    pm::store_bytes(sl->fp, l->fp, cap_);
    if (l->next != s) pm::store(&sl->next, l->next);  // a redo after step 4 must not link to itself
    pm::store(&sl->bitmap, upper);
    pm::persist(sl, leaf_bytes_);  // 3.
    store8(&l->next, s);           // 4. link the new leaf
    pm::persist(&l->next, 8);
    store8(&l->bitmap, full_ & ~upper);  // 5. the old leaf keeps the lower half
    pm::persist(&l->bitmap, 8);
  }

  [[noreturn]] void corrupt(std::uint64_t off, const std::string& problem) const {
    throw Error(Errc::corrupt, "pool '" + pool_.name() + "': fptree leaf at offset " +
                                   std::to_string(off) + " " + problem +
                                   ": the pool is damaged; restore it from a copy");
  }

  // A pool holds one form: the open that makes the first leaf decides it.
  void open_form() {
    if (root_->form != kFormInts && root_->form != kFormStrings)
      corrupt(pool_.offset_of(root_), "(the root) names key form " + std::to_string(root_->form));
    if (!root_->chain.first && root_->form != Keys::kForm) {
      pm::CategoryScope cat(pm::Category::node);
      pm::store(&root_->form, Keys::kForm);
      pm::store(&root_->slab_size, SlabArena::slab_size_for(pool_.size()));
      pm::persist(&root_->form, 16);
    }
    if (root_->form != Keys::kForm) {
      const bool strings = root_->form == kFormStrings;
      throw Error(Errc::wrong_index, "pool '" + pool_.name() + "' holds an fptree over " +
                                         (strings ? "string" : "integer") +
                                         " keys: open it with --key-type " +
                                         (strings ? "string" : "u64"));
    }
  }

  // PM is untrusted: every leaf must be a chain node (node_chain.h), the split log, next and
  // creator words must name leaves, the leaf list must end, and no bitmap may mark a slot
  // past the capacity. Returns the leaves in creation order.
  std::vector<std::uint64_t> validate() const {
    auto order = chain_nodes(pool_, &root_->chain, leaf_bytes_, "fptree");
    std::set<std::uint64_t> nodes(order.begin(), order.end());
    auto is_leaf = [&](std::uint64_t from, std::uint64_t to, const char* what) {
      if (to && !nodes.contains(to))
        corrupt(from, std::string("names ") + what + " " + std::to_string(to) + ", not a leaf");
    };
    const auto root_off = pool_.offset_of(root_);
    is_leaf(root_off, root_->log_leaf, "split log leaf");
    is_leaf(root_off, root_->log_new_leaf, "split log new leaf");
    is_leaf(root_off, root_->chain.last, "last");
    for (auto n : order) {
      const auto* l = leaf(n);
      is_leaf(n, l->next, "next");
      is_leaf(n, l->links.creator, "creator");
      is_leaf(n, l->links.prev, "prev");
      if (l->bitmap & ~full_) corrupt(n, "marks slots past its capacity");
    }
    std::set<std::uint64_t> seen;
    for (auto off = root_->chain.first; off; off = leaf(off)->next)
      if (!seen.insert(off).second) corrupt(off, "is on a cycle of next links");
    return order;
  }

  // The key words a split redo or the rebuild reads: every leaf's low key (written before the
  // leaf joined the chain), the valid slots of the leaves on the list and of a logged split's
  // leaf. An unlinked new leaf's slots may be torn; the redo rewrites them or the leaf is dropped.
  void validate_keys(const std::vector<std::uint64_t>& order) const {
    for (auto n : order)
      keys_->validate(leaf(n)->low_key, true, [&](const std::string& what) { corrupt(n, what); });
    auto slots = [&](std::uint64_t off) {
      const auto* l = leaf(off);
      for (auto bm = l->bitmap; bm; bm &= bm - 1)
        keys_->validate(kvs(l)[std::countr_zero(bm)].key, false,
                        [&](const std::string& what) { corrupt(off, what); });
    };
    for (auto off = root_->chain.first; off; off = leaf(off)->next) slots(off);
    if (root_->log_leaf) slots(root_->log_leaf);
  }

  void recover() {
    pm::CategoryScope cat(pm::Category::node);
    auto order = validate();
    if (!root_->chain.first) {
      auto s = pool_.allocator().reserve(leaf_bytes_);
      pm::fill_bytes(pool_.at<std::byte>(s), 0, sizeof(Leaf));
      pm::flush(pool_.at<std::byte>(s), sizeof(Leaf));
      chain_activate(pool_, &root_->chain, s);
      order = {s};
    }
    keys_->open();
    validate_keys(order);
    if (root_->log_leaf || root_->log_new_leaf) {
      auto off = root_->log_leaf, s = root_->log_new_leaf;
      // Redo when the new leaf was logged and the old one still holds everything; otherwise
      // the split either did not allocate (undo: the chain tail is freed below) or is done.
      if (off && s && leaf(off)->bitmap == full_) finish_split(off, s);
      pm::CategoryScope lc(pm::Category::log);
      pm::store(&root_->log_leaf, 0);
      pm::store(&root_->log_new_leaf, 0);
      pm::persist(&root_->log_leaf, 16);
    }
    if (auto t = chain_recover_tail(pool_, &root_->chain)) {
      auto c = links(pool_, t)->creator;
      if (c && leaf(c)->next != t) chain_drop_tail(pool_, &root_->chain);
    }
    // Rebuild the DRAM inner nodes from the leaf list (§4.5): one pass over the leaves for
    // their low keys, then the levels bottom-up. The key words the list reaches are the used
    // ones; any other key blob is free again.
    std::vector<std::pair<typename Keys::Stored, LeafRef*>> sorted;
    for (auto off = root_->chain.first; off; off = leaf(off)->next) {
      const auto* l = leaf(off);
      if (l->low_key && !keys_->mark(l->low_key)) corrupt(off, "shares its low key's blob");
      for (auto bm = l->bitmap; bm; bm &= bm - 1)
        if (!keys_->mark(kvs(l)[std::countr_zero(bm)].key)) corrupt(off, "shares a key blob");
      refs_.push_back(std::make_unique<LeafRef>(off, shared_));
      if (!sorted.empty()) sorted.back().second->next = refs_.back().get();
      sorted.emplace_back(keys_->view(l->low_key), refs_.back().get());
    }
    keys_->finish();
    inner_.assign_sorted(sorted);
  }

  // check()'s parts: one leaf (its key words and records added to the totals), the three lists
  // that name the leaves, and the live blocks.
  void check_leaf(std::uint64_t off, std::vector<u64>& key_words, std::size_t& records,
                  CheckReport& r) const;
  void check_leaf_lists(const std::set<std::uint64_t>& leaves, CheckReport& r) const;
  void check_blocks(const std::set<std::uint64_t>& leaves, CheckReport& r) const;

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  Root* root_ = nullptr;
  std::unique_ptr<Keys> keys_;
  std::size_t cap_ = 0, leaf_bytes_ = 0;
  std::uint64_t full_ = 0;
  // Lock fallback: readers and writers of leaves share it, splits take it alone. Off, with
  // the leaf locks, when one thread uses the index (IndexConfig::threads == 1).
  const bool shared_;
  mutable Switchable<std::shared_mutex> inner_mu_;
  // The DRAM inner nodes: each leaf's low key to the leaf. A key's leaf is the one with the
  // greatest low key not above it; std::less<> finds std::string separators by string_view.
  btree::BPlusTree<typename Keys::Stored, LeafRef*, 64, 64, std::less<>, btree::HeapNodes,
                   btree::NodeSearch::plain>
      inner_;
  std::vector<std::unique_ptr<LeafRef>> refs_;  // owns the LeafRefs the inner nodes point at
};

template <class Keys>
CheckReport Tree<Keys>::check() const {
  CheckReport r;
  std::unique_lock g(inner_mu_);
  if (root_->log_leaf || root_->log_new_leaf) r.fail("the split micro-log is not clear");
  std::set<std::uint64_t> leaves;
  std::vector<u64> key_words;  // every low key and valid slot's key word
  std::size_t records = 0;
  for (auto off = root_->chain.first; off; off = leaf(off)->next) {
    if (!pool_.allocator().is_live(off) || !leaves.insert(off).second) {
      r.fail("leaf " + std::to_string(off) + " is not live or is reached twice");
      return r;
    }
    check_leaf(off, key_words, records, r);
  }
  keys_->check(key_words, r);
  check_leaf_lists(leaves, r);
  check_blocks(leaves, r);
  r.facts = {{"records", double(records)}, {"leaves", double(leaves.size())}};
  return r;
}

template <class Keys>
void Tree<Keys>::check_leaf(std::uint64_t off, std::vector<u64>& key_words, std::size_t& records,
                            CheckReport& r) const {
  const std::string at = "leaf " + std::to_string(off);
  const auto* l = leaf(off);
  if (off == root_->chain.first && l->low_key != 0) r.fail("first leaf's low key is not 0");
  if (l->low_key) key_words.push_back(l->low_key);
  if (l->bitmap & ~full_) r.fail(at + " has bits past its capacity");
  const Arg low = keys_->view(l->low_key);
  if (route(low)->off != off)
    r.fail("inner nodes do not route low key " + Keys::show(low) + " to its leaf");
  const Arg hi = l->next ? keys_->view(leaf(l->next)->low_key) : Arg{};
  if (l->next && hi <= low) r.fail("leaf low keys are not increasing");
  std::set<Arg> keys;
  for (auto bm = l->bitmap; bm; bm &= bm - 1) {
    int i = std::countr_zero(bm);
    key_words.push_back(kvs(l)[i].key);
    const Arg k = keys_->view(kvs(l)[i].key);
    ++records;
    if (!keys.insert(k).second) r.fail(at + " holds key " + Keys::show(k) + " twice");
    if (l->fp[i] != Keys::fingerprint(k)) r.fail("wrong fingerprint for key " + Keys::show(k));
    if (k < low || (l->next && k >= hi))
      r.fail("key " + Keys::show(k) + " lies outside its leaf's range");
  }
}

// The inner nodes' bottom level, the DRAM leaf links and the creation chain name the PM leaves
// of the leaf list, the first two in list order.
template <class Keys>
void Tree<Keys>::check_leaf_lists(const std::set<std::uint64_t>& leaves, CheckReport& r) const {
  std::vector<std::uint64_t> listed, routed, linked;
  for (auto off = root_->chain.first; off && listed.size() <= leaves.size(); off = leaf(off)->next)
    listed.push_back(off);
  for (auto it = inner_.begin(); it.valid(); ++it) routed.push_back(it.value()->off);
  for (const LeafRef* x = route(Arg{}); x && linked.size() <= leaves.size(); x = x->next)
    linked.push_back(x->off);
  if (routed != listed) r.fail("the inner nodes' leaves differ from the leaf list");
  if (linked != listed) r.fail("the DRAM leaf links differ from the leaf list");
  std::set<std::uint64_t> chain;
  for (auto c = root_->chain.first; c; c = links(pool_, c)->next)
    if (!chain.insert(c).second || chain.size() > leaves.size() + 1) {
      r.fail("the creation chain loops");
      break;
    }
  if (chain != leaves) r.fail("the creation chain and the leaf list hold different leaves");
}

// Every live block is reachable: a leaf, the root or a key block.
template <class Keys>
void Tree<Keys>::check_blocks(const std::set<std::uint64_t>& leaves, CheckReport& r) const {
  std::set<std::uint64_t> mine(leaves.begin(), leaves.end());
  mine.insert(*pool_.root_word());
  keys_->for_each_block([&](std::uint64_t b) { mine.insert(b); });
  std::size_t live = 0;
  pool_.allocator().for_each_live_block([&](std::uint64_t off, std::size_t) {
    ++live;
    if (!mine.count(off)) r.fail("live block " + std::to_string(off) + " is not reachable (leak)");
  });
  if (live != mine.size()) r.fail("live blocks differ from the reachable blocks");
}

}  // namespace dptree::baselines::fptree
