// PiBench wrapper: one shared library that serves any registered index through PiBench's
// tree_api (docs/pibench.md). The index is chosen by the environment:
//   DPTREE_PIBENCH_INDEX    index name (default btree; see `dptree bench --list`)
//   DPTREE_PIBENCH_OPTIONS  index options, KEY=VALUE[,KEY=VALUE...]
//   DPTREE_PIBENCH_PM_MODE  pmem (default), eadr, dram or sim
//   DPTREE_PIBENCH_WRITES   checked (default: insert/update as tree_api says) or blind
//   DPTREE_PIBENCH_RECORDS  PiBench's -n, a sizing hint as `dptree bench --records` gives it
// Persistent indexes live in PiBench's --pool_path (opened if it exists, so --skip_load
// works; else created with --pool_size, default 1 GiB), or in a temporary pool file that
// never outlives the process (temp_pool.h).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "failure_log.h"
#include "temp_pool.h"
#include "tree_api.hpp"

// PiBench's options struct as its binary lays it out (LP64, libstdc++'s 32-byte std::string);
// the test that loads this library checks the same number.
static_assert(sizeof(tree_options_t) == 64, "tree_options_t is not PiBench's layout");

namespace {

using dptree::Key;
using dptree::KV;
using dptree::Value;
using dptree_pibench::note_failure;
using dptree_pibench::TempPoolFile;

std::string env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// PiBench passes keys and values as little-endian byte strings of up to 8 bytes.
std::uint64_t to_u64(const char* p, std::size_t n) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, n < 8 ? n : 8);
  return v;
}

// Runs a parse of variable `var`'s value; its error names the variable.
template <class F>
auto from_var(const char* var, F&& parse) {
  try {
    return parse(env(var, ""));
  } catch (const dptree::Error& e) {
    throw dptree::Error(e.code(), std::string(var) + ": " + e.what());
  }
}

// checked: insert fails on a present key and update on an absent one, as tree_api's results
// say. blind: both write whatever is there and return true, the writes `dptree bench` and
// the DPTree paper measure; DPTree then skips its lookup first, TIPS its probe of the
// B+-tree on a cache miss (docs/pibench.md, Write semantics).
bool blind_writes() {
  const std::string w = env("DPTREE_PIBENCH_WRITES", "checked");
  if (w != "checked" && w != "blind")
    throw dptree::Error(dptree::Errc::invalid_argument,
                        "DPTREE_PIBENCH_WRITES='" + w + "': use checked or blind");
  return w == "blind";
}

// PiBench does not tell a tree how many records it will load; some indexes size DRAM
// structures from it (tips-btree's cache: a quarter of the records, as in `dptree bench`).
std::size_t expected_records() {
  const std::string n = env("DPTREE_PIBENCH_RECORDS", "0");
  if (n.size() <= 19 && n.find_first_not_of("0123456789") == std::string::npos)
    return static_cast<std::size_t>(std::stoull(n));
  throw dptree::Error(dptree::Errc::invalid_argument,
                      "DPTREE_PIBENCH_RECORDS='" + n +
                          "': give the record count PiBench loads (its -n), e.g. 1000000");
}

dptree::IndexConfig config_from_env(const tree_options_t& opt) {
  dptree::IndexConfig cfg;
  cfg.threads = static_cast<unsigned>(opt.num_threads);
  cfg.expected_records = expected_records();
  std::stringstream options(env("DPTREE_PIBENCH_OPTIONS", ""));
  for (std::string kv; std::getline(options, kv, ',');) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw dptree::Error(dptree::Errc::invalid_argument,
                          "DPTREE_PIBENCH_OPTIONS item '" + kv + "': write KEY=VALUE");
    cfg.options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return cfg;
}

class DptreeTree final : public tree_api {
 public:
  DptreeTree(const tree_options_t& opt, const dptree::IndexInfo& info)
      : opt_(opt), blind_(blind_writes()) {
    dptree::IndexConfig cfg = config_from_env(opt);
    if (info.persistent) {
      const std::size_t size = opt.pool_size ? opt.pool_size : std::size_t{1} << 30;
      if (opt.pool_path.empty()) {
        temp_.emplace();
        pool_ = dptree::pm::Pool::create(temp_->path(), size);
      } else {
        const std::filesystem::path path(opt.pool_path);
        pool_ = std::filesystem::exists(path) ? dptree::pm::Pool::open(path)
                                              : dptree::pm::Pool::create(path, size);
      }
      cfg.pool = pool_.get();
    }
    // A throw from here on destroys pool_ and then temp_, which removes the file.
    index_ = info.create(cfg);
    value_mask_ = index_->max_value();  // values beyond it lose their top bits (docs/pibench.md)
  }

