// TIPS behind the common Index interface (index.h), and make_index.
#include <memory>
#include <string>

#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/tips.h"
#include "tips/engine.h"

namespace dptree::tips {

namespace {

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

std::unique_ptr<Index> make_index(pm::Pool& pool, std::shared_ptr<const Adapter> adapter,
                                  const Options& options) {
  if (!adapter) throw Error(Errc::invalid_argument, "tips::make_index: pass an adapter");
  return std::make_unique<TipsIndex>(pool, std::move(adapter), options);
}

}  // namespace dptree::tips
