// Every index of the project registers under a name; the benchmark, the tests' fixtures and
// the PiBench wrapper create indexes through this registry.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dptree/index.h"
#include "dptree/string_index.h"

namespace dptree {

namespace pm {
class Pool;
}

struct IndexConfig {
  // The pool a persistent index lives in (nullptr for volatile indexes). The index keeps its
  // root in the pool's root word: on a pool that already holds one, the factory opens (and so
  // recovers) that index instead of creating a new one; a pool holding another index's root it
  // refuses with Error(wrong_index), writing nothing (`dptree check` finds a pool's index so).
  pm::Pool* pool = nullptr;
  std::size_t expected_records = 0;  // a sizing hint, may be 0
  // The most threads that will use the index at once; 0: not known. Only 1 lets an index
  // leave out its locks (FPTree, LB+-Tree and FAST_FAIR do), so say 1 only when it is true.
  unsigned threads = 0;
  std::map<std::string, std::string> options;  // index-specific, e.g. {"leaf_capacity","64"}
};

// One option an index takes (`dptree bench --help-options INDEX` prints them).
struct OptionDoc {
  std::string key;
  std::string kind;   // "whole number", "number", "boolean", "choice"
  std::string dflt;   // the default, as the option would be written
  std::string range;  // the accepted values
  std::string help;   // one line
};

struct IndexInfo {
  std::string name;         // e.g. "dptree", "btree"
  std::string description;  // one line for `dptree bench --list` (assumptions included)
  bool persistent = false;
  bool concurrent = false;  // safe for several threads at once
  std::function<std::unique_ptr<Index>(const IndexConfig&)> create;
  std::vector<OptionDoc> options = {};  // empty: the index takes no options (it refuses any)
  // The same index over byte-string keys (string_index.h); empty: integer keys only. A pool
  // holds one form or the other, and opening it with the other form is a wrong_index error.
  std::function<std::unique_ptr<StringIndex>(const IndexConfig&)> create_string = {};
};

// All registered indexes, in registration order. The first call registers the built-in ones.
const std::vector<IndexInfo>& registered_indexes();
// The index called `name`; throws dptree::Error(invalid_argument) listing the known names.
const IndexInfo& find_index(const std::string& name);
// Adds an index (used by the built-in registration and by users who plug in their own).
void register_index(IndexInfo info);

}  // namespace dptree
