// Every index of the project registers under a name; the benchmark, the tests' fixtures and
// the PiBench wrapper create indexes through this registry.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
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

// What the project's shared test suites run on a persistent index, so that adding one needs no
// list outside its folder: the pool fuzzer (tests/fuzz: damaged pools opened, recovered and
// checked), the process-kill test (tests/kill: writers killed by SIGKILL, every acknowledged
// write present after each kill) and the model and crash suite (GenericPeer, tests/baselines/
// generic_peer_fixture.h) open the index with these options, which make its nodes, logs and
// buffers small, so that a few hundred writes reach its splits, merges and their recovery. An
// index with no fuzz or kill plan says why in `why_untested`.
struct TestPlan {
  using Options = std::map<std::string, std::string>;
  // The peers' model and crash suite (GenericPeer): model runs against std::map with reopens,
  // bad input, and two crash-simulation runs of 10,000 images between them.
  struct Generic {
    Options options = {};
    std::string grown_stat = {};  // the IndexStats::extra figure that counts the nodes made,
    double grown_min = 0;         // which a model run must exceed (the structure grew often)
    bool word8 = false;           // the second crash run in 8-byte units (the index claims
                                  // only 8-byte failure atomicity), else in 64-byte lines
    std::size_t crash_ops = 0;    // per crash run: enough for 10,000 images over the two
  };
  struct Fuzz {
    Options options = {};
    std::size_t seed_pool_bytes = 0;  // the seed pools' size; 0: the fuzzer's default
  };
  struct Kill {
    unsigned writers = 1;  // writing threads of each killed child (2 for a concurrent index)
    Options options = {};
  };
  std::optional<Fuzz> fuzz = std::nullopt;          // the integer form
  std::optional<Fuzz> fuzz_strings = std::nullopt;  // the string form (create_string)
  std::optional<Kill> kill = std::nullopt;
  std::optional<Generic> generic = std::nullopt;  // the indexes that run GenericPeer
  std::string why_untested = {};                  // why, for a fuzz or kill plan it lacks
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
  TestPlan tests = {};  // persistent indexes: what the shared test suites run on it
  // The index's name on pages, plots and tables, e.g. "FAST_FAIR" for fastfair; registration
  // sets an empty one to `name` and refuses one another index has. `dptree bench --list
  // --json` prints it, and scripts/reproduce takes it from there.
  std::string display_name = {};
};

// All registered indexes, in registration order. The first call registers the built-in ones.
const std::vector<IndexInfo>& registered_indexes();
// The index called `name`; throws dptree::Error(invalid_argument) listing the known names.
const IndexInfo& find_index(const std::string& name);
// Adds an index (used by the built-in registration and by users who plug in their own);
// throws dptree::Error(invalid_argument) for an empty name, a missing create function, or a
// name or display name another index has.
void register_index(IndexInfo info);

}  // namespace dptree
