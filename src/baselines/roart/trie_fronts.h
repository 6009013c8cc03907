// The integer and string interfaces over a trie engine of byte-string keys (ROART's Tree,
// PACTree's PacTree): integer keys as their big-endian bytes, string keys checked and passed
// on. The engine opens with (pool, form, threads, extra...) and has put, remove, lookup, scan,
// drain, stats and check.
#pragma once

#include <memory>
#include <string>

#include "baselines/roart/big_endian.h"
#include "baselines/roart/layout.h"
#include "dptree/index.h"
#include "dptree/pm/pool.h"
#include "dptree/string_index.h"

namespace dptree::baselines {

template <class Engine>
class TrieInts final : public Index {
 public:
  template <class... Extra>
  TrieInts(std::string name, pm::Pool& p, unsigned threads, Extra... extra)
      : name_(std::move(name)),
        t_(std::make_unique<Engine>(p, roart::kFormInts, threads, extra...)) {}
  std::string name() const override { return name_; }
  void upsert(Key k, Value v) override { t_->put(BigEndian(k), v, true, true); }
  bool insert(Key k, Value v) override { return t_->put(BigEndian(k), v, true, false); }
  bool update(Key k, Value v) override { return t_->put(BigEndian(k), v, false, true); }
  bool remove(Key k) override { return t_->remove(BigEndian(k)); }
  std::optional<Value> lookup(Key k) const override { return t_->lookup(BigEndian(k)); }
  std::size_t scan(Key s, std::size_t n, std::vector<KV>& out) const override {
    return t_->scan(BigEndian(s), n,
                    [&](std::string_view k, Value v) { out.emplace_back(from_big_endian(k), v); });
  }
  void drain() override { t_->drain(); }
  IndexStats stats() const override { return t_->stats(); }
  CheckReport check() const override { return t_->check(); }

 private:
  std::string name_;
  std::unique_ptr<Engine> t_;
};

template <class Engine>
class TrieStrings final : public StringIndex {
 public:
  template <class... Extra>
  TrieStrings(std::string name, pm::Pool& p, unsigned threads, Extra... extra)
      : name_(std::move(name)),
        t_(std::make_unique<Engine>(p, roart::kFormStrings, threads, extra...)) {}
  std::string name() const override { return name_; }
  void upsert(std::string_view k, Value v) override { t_->put(ok(k), v, true, true); }
  bool insert(std::string_view k, Value v) override { return t_->put(ok(k), v, true, false); }
  bool update(std::string_view k, Value v) override { return t_->put(ok(k), v, false, true); }
  bool remove(std::string_view k) override { return t_->remove(ok(k)); }
  std::optional<Value> lookup(std::string_view k) const override { return t_->lookup(ok(k)); }
  std::size_t scan(std::string_view s, std::size_t n, std::vector<StringKV>& out) const override {
    return t_->scan(ok(s), n, [&](std::string_view k, Value v) { out.emplace_back(k, v); });
  }
  void drain() override { t_->drain(); }
  std::size_t max_key_bytes() const override { return roart::kMaxKeyBytes; }
  IndexStats stats() const override { return t_->stats(); }
  CheckReport check() const override { return t_->check(); }

 private:
  std::string_view ok(std::string_view k) const {
    check_string_key(k, roart::kMaxKeyBytes, name_);
    return k;
  }
  std::string name_;
  std::unique_ptr<Engine> t_;
};

}  // namespace dptree::baselines
