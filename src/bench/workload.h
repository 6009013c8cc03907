// Workloads: operation mixes (the DPTree paper's §4.4 mixes, YCSB A-F, custom percentages),
// scan lengths, and the per-thread operation stream generated deterministically from a seed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/keys.h"
#include "bench/random.h"
#include "dptree/index.h"

namespace dptree::bench {

enum class OpKind : std::uint8_t { read, insert, update, remove, scan, rmw };
inline constexpr std::size_t kOpKinds = 6;
std::string_view to_string(OpKind k);

// Percentages of each operation; they sum to 100. rmw = read-modify-write (YCSB F).
struct Mix {
  double read = 0, insert = 0, update = 0, remove = 0, scan = 0, rmw = 0;
  // Percentage of the lookups aimed at keys that were never inserted (DPTree §4.2, Fig. 10's
  // unsuccessful lookups). Not an operation kind: it does not count towards total().
  double absent_reads = 0;
  double total() const { return read + insert + update + remove + scan + rmw; }
  double of(OpKind k) const;
  // Throws dptree::Error unless every share is >= 0 and they sum to 100.
  void validate() const;
};

// Scan length: uniform in [min, max] (min == max: fixed).
struct ScanLength {
  std::uint32_t min = 100, max = 100;
};

struct Workload {
  std::string name;  // canonical: insert_only, ..., ycsb_a, ..., custom
  std::string description;
  Mix mix;
  Distribution distribution = Distribution::uniform;  // the workload's usual distribution
  bool scan_length_uniform_1_to_100 = false;          // YCSB E draws scan lengths from [1, 100]
};

// Every named workload, in the order --help lists them.
const std::vector<Workload>& named_workloads();
// By name; case, '-' and '_' are ignored ("InsertOnly", "insert-only", "ycsb-a" all work).
// Throws dptree::Error listing the accepted names.
const Workload& find_workload(std::string_view name);
// A custom mix (validated).
Workload custom_workload(const Mix& mix);

// 24 bytes: a worker's batch of operations shares the first-level cache with the index it
// drives, so the batch is kept small (runner.cc).
struct Op {
  Key key = 0;
  Value value = 0;           // insert / update / rmw (when the key is absent)
  std::uint32_t length = 0;  // scan
  OpKind kind = OpKind::read;
};
static_assert(sizeof(Op) == 24);

struct StreamParams {
  Mix mix;
  KeySpaceParams keys;
  ScanLength scan;
  std::uint64_t seed = 1;
  Value max_value = ~Value{0};
};

// The operations of one thread: a function of (params, thread) only.
class OpStream {
 public:
  OpStream(const StreamParams& p, unsigned thread);
  Op next();
  KeyGenerator& keys() { return keys_; }

 private:
  Value value();
  StreamParams p_;
  Rng rng_;
  KeyGenerator keys_;
  double cut_[kOpKinds];  // cumulative shares
};

// Ids from here up are never inserted (inserts stay far below 2^63), so their keys are absent.
inline constexpr std::uint64_t kAbsentIdBase = std::uint64_t{1} << 63;

// The value stored with preloaded id `id` (a function of the seed).
Value preload_value(std::uint64_t seed, std::uint64_t id, Value max_value);

}  // namespace dptree::bench
