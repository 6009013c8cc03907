// The first TIPS plug-in: the project's volatile B+-tree (src/btree/btree.h), unchanged but
// for its memory policy: tips::PmNodes puts its nodes in PM through tips::alloc, stores
// self-relative pointers, and calls tips::will_write before each store. Registered as
// `tips-btree`.
#include <memory>
#include <new>

#include "btree/btree.h"
#include "dptree/error.h"
#include "dptree/registry.h"
#include "dptree/tips.h"
#include "registry/index_table.h"
#include "tips/options.h"

namespace dptree {
namespace {

// 56 slots: a node plus TIPS's 64-byte block header fits a 1 KiB allocator block.
using PmTree = btree::BPlusTree<Key, Value, 56, 56, std::less<Key>, tips::PmNodes>;
static_assert(PmTree::kLeafBytes + 64 <= 1024 && PmTree::kInnerBytes + 64 <= 1024);

class BTreeAdapter final : public tips::Adapter {
 public:
  std::string name() const override { return "btree"; }
  std::size_t header_bytes() const override { return sizeof(PmTree); }
  void create(void* h) const override { new (h) PmTree(); }
  bool insert(void* h, Key k, Value v) const override { return t(h).insert(k, v); }
  bool update(void* h, Key k, Value v) const override { return t(h).update(k, v); }
  void upsert(void* h, Key k, Value v) const override { t(h).insert_or_assign(k, v); }
  bool remove(void* h, Key k) const override { return t(h).erase(k); }
  std::optional<Value> lookup(const void* h, Key k) const override {
    const Value* v = t(h).find(k);
    return v ? std::optional<Value>(*v) : std::nullopt;
  }
  std::size_t scan(const void* h, Key s, std::size_t n, std::vector<KV>& out) const override {
    std::size_t got = 0;
    for (auto it = t(h).lower_bound(s); it.valid() && got < n; ++it, ++got)
      out.emplace_back(it.key(), it.value());
    return got;
  }
  std::size_t size(const void* h) const override { return t(h).size(); }
  void for_each_block(const void* h, const std::function<void(const void*)>& fn) const override {
    t(h).for_each_node([&](const void* n, std::size_t) { fn(n); });
  }
  std::vector<std::string> check(const void* h) const override { return t(h).check(); }
  std::string validate(
      const void* h, const std::function<bool(const void*, std::size_t)>& node_ok) const override {
    return t(h).validate_untrusted(node_ok);
  }

 private:
  // The tree object lives in PM; it is never destroyed (its nodes are PM state).
  static PmTree& t(void* h) { return *std::launder(static_cast<PmTree*>(h)); }
  static const PmTree& t(const void* h) { return *std::launder(static_cast<const PmTree*>(h)); }
};

}  // namespace

void register_tips_indexes() {
  IndexInfo info{"tips-btree",
                 "TIPS over the volatile B+-tree: DRAM hash cache + per-thread PM OLog, "
                 "background replay into the B+-tree in PM with UNO undo logging; concurrent",
                 true,
                 true,
                 [](const IndexConfig& c) -> std::unique_ptr<Index> {
                   pm::Pool& pool = require_pool(c, "tips-btree");
                   tips::Options o = tips::Options::from_map(c.options);
                   if (!c.options.contains("cache_entries") && c.expected_records)
                     o.cache_entries = std::max<std::size_t>(c.expected_records / 4, 1 << 16);
                   if (!c.options.contains("lanes") && c.threads > o.lanes)
                     o.lanes = std::min(c.threads, 64u);
                   return tips::make_index(pool, std::make_shared<BTreeAdapter>(), o);
                 },
                 tips::option_docs(),
                 {},
                 // Short lanes, small logs and a tiny cache. The fuzzer replays inline every 12
                 // writes (one execution, one thread); the killed children in the background.
                 TestPlan{.fuzz = TestPlan::Fuzz{{{"replay", "inline"},
                                                  {"replay_every", "12"},
                                                  {"partitions", "2"},
                                                  {"lanes", "1"},
                                                  {"lane_records", "64"},
                                                  {"ulog_lines", "256"},
                                                  {"mlog_entries", "64"},
                                                  {"cache_entries", "40"}},
                                                 640 * 1024},
                          .kill = TestPlan::Kill{2,
                                                 {{"replay", "background"},
                                                  {"partitions", "2"},
                                                  {"lane_records", "64"},
                                                  {"ulog_lines", "256"},
                                                  {"mlog_entries", "64"},
                                                  {"cache_entries", "40"}}}}};
  info.display_name = "TIPS (B+-tree)";
  add_builtin_index(std::move(info));
}

}  // namespace dptree
