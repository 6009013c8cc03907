// uTree (Chen et al., VLDB 2020; seed 003, the authors' slides): a volatile B+-tree (the
// array layer) whose leaf entries point into a persistent sorted singly linked list of
// key-value nodes (the shadow list layer) in PM.
//
// A put writes and persists one list node, then links it behind its predecessor with one
// 8-byte store (slides: "PUT: list layer => array layer"); sorting, splits and merges happen
// only in the DRAM array layer ("never perform SROs in PM"), which is where the design gets
// its low tail latency. A get goes array layer => list node; a range query finds its first
// node through the array layer and then walks the list ("probe in the list layer directly").
// Recovery rebuilds the array layer from the list.
//
// Single-threaded: the coordinated concurrency control of the paper (lock the array-layer
// leaf, CAS the list link, a version bit in the next pointer) is not implemented, so the
// index registers as not concurrent. List nodes come from a slab arena (baselines/slab): an
// unlink rewrites the predecessor's next word, which the §2.4 owner rule cannot follow; the
// paper uses an epoch-based PM allocator instead.
#include "baselines/utree/utree.h"

#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "baselines/slab/slab_arena.h"
#include "btree/btree.h"
#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"

namespace dptree::baselines {
namespace {

constexpr std::uint64_t kMagic = 0x31454552'5455504dull;  // "MPUTREE1"

struct ListNode {
  Key key;
  Value value;
  std::uint64_t next;  // offset of the next larger key's node, 0 at the end
  std::uint64_t pad;
};
static_assert(sizeof(ListNode) == 32);  // two per cache line, never straddling one

struct alignas(64) Root {
  std::uint64_t magic;
  std::uint64_t slab_size;
  std::uint64_t list_dir;  // SlabArena directory of the list nodes
  std::uint64_t head;      // first list node
  std::uint64_t pad[4];
};
static_assert(sizeof(Root) == 64);

// The array layer. Descending order, so lower_bound(k) is the greatest key <= k: the
// predecessor an insert links behind, and the first node a scan starts from.
template <std::size_t Slots>
using ArrayLayer = btree::BPlusTree<Key, std::uint64_t, Slots, Slots, std::greater<Key>>;

template <std::size_t Slots>
class UTree final : public Index {
 public:
  explicit UTree(pm::Pool& pool) : pool_(pool) {
    root_ = static_cast<Root*>(open_arena_root(pool, sizeof(Root), kMagic, "utree"));
    list_ = std::make_unique<SlabArena>(pool, &root_->list_dir, sizeof(ListNode), root_->slab_size);
    recover();
  }

  std::string name() const override { return "utree"; }

  void upsert(Key k, Value v) override { put(k, v, true, true); }
  bool insert(Key k, Value v) override { return put(k, v, true, false); }
  bool update(Key k, Value v) override { return put(k, v, false, true); }

  bool remove(Key k) override {
    const std::uint64_t* at = array_.find(k);
    if (!at) return false;
    std::uint64_t off = *at;
    pm::CategoryScope cat(pm::Category::node);
    std::uint64_t* link = pred_link(k);
    *link = node(off)->next;  // the commit: one 8-byte store
    pm::persist(link, 8);
    array_.erase(k);
    list_->release(off);  // reusable: the unlink is durable
    return true;
  }

  std::optional<Value> lookup(Key k) const override {
    const std::uint64_t* at = array_.find(k);
    if (!at) return std::nullopt;
    return node(*at)->value;
  }

  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    std::uint64_t off;
    auto it = array_.lower_bound(start);
    if (!it.valid())
      off = root_->head;
    else if (it.key() == start)
      off = it.value();
    else
      off = node(it.value())->next;
    std::size_t n = 0;
    for (; off && n < count; off = node(off)->next, ++n)
      out.emplace_back(node(off)->key, node(off)->value);
    return n;
  }

  IndexStats stats() const override {
    IndexStats s;
    s.records = array_.size();
    s.dram_bytes = array_.memory_bytes();
    s.pm_bytes = pool_.allocator().block_size(*pool_.root_word()) + list_->pm_bytes();
    s.extra = {{"array_leaves", double(array_.leaf_count())},
               {"array_height", double(array_.height())}};
    return s;
  }

