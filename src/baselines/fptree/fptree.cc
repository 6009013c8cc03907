// FPTree (Oukid et al., SIGMOD 2016) on our PM layer: inner nodes in DRAM, leaves in PM.
// A leaf holds unsorted key-value slots, a validity bitmap, one-byte fingerprints of the keys
// and a next pointer. An insert writes the pair and its fingerprint into a free slot, persists
// them, then sets the slot's bit with one 8-byte store and persists it; an update writes the
// new pair out of place and flips both bits in one store; a delete clears the bit. A leaf
// split goes through a persistent micro-log (split leaf, new leaf) that recovery redoes or
// undoes. The DRAM inner index is rebuilt from the leaf list on open.
//
// The DRAM inner nodes are a B+-tree over the leaves' low keys (inner_tree.h), built bottom-up
// from the leaf list on open. Simplifications (docs/peers.md): empty leaves are kept (no
// delete micro-log). Concurrency is the paper's lock fallback only (no RTM path; the CPU
// this was written on has no RTM): leaf operations share the inner lock and take the leaf's
// lock, splits take the inner lock alone.
#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <vector>

#include "baselines/common.h"
#include "baselines/fptree/inner_tree.h"
#include "baselines/node_chain.h"
#include "baselines/peers.h"
#include "baselines/slab/version_lock.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "registry/index_table.h"
#include "registry/option_table.h"

namespace dptree::baselines {
namespace {

constexpr std::uint64_t kMagic = 0x45455254'50464d50ull;  // "PMFPTREE"
constexpr std::size_t kMaxCapacity = 56;

struct Entry {
  std::uint64_t key;
  std::uint64_t val;
};

struct Leaf {
  ChainLinks links;       // line 0 (node_chain.h wants the links first)
  std::uint64_t next;     // the next leaf in key order
  std::uint64_t low_key;  // every key of this leaf is >= low_key (fixed at creation)
  std::uint64_t pad[3];
  std::uint64_t bitmap;  // line 1: validity bits and fingerprints
  std::uint8_t fp[kMaxCapacity];
  // then `capacity` Entry slots (the block is sized for them): kvs()
};
static_assert(offsetof(Leaf, bitmap) == 64 && sizeof(Leaf) == 128);

Entry* kvs(Leaf* l) {
  return reinterpret_cast<Entry*>(l + 1);
}
const Entry* kvs(const Leaf* l) {
  return reinterpret_cast<const Entry*>(l + 1);
}

struct Root {
  std::uint64_t magic;
  std::uint64_t param;  // leaf capacity
  ChainRoot chain;
  std::uint64_t log_leaf;      // split micro-log: the leaf being split
  std::uint64_t log_new_leaf;  // and its new right half
};

std::uint8_t fingerprint(Key k) {
  return static_cast<std::uint8_t>((k * 0x9E3779B97F4A7C15ull) >> 56);
}

class FPTree final : public Index {
 public:
  FPTree(pm::Pool& pool, std::size_t capacity_opt, bool explicit_cap, bool shared)
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
    recover();
  }

  std::string name() const override { return "fptree"; }

  void upsert(Key k, Value v) override { write(k, v, Mode::upsert); }
  bool insert(Key k, Value v) override { return write(k, v, Mode::insert); }
  bool update(Key k, Value v) override { return write(k, v, Mode::update); }

  bool remove(Key k) override {
    pm::CategoryScope cat(pm::Category::node);
    std::shared_lock g(inner_mu_);
    auto* ref = find_leaf(k);
    std::lock_guard lk(ref->mu);
    auto* l = leaf(ref->off);
    int i = find_slot(l, k);
    if (i < 0) return false;
    store8(&l->bitmap, l->bitmap & ~(std::uint64_t{1} << i));
    pm::persist(&l->bitmap, 8);
    return true;
  }

