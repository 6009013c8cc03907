// ROART behind the project's two interfaces: integer keys as their 8 big-endian bytes (so
// the trie orders them as numbers), and byte-string keys as they are.
#include "baselines/roart/roart.h"

#include <cstring>
#include <memory>
#include <string>

#include "baselines/roart/tree.h"
#include "dptree/error.h"
#include "dptree/registry.h"
#include "registry/index_table.h"

namespace dptree {

const char* roart_current_phase() {
  return baselines::roart::current_phase();
}

namespace baselines::roart {
namespace {

struct BigEndian {
  char b[8];
  explicit BigEndian(Key k) {
    Key x = __builtin_bswap64(k);
    std::memcpy(b, &x, 8);
  }
  operator std::string_view() const { return {b, 8}; }
};

Key from_big_endian(std::string_view s) {
  Key x = 0;
  std::memcpy(&x, s.data(), 8);
  return __builtin_bswap64(x);
}

class RoartInts final : public Index {
 public:
  RoartInts(pm::Pool& p, unsigned threads) : t_(p, kFormInts, threads) {}
  std::string name() const override { return "roart"; }
  void upsert(Key k, Value v) override { t_.put(BigEndian(k), v, true, true); }
  bool insert(Key k, Value v) override { return t_.put(BigEndian(k), v, true, false); }
  bool update(Key k, Value v) override { return t_.put(BigEndian(k), v, false, true); }
  bool remove(Key k) override { return t_.remove(BigEndian(k)); }
  std::optional<Value> lookup(Key k) const override { return t_.lookup(BigEndian(k)); }
  std::size_t scan(Key s, std::size_t n, std::vector<KV>& out) const override {
    return t_.scan(BigEndian(s), n,
                   [&](std::string_view k, Value v) { out.emplace_back(from_big_endian(k), v); });
  }
  IndexStats stats() const override { return t_.stats(); }
  CheckReport check() const override { return t_.check(); }

 private:
  Tree t_;
};

class RoartStrings final : public StringIndex {
 public:
  RoartStrings(pm::Pool& p, unsigned threads) : t_(p, kFormStrings, threads) {}
  std::string name() const override { return "roart"; }
  void upsert(std::string_view k, Value v) override { t_.put(ok(k), v, true, true); }
  bool insert(std::string_view k, Value v) override { return t_.put(ok(k), v, true, false); }
  bool update(std::string_view k, Value v) override { return t_.put(ok(k), v, false, true); }
  bool remove(std::string_view k) override { return t_.remove(ok(k)); }
  std::optional<Value> lookup(std::string_view k) const override { return t_.lookup(ok(k)); }
  std::size_t scan(std::string_view s, std::size_t n, std::vector<StringKV>& out) const override {
    return t_.scan(s, n, [&](std::string_view k, Value v) { out.emplace_back(k, v); });
  }
  std::size_t max_key_bytes() const override { return kMaxKeyBytes; }
  IndexStats stats() const override { return t_.stats(); }
  CheckReport check() const override { return t_.check(); }

 private:
  static std::string_view ok(std::string_view k) {
    check_string_key(k, kMaxKeyBytes, "roart");
    return k;
  }
  Tree t_;
};

pm::Pool& pool_for(const IndexConfig& cfg) {
  if (!cfg.pool) throw Error(Errc::invalid_argument, "roart is persistent: give it a pool");
  if (!cfg.options.empty())
    throw Error(Errc::invalid_argument,
                "roart takes no index options (got '" + cfg.options.begin()->first +
                    "'): its leaf arrays hold 64 entries and its nodes are ART's four sizes");
  return *cfg.pool;
}

}  // namespace
}  // namespace baselines::roart

void register_roart_index() {
  using namespace baselines::roart;
  IndexInfo info{
      "roart",
      "ROART (Ma et al., FAST 2021): persistent ART (nodes of 4, 16, 48 and 256 children, key "
      "bytes packed into child words) whose leaves are compacted into unsorted 64-entry leaf "
      "arrays with fingerprints; out-of-place leaves; every change made durable by one 8-byte "
      "store; lock-free readers, writers serialised by one lock; integer and string keys",
      true, true, [](const IndexConfig& cfg) -> std::unique_ptr<Index> {
        return std::make_unique<RoartInts>(pool_for(cfg), cfg.threads);
      }};
  info.create_string = [](const IndexConfig& cfg) -> std::unique_ptr<StringIndex> {
    return std::make_unique<RoartStrings>(pool_for(cfg), cfg.threads);
  };
  add_builtin_index(std::move(info));
}

}  // namespace dptree
