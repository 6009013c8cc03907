// PiBench wrapper: one shared library that serves any registered index (the benchmark's
// absl-btree included) through PiBench's tree_api (docs/pibench.md). Keys of 1 to 8 bytes go
// to the index's integer form, longer ones to its string form (string_index.h). The index is
// chosen by the environment:
//   DPTREE_PIBENCH_INDEX    index name (default btree; see `dptree bench --list`)
//   DPTREE_PIBENCH_OPTIONS  index options, KEY=VALUE[,KEY=VALUE...]
//   DPTREE_PIBENCH_PM_MODE  pmem (default), eadr, dram or sim
//   DPTREE_PIBENCH_WRITES   checked (default: insert/update as tree_api says) or blind
//   DPTREE_PIBENCH_RECORDS  PiBench's -n, a sizing hint as `dptree bench --records` gives it
// Persistent indexes live in PiBench's --pool_path (opened if it exists, so --skip_load
// works; else created with --pool_size, default 1 GiB), or in a temporary pool file that
// never outlives the process (temp_pool.h).
#include <algorithm>
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

#include "bench/reference_indexes.h"
#include "bench/string_keys.h"
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

// What the integer and the string tree share: the pool, the value handling, the guard.
class TreeBase : public tree_api {
 protected:
  TreeBase(const tree_options_t& opt, const dptree::IndexInfo& info)
      : opt_(opt), blind_(blind_writes()), cfg_(config_from_env(opt)) {
    if (!info.persistent) return;
    const std::size_t size = opt.pool_size ? opt.pool_size : std::size_t{1} << 30;
    if (opt.pool_path.empty()) {
      temp_.emplace();
      pool_ = dptree::pm::Pool::create(temp_->path(), size);
    } else {
      const std::filesystem::path path(opt.pool_path);
      pool_ = std::filesystem::exists(path) ? dptree::pm::Pool::open(path)
                                            : dptree::pm::Pool::create(path, size);
    }
    cfg_.pool = pool_.get();
  }
  // A derived tree's index goes before the pool (members of the derived class are destroyed
  // first), and temp_, declared first, goes last: a throw from the derived constructor
  // removes the temporary file too.

  std::size_t value_size() const { return opt_.value_size < 8 ? opt_.value_size : 8; }
  // Values beyond the index's max_value() lose their top bits (docs/pibench.md).
  Value val(const char* p, std::size_t n) const {
    const Value v = to_u64(p, n);
    return (value_mask_ & (value_mask_ + 1)) == 0 ? v & value_mask_ : v % (value_mask_ + 1);
  }
  // No exception may cross into PiBench: note it and fail the operation.
  template <class F>
  static bool guarded(F&& f) {
    try {
      return f();
    } catch (const std::exception& e) {
      note_failure(e);
      return false;
    }
  }
  // Scan results as PiBench reads them: key_size bytes of key (put_key) then value_size of
  // value per record, in a buffer of this thread's that lives until its next scan.
  template <class Records, class PutKey>
  int pack(const Records& records, char*& out, PutKey&& put_key) const {
    thread_local std::vector<char> packed;
    const std::size_t ks = opt_.key_size, vs = value_size();
    packed.assign(records.size() * (ks + vs), 0);
    char* p = packed.data();
    for (const auto& r : records) {
      put_key(r, p, ks);
      std::memcpy(p + ks, &r.second, vs);
      p += ks + vs;
    }
    out = packed.data();
    return static_cast<int>(records.size());
  }
  // A found value into PiBench's buffer.
  void put_value(Value v, char* out) const { std::memcpy(out, &v, value_size()); }

  tree_options_t opt_;
  bool blind_;
  dptree::IndexConfig cfg_;
  Value value_mask_ = ~Value{0};

 private:
  std::optional<TempPoolFile> temp_;
  std::unique_ptr<dptree::pm::Pool> pool_;
};

// Keys of 1 to 8 bytes: little-endian integers on the index's integer form.
class IntTree final : public TreeBase {
 public:
  IntTree(const tree_options_t& opt, const dptree::IndexInfo& info)
      : TreeBase(opt, info), index_(info.create(cfg_)) {
    value_mask_ = index_->max_value();
  }

