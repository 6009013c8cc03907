// The flags of `dptree bench` (tools/cmd_bench.cc) and the options they fill.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dptree::cli {

// The ranges of the numeric flags: beyond them a run could not finish or fit anywhere.
inline constexpr std::uint64_t kMaxRecords = std::uint64_t{1} << 40;
inline constexpr std::uint64_t kMaxOps = std::uint64_t{1} << 48;
inline constexpr double kMaxSeconds = 7 * 24 * 3600.0;
inline constexpr std::uint64_t kMaxDelayNs = 1'000'000;  // 1 ms per line or fence
inline constexpr std::uint32_t kMaxScan = 1u << 24;      // records per scan

inline constexpr const char* kDefaultWorkloads =
    "insert_only,read_only,read_update,scan_insert,mixed";

struct BenchOptions {
  std::string indexes;  // empty: every registered index
  bool list = false;
  std::string help_options;  // an index whose options to describe
  std::string workloads = kDefaultWorkloads;
  std::uint64_t records = 500'000;  // with the defaults, every index x 5 mixes in ~1 minute
  std::uint64_t ops = 0;
  double seconds = 1.0;
  std::string threads = "1";
  bool pin = false;
  std::string distribution;  // empty: each workload's own
  double theta = 0.99;
  std::uint32_t scan_length = 100;
  double scan_selectivity = 0;  // percent of the records; 0: use scan_length
  std::optional<double> read, insert, update, remove, scan;
  std::optional<double> absent_reads;  // overrides each workload's share of missing lookups
  std::uint64_t seed = 1729;
  double sample_rate = 0.01;
  std::string pm_mode = "pmem";
  std::string pool;
  std::size_t pool_size = 0;
  bool keep = false;
  bool prefault = false;
  std::uint32_t flush_delay_ns = 0, fence_delay_ns = 0;
  std::string json, csv;
  bool recovery = false;
  bool load_once = false;
  std::vector<std::string> index_options;
  bool quiet = false;
  std::string key_type = "u64";
  std::string key_set;     // empty: random
  std::string key_length;  // empty: 8
};

// Adds every flag of `dptree bench` to `app`, each filling its field of `*o`.
void add_bench_flags(CLI::App& app, BenchOptions* o);

}  // namespace dptree::cli
