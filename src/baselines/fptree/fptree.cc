// FPTree's options, its two fronts (integer keys: Index; byte-string keys: StringIndex) over
// the one tree (tree.h), and its registration as `fptree`.
#include <memory>
#include <string>

#include "baselines/fptree/tree.h"
#include "baselines/peers.h"
#include "dptree/string_index.h"
#include "registry/index_table.h"
#include "registry/option_table.h"

namespace dptree::baselines {
namespace {

using fptree::IntKeys;
using fptree::StringKeys;
using fptree::Tree;

class FPTreeInts final : public Index {
 public:
  FPTreeInts(pm::Pool& pool, std::size_t cap, bool explicit_cap, bool shared)
      : t_(pool, cap, explicit_cap, shared) {}

  std::string name() const override { return "fptree"; }
  void upsert(Key k, Value v) override { t_.write(k, v, true, true); }
  bool insert(Key k, Value v) override { return t_.write(k, v, true, false); }
  bool update(Key k, Value v) override { return t_.write(k, v, false, true); }
  bool remove(Key k) override { return t_.remove(k); }
  std::optional<Value> lookup(Key k) const override { return t_.lookup(k); }
  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    return t_.scan(start, count, out);
  }
  IndexStats stats() const override { return t_.stats(); }
  CheckReport check() const override { return t_.check(); }

 private:
  Tree<IntKeys> t_;
};

class FPTreeStrings final : public StringIndex {
 public:
  FPTreeStrings(pm::Pool& pool, std::size_t cap, bool explicit_cap, bool shared)
      : t_(pool, cap, explicit_cap, shared) {}

  std::string name() const override { return "fptree"; }
  void upsert(std::string_view k, Value v) override { t_.write(key(k), v, true, true); }
  bool insert(std::string_view k, Value v) override { return t_.write(key(k), v, true, false); }
  bool update(std::string_view k, Value v) override { return t_.write(key(k), v, false, true); }
  bool remove(std::string_view k) override { return t_.remove(key(k)); }
  std::optional<Value> lookup(std::string_view k) const override { return t_.lookup(key(k)); }
  std::size_t scan(std::string_view start, std::size_t count,
                   std::vector<StringKV>& out) const override {
    return t_.scan(key(start), count, out);
  }
  std::size_t max_key_bytes() const override { return StringKeys::kMaxKeyBytes; }
  IndexStats stats() const override { return t_.stats(); }
  CheckReport check() const override { return t_.check(); }

 private:
  static std::string_view key(std::string_view k) {
    check_string_key(k, StringKeys::kMaxKeyBytes, "fptree");
    return k;
  }
  Tree<StringKeys> t_;
};

struct FPTreeOptions {
  std::size_t leaf_capacity = fptree::kMaxCapacity;
};

const option_values::OptionTable<FPTreeOptions>& fptree_options() {
  static const auto t = option_values::OptionTable<FPTreeOptions>("fptree").whole_in(
      "leaf_capacity", &FPTreeOptions::leaf_capacity, {2, fptree::kMaxCapacity},
      "slots per PM leaf (one bitmap word and one fingerprint line hold them); stored in the "
      "pool, which keeps its own");
  return t;
}

template <class Front>
std::unique_ptr<Front> make(const IndexConfig& cfg) {
  pm::Pool& pool = require_pool(cfg, "fptree");
  const auto o = fptree_options().parse(cfg.options);
  return std::make_unique<Front>(pool, o.leaf_capacity, cfg.options.contains("leaf_capacity"),
                                 cfg.threads != 1);
}

}  // namespace

std::unique_ptr<Index> make_fptree(const IndexConfig& cfg) {
  return make<FPTreeInts>(cfg);
}

}  // namespace dptree::baselines

namespace dptree {

void register_paper_peers() {
  IndexInfo info{"fptree",
                 "FPTree (SIGMOD'16): DRAM B+-tree inner nodes rebuilt on open, PM leaves with "
                 "bitmap and one-byte fingerprints, split micro-log; assumes 8-byte atomic "
                 "stores; concurrent through the paper's lock fallback (leaf locks, splits "
                 "exclusive); no RTM (HTM) path, so always the fallback; integer and string keys "
                 "(string keys out of line in PM key blobs)",
                 true,
                 true,
                 baselines::make_fptree,
                 baselines::fptree_options().docs()};
  info.create_string = [](const IndexConfig& cfg) -> std::unique_ptr<StringIndex> {
    return baselines::make<baselines::FPTreeStrings>(cfg);
  };
  info.tests = {.fuzz = TestPlan::Fuzz{{{"leaf_capacity", "8"}}},
                .fuzz_strings = TestPlan::Fuzz{{{"leaf_capacity", "8"}}, 512 * 1024},
                .kill = TestPlan::Kill{2, {{"leaf_capacity", "8"}}}};
  info.display_name = "FPTree";
  add_builtin_index(std::move(info));
}

}  // namespace dptree
