// The index registry's public functions (include/dptree/registry.h). The built-in indexes
// are registered once, on the first use of the registry, by register_builtin_indexes()
// (builtin_indexes.cc): an explicit call list, because self-registering static objects in a
// static library are dropped by the linker when nothing references their object file.
#include "dptree/registry.h"

#include <mutex>
#include <string>

#include "dptree/error.h"
#include "registry/index_table.h"

namespace dptree {

void register_builtin_indexes();  // builtin_indexes.cc

namespace {

void ensure_builtins() {
  static std::once_flag once;
  std::call_once(once, register_builtin_indexes);
}

std::string known_names(const std::vector<IndexInfo>& v) {
  std::string s;
  for (const auto& i : v) s += (s.empty() ? "" : ", ") + i.name;
  return s;
}

}  // namespace

const std::vector<IndexInfo>& registered_indexes() {
  ensure_builtins();
  return index_table();
}

const IndexInfo& find_index(const std::string& name) {
  const auto& all = registered_indexes();
  for (const auto& i : all)
    if (i.name == name) return i;
  throw Error(Errc::invalid_argument, "unknown index '" + name +
                                          "': choose one of the registered indexes (" +
                                          known_names(all) + ")");
}

void register_index(IndexInfo info) {
  ensure_builtins();
  add_builtin_index(std::move(info));
}

}  // namespace dptree