  std::optional<Value> lookup(Key k) const override {
    std::shared_lock g(inner_mu_);
    auto* ref = find_leaf(k);
    std::lock_guard lk(ref->mu);
    const auto* l = leaf(ref->off);
    int i = find_slot(l, k);
    if (i < 0) return std::nullopt;
    return kvs(l)[i].val;
  }

  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    std::size_t got = 0;
    std::vector<KV> buf;
    std::shared_lock g(inner_mu_);
    for (auto* ref = inner_.find(start); ref && got < count; ref = ref->next) {
      std::lock_guard lk(ref->mu);
      const auto* l = leaf(ref->off);
      buf.clear();
      for (auto bm = l->bitmap; bm; bm &= bm - 1) {
        const auto& e = kvs(l)[std::countr_zero(bm)];
        if (e.key >= start) buf.emplace_back(e.key, e.val);
      }
      std::sort(buf.begin(), buf.end());  // unsorted leaves: FPTree sorts for range scans
      for (const auto& kv : buf) {
        if (got == count) break;
        out.push_back(kv);
        ++got;
      }
    }
    return got;
  }

  IndexStats stats() const override {
    IndexStats s;
    std::unique_lock g(inner_mu_);
    std::size_t leaves = 0;
    for (auto off = root_->chain.first; off; off = leaf(off)->next) {
      ++leaves;
      s.records += std::popcount(leaf(off)->bitmap);
    }
    s.pm_bytes = leaves * pm::Allocator::block_size_for(leaf_bytes_) +
                 pool_.allocator().block_size(*pool_.root_word());
    s.dram_bytes = inner_.memory_bytes() + refs_.size() * sizeof(LeafRef);
    s.extra = {{"leaves", double(leaves)},
               {"inner_nodes", double(inner_.nodes())},
               {"inner_height", double(inner_.height())}};
    return s;
  }

  CheckReport check() const override;

 private:
  enum class Mode { upsert, insert, update };

  Leaf* leaf(std::uint64_t off) const { return pool_.at<Leaf>(off); }

  // A leaf as the DRAM inner nodes see it: its offset, the lock that serialises its readers
  // and writers, and the next leaf's (scans walk these in key order).
  struct LeafRef {
    LeafRef(std::uint64_t o, bool shared) : off(o) { mu.set_on(shared); }
    std::uint64_t off;
    Switchable<std::mutex> mu;
    LeafRef* next = nullptr;
  };

  // Callers hold inner_mu_ (shared at least).
  LeafRef* find_leaf(Key k) const { return inner_.find(k); }  // the first leaf's low key is 0

  int find_slot(const Leaf* l, Key k) const {
    auto f = fingerprint(k);
    for (auto bm = l->bitmap; bm; bm &= bm - 1) {
      int i = std::countr_zero(bm);
      if (l->fp[i] == f && kvs(l)[i].key == k) return i;
    }
    return -1;
  }