  ~DptreeTree() override {
    index_.reset();  // before its pool; temp_ (declared first) goes last
    pool_.reset();
  }

  bool find(const char* key, size_t sz, char* value_out) override {
    return guarded([&] {
      auto v = index_->lookup(to_u64(key, sz));
      if (!v) return false;
      std::memcpy(value_out, &*v, value_size());
      return true;
    });
  }
  bool insert(const char* key, size_t key_sz, const char* value, size_t value_sz) override {
    return guarded([&] {
      const Key k = to_u64(key, key_sz);
      const Value v = val(value, value_sz);
      return blind_ ? (index_->upsert(k, v), true) : index_->insert(k, v);
    });
  }
  bool update(const char* key, size_t key_sz, const char* value, size_t value_sz) override {
    return guarded([&] {
      const Key k = to_u64(key, key_sz);
      const Value v = val(value, value_sz);
      return blind_ ? (index_->upsert(k, v), true) : index_->update(k, v);
    });
  }
  bool remove(const char* key, size_t key_sz) override {
    return guarded([&] { return index_->remove(to_u64(key, key_sz)); });
  }
  int scan(const char* key, size_t key_sz, int scan_sz, char*& values_out) override {
    thread_local std::vector<KV> records;
    thread_local std::vector<char> packed;
    records.clear();
    packed.clear();
    int n = 0;
    guarded([&] {
      index_->scan(to_u64(key, key_sz), scan_sz > 0 ? static_cast<std::size_t>(scan_sz) : 0,
                   records);
      const std::size_t ks = key_size(), vs = value_size();
      packed.resize(records.size() * (ks + vs));
      char* p = packed.data();
      for (const KV& r : records) {
        std::memcpy(p, &r.first, ks);
        std::memcpy(p + ks, &r.second, vs);
        p += ks + vs;
      }
      n = static_cast<int>(records.size());
      return true;
    });
    values_out = packed.data();
    return n;
  }

 private:
  std::size_t key_size() const { return opt_.key_size < 8 ? opt_.key_size : 8; }
  std::size_t value_size() const { return opt_.value_size < 8 ? opt_.value_size : 8; }
  Value val(const char* p, std::size_t n) const {
    const Value v = to_u64(p, n);
    return (value_mask_ & (value_mask_ + 1)) == 0 ? v & value_mask_ : v % (value_mask_ + 1);
  }
  // No exception may cross into PiBench: note it and fail the operation.
  template <class F>
  bool guarded(F&& f) {
    try {
      return f();
    } catch (const std::exception& e) {
      note_failure(e);
      return false;
    }
  }

  tree_options_t opt_;
  bool blind_;
  std::optional<TempPoolFile> temp_;  // first member: destroyed after the pool
  std::unique_ptr<dptree::pm::Pool> pool_;
  std::unique_ptr<dptree::Index> index_;
  Value value_mask_ = ~Value{0};
};

}  // namespace

// Returns nullptr (after a message on stderr) when the request cannot be served.
extern "C" tree_api* create_tree(const tree_options_t& opt) {
  try {
    if (opt.key_size > 8 || opt.value_size > 8 || opt.key_size == 0 || opt.value_size == 0)
      throw dptree::Error(dptree::Errc::invalid_argument,
                          "keys and values of 1 to 8 bytes only (PiBench -k/--key_size and "
                          "-v/--value_size); got " +
                              std::to_string(opt.key_size) + " and " +
                              std::to_string(opt.value_size));
    const dptree::IndexInfo& info = from_var("DPTREE_PIBENCH_INDEX", [](const std::string& v) {
      return std::cref(dptree::find_index(v.empty() ? "btree" : v));
    });
    if (opt.num_threads > 1 && !info.concurrent)
      throw dptree::Error(dptree::Errc::invalid_argument,
                          "index '" + info.name + "' is not safe for concurrent use: run PiBench " +
                              "with -t 1 or set DPTREE_PIBENCH_INDEX to a concurrent index");
    dptree::pm::set_mode(from_var("DPTREE_PIBENCH_PM_MODE", [](const std::string& v) {
      return dptree::pm::parse_mode(v.empty() ? "pmem" : v);
    }));
    return new DptreeTree(opt, info);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dptree pibench wrapper: cannot create the tree: %s\n", e.what());
    return nullptr;
  }
}