  bool find(const char* key, size_t sz, char* value_out) override {
    return guarded([&] {
      auto v = index_->lookup(to_u64(key, sz));
      if (v) put_value(*v, value_out);
      return v.has_value();
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
    records.clear();
    guarded([&] {
      index_->scan(to_u64(key, key_sz), scan_sz > 0 ? static_cast<std::size_t>(scan_sz) : 0,
                   records);
      return true;
    });
    return pack(records, values_out,
                [](const KV& r, char* p, std::size_t n) { std::memcpy(p, &r.first, n); });
  }

 private:
  std::unique_ptr<dptree::Index> index_;
};

// Keys of more than 8 bytes: byte strings on the index's string form.
class StringTree final : public TreeBase {
 public:
  StringTree(const tree_options_t& opt, const dptree::IndexInfo& info)
      : TreeBase(opt, info), index_(info.create_string(cfg_)) {
    value_mask_ = index_->max_value();
  }

  bool find(const char* key, size_t sz, char* value_out) override {
    return guarded([&] {
      auto v = index_->lookup({key, sz});
      if (v) put_value(*v, value_out);
      return v.has_value();
    });
  }
  bool insert(const char* key, size_t key_sz, const char* value, size_t value_sz) override {
    return guarded([&] {
      const Value v = val(value, value_sz);
      return blind_ ? (index_->upsert({key, key_sz}, v), true) : index_->insert({key, key_sz}, v);
    });
  }
  bool update(const char* key, size_t key_sz, const char* value, size_t value_sz) override {
    return guarded([&] {
      const Value v = val(value, value_sz);
      return blind_ ? (index_->upsert({key, key_sz}, v), true) : index_->update({key, key_sz}, v);
    });
  }
  bool remove(const char* key, size_t key_sz) override {
    return guarded([&] { return index_->remove({key, key_sz}); });
  }
  // Each record is key_size bytes of key (a shorter key padded with zero bytes) and its value.
  int scan(const char* key, size_t key_sz, int scan_sz, char*& values_out) override {
    thread_local std::vector<dptree::StringKV> records;
    records.clear();
    guarded([&] {
      index_->scan({key, key_sz}, scan_sz > 0 ? static_cast<std::size_t>(scan_sz) : 0, records);
      return true;
    });
    return pack(records, values_out, [](const dptree::StringKV& r, char* p, std::size_t n) {
      std::memcpy(p, r.first.data(), std::min(n, r.first.size()));
    });
  }

 private:
  std::unique_ptr<dptree::StringIndex> index_;
};

// Keys of 1 to 8 bytes go to any index as integers; longer ones (up to the limit of string
// keys) to an index with a string form; values of 1 to 8 bytes.
void check_sizes(const tree_options_t& opt, const dptree::IndexInfo& info) {
  if (opt.value_size > 8 || opt.value_size == 0)
    throw dptree::Error(dptree::Errc::invalid_argument,
                        "values of 1 to 8 bytes only (PiBench -v/--value_size); got " +
                            std::to_string(opt.value_size));
  if (opt.key_size == 0 || opt.key_size > dptree::kStringKeyMaxBytes)
    throw dptree::Error(dptree::Errc::invalid_argument,
                        "keys of 1 to " + std::to_string(dptree::kStringKeyMaxBytes) +
                            " bytes only (PiBench -k/--key_size); got " +
                            std::to_string(opt.key_size));
  if (opt.key_size > 8 && !info.create_string)
    throw dptree::Error(dptree::Errc::invalid_argument,
                        "index '" + info.name + "' takes keys of 1 to 8 bytes; a key size of " +
                            std::to_string(opt.key_size) +
                            " needs an index that takes string keys (" +
                            dptree::bench::string_index_names() +
                            "): set DPTREE_PIBENCH_INDEX to one, or run PiBench with -k 8");
}

}  // namespace

// Returns nullptr (after a message on stderr) when the request cannot be served.
extern "C" tree_api* create_tree(const tree_options_t& opt) {
  try {
    dptree::bench::register_reference_indexes();
    const dptree::IndexInfo& info = from_var("DPTREE_PIBENCH_INDEX", [](const std::string& v) {
      return std::cref(dptree::find_index(v.empty() ? "btree" : v));
    });
    check_sizes(opt, info);
    if (opt.num_threads > 1 && !info.concurrent)
      throw dptree::Error(dptree::Errc::invalid_argument,
                          "index '" + info.name + "' is not safe for concurrent use: run PiBench " +
                              "with -t 1 or set DPTREE_PIBENCH_INDEX to a concurrent index");
    dptree::pm::set_mode(from_var("DPTREE_PIBENCH_PM_MODE", [](const std::string& v) {
      return dptree::pm::parse_mode(v.empty() ? "pmem" : v);
    }));
    if (opt.key_size > 8) return new StringTree(opt, info);
    return new IntTree(opt, info);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dptree pibench wrapper: cannot create the tree: %s\n", e.what());
    return nullptr;
  }
}
