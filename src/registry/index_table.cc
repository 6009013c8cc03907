// The table of registered indexes (index_table.h) that find_index() reads.
#include "registry/index_table.h"

#include <mutex>
#include <string>

#include "dptree/error.h"
#include "registry/option_values.h"

namespace dptree {

namespace {

struct Table {
  std::mutex mu;
  std::vector<IndexInfo> indexes;
};

Table& table() {
  static Table t;
  return t;
}

}  // namespace

void add_builtin_index(IndexInfo info) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  if (info.name.empty() || !info.create)
    throw Error(Errc::invalid_argument,
                "register_index: an index needs a non-empty name and a create function");
  if (info.display_name.empty()) info.display_name = info.name;
  for (const auto& i : t.indexes) {
    if (i.name == info.name)
      throw Error(Errc::invalid_argument, "register_index: an index named '" + info.name +
                                              "' is already registered; pick another name");
    // Pages and plots tell indexes apart by their display names.
    if (i.display_name == info.display_name)
      throw Error(Errc::invalid_argument, "register_index: index '" + i.name +
                                              "' is already displayed as '" + info.display_name +
                                              "'; give '" + info.name + "' another display name");
  }
  t.indexes.push_back(std::move(info));
}

const std::vector<IndexInfo>& index_table() {
  return table().indexes;
}

pm::Pool& require_pool(const IndexConfig& c, const std::string& index) {
  if (!c.pool)
    throw Error(Errc::invalid_argument,
                "index '" + index + "' is persistent: give it a pool (IndexConfig::pool)");
  return *c.pool;
}

void add_persistent_index(const std::string& name, std::string display_name,
                          std::string description, bool concurrent, std::vector<OptionDoc> docs,
                          TestPlan tests, MakeInPool make) {
  add_builtin_index({.name = name,
                     .description = std::move(description),
                     .persistent = true,
                     .concurrent = concurrent,
                     .create = [name, make = std::move(make)](
                                   const IndexConfig& c) { return make(require_pool(c, name), c); },
                     .options = std::move(docs),
                     .tests = std::move(tests),
                     .display_name = std::move(display_name)});
}

void add_persistent_index(const std::string& name, std::string display_name,
                          std::string description, bool concurrent, std::string why_none,
                          TestPlan tests, MakeInPool make) {
  add_persistent_index(name, std::move(display_name), std::move(description), concurrent,
                       std::vector<OptionDoc>{}, std::move(tests),
                       [name, why_none = std::move(why_none), make = std::move(make)](
                           pm::Pool& pool, const IndexConfig& c) {
                         option_values::refuse_options(name, c.options, why_none);
                         return make(pool, c);
                       });
}

}  // namespace dptree