  bool write(Key k, Value v, Mode mode) {
    pm::CategoryScope cat(pm::Category::node);
    for (;;) {
      std::shared_lock g(inner_mu_);
      auto* ref = find_leaf(k);
      std::unique_lock lk(ref->mu);
      auto* l = leaf(ref->off);
      int old = find_slot(l, k);
      if (old >= 0 && mode == Mode::insert) return false;
      if (old < 0 && mode == Mode::update) return false;
      std::uint64_t bm = l->bitmap;
      if (bm == full_) {
        // Splits change the inner index: they run alone (the paper's lock fallback path for
        // its HTM-protected inner nodes; this build has no RTM path).
        lk.unlock();
        g.unlock();
        std::unique_lock x(inner_mu_);
        auto* r = find_leaf(k);
        if (leaf(r->off)->bitmap == full_) split(r);
        continue;
      }
      int j = std::countr_zero(~bm);
      pm::store(&kvs(l)[j], Entry{k, v});
      pm::store(&l->fp[j], fingerprint(k));
      // The pair and its fingerprint are durable before the bit that makes them visible.
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

  // The split micro-log protocol; recovery redoes from step 3 or undoes before it.
  void split(LeafRef* ref) {
    const std::uint64_t off = ref->off;
    // Reserved before anything is written, so a full pool throws with the leaf untouched.
    auto s = pool_.allocator().reserve(leaf_bytes_);
    {
      pm::CategoryScope cat(pm::Category::log);
      store8(&root_->log_leaf, off);  // 1. log the leaf being split
      pm::persist(&root_->log_leaf, 8);
    }
    // 2. allocate the new leaf (activate below)
    auto* sl = leaf(s);
    Leaf init{};
    init.links.prev = root_->chain.last;
    init.links.creator = off;
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
    inner_.insert(sl->low_key, nr);
  }

  // Steps 3-5: copy the full leaf into the new one and keep its upper half there, link it,
  // then keep the lower half in the old leaf. Idempotent while the old leaf is still full.
  void finish_split(std::uint64_t off, std::uint64_t s) {
    auto* l = leaf(off);
    auto* sl = leaf(s);
    std::vector<Key> keys(cap_);
    for (std::size_t i = 0; i < cap_; ++i) keys[i] = kvs(l)[i].key;
    std::nth_element(keys.begin(), keys.begin() + cap_ / 2, keys.end());
    Key median = keys[cap_ / 2];
    std::uint64_t upper = 0;
    for (std::size_t i = 0; i < cap_; ++i)
      if (kvs(l)[i].key >= median) upper |= std::uint64_t{1} << i;
    pm::store_bytes(kvs(sl), kvs(l), cap_ * sizeof(Entry));
    pm::store_bytes(sl->fp, l->fp, cap_);
    if (l->next != s) pm::store(&sl->next, l->next);  // a redo after step 4 must not link to itself
    pm::store(&sl->low_key, median);
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

  // PM is untrusted: every leaf must be a chain node (node_chain.h), the split log, next and
  // creator words must name leaves, the leaf list must end, and no bitmap may mark a slot
  // past the capacity. Lookups and writes then trust the leaves.
  void validate() const {
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
  }

  void recover() {
    pm::CategoryScope cat(pm::Category::node);
    validate();
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
    if (!root_->chain.first) {
      auto s = pool_.allocator().reserve(leaf_bytes_);
      pm::fill_bytes(pool_.at<std::byte>(s), 0, sizeof(Leaf));
      pm::flush(pool_.at<std::byte>(s), sizeof(Leaf));
      chain_activate(pool_, &root_->chain, s);
    }
    // Rebuild the DRAM inner nodes from the leaf list (§4.5): one pass over the leaves for
    // their low keys, then the levels bottom-up.
    std::vector<std::pair<Key, LeafRef*>> order;
    for (auto off = root_->chain.first; off; off = leaf(off)->next) {
      refs_.push_back(std::make_unique<LeafRef>(off, shared_));
      if (!order.empty()) order.back().second->next = refs_.back().get();
      order.emplace_back(leaf(off)->low_key, refs_.back().get());
    }
    inner_.build(order);
  }

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  Root* root_ = nullptr;
  std::size_t cap_ = 0, leaf_bytes_ = 0;
  std::uint64_t full_ = 0;
  // Lock fallback: readers and writers of leaves share it, splits take it alone. Off, with
  // the leaf locks, when one thread uses the index (IndexConfig::threads == 1).
  const bool shared_;
  mutable Switchable<std::shared_mutex> inner_mu_;
  InnerTree<LeafRef> inner_;                    // DRAM inner nodes over the leaves
  std::vector<std::unique_ptr<LeafRef>> refs_;  // owns the LeafRefs the inner nodes point at
};

CheckReport FPTree::check() const {
  CheckReport r;
  std::unique_lock g(inner_mu_);
  auto str = [](std::uint64_t x) { return std::to_string(x); };
  if (root_->log_leaf || root_->log_new_leaf) r.fail("the split micro-log is not clear");
  std::set<std::uint64_t> leaves;
  std::size_t records = 0;
  for (auto off = root_->chain.first; off; off = leaf(off)->next) {
    if (!pool_.allocator().is_live(off) || !leaves.insert(off).second) {
      r.fail("leaf " + str(off) + " is not live or is reached twice");
      return r;
    }
    const auto* l = leaf(off);
    if (off == root_->chain.first && l->low_key != 0) r.fail("first leaf's low key is not 0");
    if (l->bitmap & ~full_) r.fail("leaf " + str(off) + " has bits past its capacity");
    if (inner_.find(l->low_key)->off != off)
      r.fail("inner nodes do not route low key " + str(l->low_key) + " to its leaf");
    Key hi = l->next ? leaf(l->next)->low_key : 0;
    if (l->next && hi <= l->low_key) r.fail("leaf low keys are not increasing");
    std::set<Key> keys;
    for (auto bm = l->bitmap; bm; bm &= bm - 1) {
      int i = std::countr_zero(bm);
      Key k = kvs(l)[i].key;
      ++records;
      if (!keys.insert(k).second) r.fail("leaf " + str(off) + " holds key " + str(k) + " twice");
      if (l->fp[i] != fingerprint(k)) r.fail("wrong fingerprint for key " + str(k));
      if (k < l->low_key || (l->next && k >= hi))
        r.fail("key " + str(k) + " lies outside its leaf's range");
    }
  }
  // The inner nodes' bottom level and the DRAM leaf list name the PM leaves in list order.
  std::vector<std::uint64_t> listed, routed, linked;
  for (auto off = root_->chain.first; off && listed.size() <= leaves.size(); off = leaf(off)->next)
    listed.push_back(off);
  inner_.for_each_leaf([&](const LeafRef* x) { routed.push_back(x->off); });
  for (const LeafRef* x = inner_.find(0); x && linked.size() <= leaves.size(); x = x->next)
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
  std::size_t live = 0;
  pool_.allocator().for_each_live_block([&](std::uint64_t off, std::size_t) {
    ++live;
    if (off != *pool_.root_word() && !leaves.count(off))
      r.fail("live block " + str(off) + " is not reachable (leak)");
  });
  if (live != leaves.size() + 1) r.fail("live blocks differ from the reachable blocks");
  r.facts = {{"records", double(records)}, {"leaves", double(leaves.size())}};
  return r;
}

struct FPTreeOptions {
  std::size_t leaf_capacity = kMaxCapacity;
};

const option_values::OptionTable<FPTreeOptions>& fptree_options() {
  static const auto t = option_values::OptionTable<FPTreeOptions>("fptree").whole_in(
      "leaf_capacity", &FPTreeOptions::leaf_capacity, {2, kMaxCapacity},
      "slots per PM leaf (one bitmap word and one fingerprint line hold them); stored in the "
      "pool, which keeps its own");
  return t;
}

}  // namespace

std::unique_ptr<Index> make_fptree(const IndexConfig& cfg) {
  pm::Pool& pool = require_pool(cfg, "fptree");
  const auto o = fptree_options().parse(cfg.options);
  return std::make_unique<FPTree>(pool, o.leaf_capacity, cfg.options.contains("leaf_capacity"),
                                  cfg.threads != 1);
}

}  // namespace dptree::baselines

namespace dptree {

void register_paper_peers() {
  add_builtin_index({"fptree",
                     "FPTree (SIGMOD'16): DRAM B+-tree inner nodes rebuilt on open, PM leaves with "
                     "bitmap and one-byte fingerprints, split micro-log; assumes 8-byte atomic "
                     "stores; concurrent through the paper's lock fallback (leaf locks, splits "
                     "exclusive); no RTM (HTM) path, so always the fallback",
                     true, true, baselines::make_fptree, baselines::fptree_options().docs()});
}

}  // namespace dptree