  CheckReport check() const override {
    CheckReport r;
    for (const auto& p : recovery_problems_) r.fail("recovery: " + p);
    for (const auto& p : array_.check()) r.fail("array layer: " + p);
    std::set<std::uint64_t> seen;
    std::size_t n = 0;
    bool first = true;
    Key prev = 0;
    for (std::uint64_t off = root_->head; off && r.problems.size() < 20; off = node(off)->next) {
      if (!list_->is_slot(off) || !seen.insert(off).second) {
        r.fail("list node " + std::to_string(off) + " is not a slot or is reached twice");
        break;
      }
      if (!list_->is_used(off)) r.fail("list node " + std::to_string(off) + " is free");
      const ListNode& ln = *node(off);
      if (!first && ln.key <= prev) r.fail("list keys are not ascending at " + std::to_string(off));
      first = false;
      prev = ln.key;
      const std::uint64_t* at = array_.find(ln.key);
      if (!at || *at != off)
        r.fail("array layer does not point to list node of key " + std::to_string(ln.key));
      ++n;
    }
    if (n != array_.size())
      r.fail("array layer holds " + std::to_string(array_.size()) + " keys, list " +
             std::to_string(n));
    if (n != list_->used_slots())
      r.fail("arena uses " + std::to_string(list_->used_slots()) + " slots, list has " +
             std::to_string(n));
    check_arena_blocks(pool_, {list_.get()}, r);
    r.facts = {{"records", double(n)},
               {"array_leaves", double(array_.leaf_count())},
               {"array_height", double(array_.height())}};
    return r;
  }

 private:
  const ListNode* node(std::uint64_t off) const { return pool_.at<ListNode>(off); }
  ListNode* node(std::uint64_t off) { return pool_.at<ListNode>(off); }

  // The word that points to the first node with key >= k: the predecessor's next, or head.
  std::uint64_t* pred_link(Key k) {
    auto it = array_.lower_bound(k - 1);
    if (k == 0 || !it.valid()) return &root_->head;
    return &node(it.value())->next;
  }

  bool put(Key k, Value v, bool may_insert, bool may_update) {
    pm::CategoryScope cat(pm::Category::node);
    if (std::uint64_t* at = array_.find(k)) {
      if (!may_update) return false;
      ListNode* ln = node(*at);
      ln->value = v;  // in place: one 8-byte store
      pm::persist(&ln->value, 8);
      return true;
    }
    if (!may_insert) return false;
    std::uint64_t* link = pred_link(k);
    std::uint64_t off = list_->alloc();
    ListNode* ln = node(off);
    *ln = {k, v, *link, 0};
    pm::persist(ln, sizeof(ListNode));  // durable before it is linked
    *link = off;                        // the commit: one 8-byte store
    pm::persist(link, 8);
    array_.insert(k, off);  // the structural work happens in DRAM only
    return true;
  }

  // Rebuilds the array layer from the list. Writes nothing (besides creating the arena's
  // directory on a fresh pool), so a crash during recovery leaves the image as it was.
  void recover() {
    list_->open();
    array_.clear();
    bool first = true;
    Key prev = 0;
    for (std::uint64_t off = root_->head; off; off = node(off)->next) {
      if (!list_->mark_used(off)) {
        problem("list node " + std::to_string(off) + " is not a slot or is reached twice");
        break;
      }
      const ListNode& ln = *node(off);
      if (!first && ln.key <= prev) problem("list out of order at key " + std::to_string(ln.key));
      first = false;
      prev = ln.key;
      if (!array_.insert(ln.key, off)) problem("key " + std::to_string(ln.key) + " twice");
    }
    list_->finish();
  }
  void problem(std::string s) {
    if (recovery_problems_.size() < 20) recovery_problems_.push_back(std::move(s));
  }

  pm::Pool& pool_;
  Root* root_ = nullptr;
  std::unique_ptr<SlabArena> list_;
  ArrayLayer<Slots> array_;
  std::vector<std::string> recovery_problems_;
};

}  // namespace
}  // namespace dptree::baselines

namespace dptree {

void register_utree_index() {
  register_index(
      {"utree",
       "uTree (Chen et al., VLDB 2020): DRAM B+-tree array layer over a persistent sorted "
       "list of PM key-value nodes; one node write + one 8-byte link per insert; "
       "single-threaded (the paper's coordinated concurrency is not implemented); option "
       "leaf_slots=16|64",
       true, false, [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
         if (!cfg.pool) throw Error(Errc::invalid_argument, "utree is persistent: give it a pool");
         std::string slots = "64";
         for (const auto& [k, v] : cfg.options) {
           if (k != "leaf_slots")
             throw Error(Errc::invalid_argument,
                         "utree: unknown option '" + k + "': the only option is leaf_slots");
           slots = v;
         }
         if (slots == "64") return std::make_unique<baselines::UTree<64>>(*cfg.pool);
         if (slots == "16") return std::make_unique<baselines::UTree<16>>(*cfg.pool);
         throw Error(Errc::invalid_argument,
                     "utree: leaf_slots must be 16 or 64 (got '" + slots + "')");
       }});
}

}  // namespace dptree
