// The index registry (include/dptree/registry.h). Built-in indexes are registered lazily, on
// the first use of the registry, by register_builtin_indexes() (builtin_indexes.cc): an
// explicit call list, because self-registering static objects in a static library are dropped
// by the linker when nothing references their object file.
#include "dptree/registry.h"

#include <mutex>
#include <string>

#include "dptree/error.h"

namespace dptree {

void register_builtin_indexes();  // builtin_indexes.cc

namespace {

struct Registry {
  std::recursive_mutex mu;  // recursive: the built-in registration calls register_index()
  std::vector<IndexInfo> indexes;
  bool builtins_done = false;
};

Registry& registry() {
  static Registry r;
  return r;
}

// Runs the built-in registration once; re-entrant calls (from inside it) return at once.
void ensure_builtins(Registry& r) {
  if (r.builtins_done) return;
  r.builtins_done = true;
  register_builtin_indexes();
}

std::string known_names(const std::vector<IndexInfo>& v) {
  std::string s;
  for (const auto& i : v) s += (s.empty() ? "" : ", ") + i.name;
  return s;
}

}  // namespace

const std::vector<IndexInfo>& registered_indexes() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  ensure_builtins(r);
  return r.indexes;
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
  auto& r = registry();
  std::lock_guard lock(r.mu);
  ensure_builtins(r);
  if (info.name.empty() || !info.create)
    throw Error(Errc::invalid_argument,
                "register_index: an index needs a non-empty name and a create function");
  for (const auto& i : r.indexes)
    if (i.name == info.name)
      throw Error(Errc::invalid_argument, "register_index: an index named '" + info.name +
                                              "' is already registered; pick another name");
  r.indexes.push_back(std::move(info));
}

}  // namespace dptree
