// TIPS behind the common Index interface (index.h), its options, and make_index.
#include <memory>
#include <string>

#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/tips.h"
#include "tips/engine.h"

namespace dptree::tips {

namespace {

std::uint64_t parse_u64(const std::string& name, const std::string& text, std::uint64_t lo,
                        std::uint64_t hi) {
  std::uint64_t x = 0;
  std::size_t used = 0;
  try {
    x = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || x < lo || x > hi)
    throw Error(Errc::invalid_argument, "tips: option " + name + "='" + text +
                                            "' is not an integer in [" + std::to_string(lo) + ", " +
                                            std::to_string(hi) + "]: pass one");
  return x;
}

class TipsIndex final : public Index {
 public:
  TipsIndex(pm::Pool& pool, std::shared_ptr<const Adapter> a, const Options& o)
      : e_(std::make_unique<detail::Engine>(pool, std::move(a), o)) {}
  std::string name() const override { return "tips-" + e_->adapter().name(); }
  void upsert(Key k, Value v) override { e_->write(detail::Engine::Kind::upsert, k, v); }
  bool insert(Key k, Value v) override { return e_->write(detail::Engine::Kind::insert, k, v); }
  bool update(Key k, Value v) override { return e_->write(detail::Engine::Kind::update, k, v); }
  bool remove(Key k) override { return e_->write(detail::Engine::Kind::remove, k, 0); }
  std::optional<Value> lookup(Key k) const override { return e_->lookup(k); }
  std::size_t scan(Key s, std::size_t n, std::vector<KV>& out) const override {
    return e_->scan(s, n, out);
  }
  IndexStats stats() const override { return e_->stats(); }
  CheckReport check() const override { return e_->check(); }

 private:
  std::unique_ptr<detail::Engine> e_;
};

}  // namespace

Options Options::from_map(const std::map<std::string, std::string>& m) {
  Options o;
  for (const auto& [k, v] : m) {
    if (k == "partitions")
      o.partitions = static_cast<unsigned>(parse_u64(k, v, 1, 64));
    else if (k == "lanes")
      o.lanes = static_cast<unsigned>(parse_u64(k, v, 1, 64));
    else if (k == "lane_records")
      o.lane_records = parse_u64(k, v, 16, 1ull << 26);
    else if (k == "ulog_lines")
      o.ulog_lines = parse_u64(k, v, 256, 1ull << 20);
    else if (k == "mlog_entries")
      o.mlog_entries = parse_u64(k, v, 64, 1ull << 20);
    else if (k == "cache_entries")
      o.cache_entries = parse_u64(k, v, 16, 1ull << 30);
    else if (k == "replay")
      o.background =
          v == "background" ? true
          : v == "inline"
              ? false
              : throw Error(Errc::invalid_argument,
                            "tips: option replay='" + v + "': pass 'background' or 'inline'");
    else if (k == "replay_every")
      o.replay_every = parse_u64(k, v, 1, 1ull << 30);
    else if (k == "max_writers")
      o.max_writers = static_cast<unsigned>(parse_u64(k, v, 1, 64));
    else
      throw Error(Errc::invalid_argument,
                  "tips: unknown option '" + k +
                      "': the options are partitions, lanes, lane_records, ulog_lines, "
                      "mlog_entries, cache_entries, replay, replay_every, max_writers "
                      "(docs/tips.md)");
  }
  return o;
}

std::unique_ptr<Index> make_index(pm::Pool& pool, std::shared_ptr<const Adapter> adapter,
                                  const Options& options) {
  if (!adapter) throw Error(Errc::invalid_argument, "tips::make_index: pass an adapter");
  return std::make_unique<TipsIndex>(pool, std::move(adapter), options);
}

}  // namespace dptree::tips
