// The table behind the index registry (include/dptree/registry.h). Index layers add their
// built-in indexes here, from the registration calls that src/builtin_indexes.cc makes; the
// registry's public functions (src/registry.cc, in the top library) run those calls once
// before any look-up. Kept apart so that no layer depends on the library above it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dptree/registry.h"

namespace dptree {

// Appends an index; throws Error(invalid_argument) for an empty name, a missing create
// function or a name already taken.
void add_builtin_index(IndexInfo info);
// The indexes added so far, in order. The reference stays valid; its contents grow.
const std::vector<IndexInfo>& index_table();

// The pool of a persistent index's configuration; throws Error(invalid_argument) naming
// `index` when there is none.
pm::Pool& require_pool(const IndexConfig& c, const std::string& index);

// Adds a persistent index that takes the options `docs` describes: `make` builds it in the
// configuration's pool, parsing the configuration's options. `display_name`: its name on pages
// (IndexInfo::display_name); `tests`: what the shared test suites run on it (registry.h,
// TestPlan).
using MakeInPool = std::function<std::unique_ptr<Index>(pm::Pool&, const IndexConfig&)>;
void add_persistent_index(const std::string& name, std::string display_name,
                          std::string description, bool concurrent, std::vector<OptionDoc> docs,
                          TestPlan tests, MakeInPool make);
// The same for an index that takes no options (`why_none` says why, in the refusal of one).
void add_persistent_index(const std::string& name, std::string display_name,
                          std::string description, bool concurrent, std::string why_none,
                          TestPlan tests, MakeInPool make);

}  // namespace dptree
