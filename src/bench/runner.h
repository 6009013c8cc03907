// One benchmark run: create the index (in a fresh pool if it is persistent), preload it,
// run the workload on n threads, measure, optionally measure recovery, clean up. Or, with
// `load` and `run_on`, several runs on one preloaded index (`dptree bench --load-once`).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/machine.h"
#include "bench/string_keys.h"
#include "bench/workload.h"
#include "dptree/pm/persist.h"
#include "dptree/registry.h"

namespace dptree::bench {

struct RunSpec {
  std::string index;
  Workload workload;
  std::optional<Distribution> distribution;  // overrides the workload's own
  double theta = 0.99;
  ScanLength scan;  // ignored by workloads with their own (YCSB E)
  std::uint64_t records = 1'000'000;
  std::uint64_t ops = 0;  // operations to run; 0: run for `seconds`
  double seconds = 1.0;
  unsigned threads = 1;
  bool pin = false;
  std::uint64_t seed = 1729;
  double sample_rate = 0.01;  // share of operations whose latency is measured (docs/bench.md)
  pm::Mode pm_mode = pm::Mode::pmem;
  std::uint32_t flush_delay_ns = 0, fence_delay_ns = 0;
  std::filesystem::path pool_path;  // persistent indexes: must not exist yet
  std::size_t pool_size = 0;        // 0: sized from records and ops
  bool keep_pool = false;
  bool prefault = false;  // Pool::prefault() before the preload and after a recovery
  bool recovery = false;
  std::map<std::string, std::string> options;  // IndexConfig::options
  KeyFormat key;  // string keys drive the index's string form (IndexInfo::create_string)
};

struct Latency {
  std::uint64_t p50 = 0, p90 = 0, p99 = 0, p999 = 0, p9999 = 0, max = 0;
  std::uint64_t samples = 0;
};

struct RunResult {
  std::string index;
  bool persistent = false;
  std::string workload;
  Mix mix;
  Distribution distribution = Distribution::uniform;
  double theta = 0;
  unsigned threads = 1;
  bool pinned = false;
  std::uint64_t seed = 0;
  std::uint64_t records = 0;        // preloaded (+ inserted by earlier runs on a shared load)
  bool prefault = false;            // the pool's pages were mapped ahead (RunSpec::prefault)
  bool shared_load = false;         // ran on an index an earlier run preloaded (--load-once)
  std::uint64_t final_records = 0;  // the index's count after the run
  std::uint64_t ops = 0;
  std::uint64_t ops_by_kind[kOpKinds] = {};
  std::uint64_t reads_found = 0;  // lookups (and rmw reads) that found their key
  double seconds = 0;             // the timed phase, drain included, stream_seconds left out
  // The workers' mean time drawing their operations from the stream (in batches, between
  // the batches' operations): the harness's own cost, taken out of `seconds`.
  double stream_seconds = 0;
  // CPU time the whole process spent in the timed phase (every thread, the index's background
  // workers included): on a shared machine it moves much less with other processes' load than
  // `seconds` does, so it is the figure to compare across runs made at different loads.
  double cpu_seconds = 0;
  double throughput_mops = 0;
  double preload_seconds = 0;  // 0 on a shared load after its first run (drain included)
  // Part of `seconds`: the index's drain() after the last operation of a run that writes.
  double drain_seconds = 0;
  Latency latency_ns;
  double flushes_per_op = 0, fences_per_op = 0, pm_bytes_written_per_op = 0;
  // Flushed lines per operation split by counter category (log / alloc / node / other).
  std::vector<std::pair<std::string, double>> flushes_per_op_by_category;
  std::size_t dram_bytes = 0, pm_bytes = 0;
  double dram_bytes_per_record = 0, pm_bytes_per_record = 0;
  // High-water marks: the pool's heap bytes in use at once since it was opened (whole 64 KiB
  // chunks; 0 for a volatile index), and this process's peak resident memory (VmHWM: every
  // run of the process so far, its generated keys included).
  std::size_t pm_peak_bytes = 0, peak_rss_bytes = 0;
  // --recovery: the index's recovery on an opened pool until one lookup completes, and,
  // apart, the pool's open before it.
  std::optional<double> recovery_seconds, pool_open_seconds;
  std::string pm_mode;
  KeyType key_type = KeyType::u64;
  KeySet key_set = KeySet::random;                     // string keys only
  std::uint32_t key_min_bytes = 8, key_max_bytes = 8;  // the keys' length range
  std::uint32_t flush_delay_ns = 0, fence_delay_ns = 0;
  std::string pool;  // the pool file used ("" for volatile indexes)
  std::vector<std::pair<std::string, double>> index_stats;  // IndexStats::extra
  MachineState machine;  // the machine's state around the timed phase
};

// What the runner tells its caller while it works (called from the runner's own thread).
struct Progress {
  virtual ~Progress() = default;
  // phase: "preload", "run", "recovery"; fraction in [0, 1].
  virtual void update(std::string_view phase, double fraction) = 0;
};

// Throws dptree::Error for a bad spec (unknown index, threads > 1 on a non-concurrent index,
// an existing pool file, ...).
RunResult run(const RunSpec& spec, Progress* progress = nullptr);

// An index created (in its pool, if persistent) and preloaded once, for several runs. Each
// run starts from what the previous ones left; inserts always add keys no run added before.
// The pool file is removed when this is destroyed, unless the spec keeps it.
class LoadedIndex {
 public:
  struct State;
  explicit LoadedIndex(std::unique_ptr<State> s);
  ~LoadedIndex();
  LoadedIndex(const LoadedIndex&) = delete;
  LoadedIndex& operator=(const LoadedIndex&) = delete;
  State& state() { return *s_; }

 private:
  std::unique_ptr<State> s_;
};

// Creates and preloads the index of `spec`; the pool is sized for `runs` (all on this load).
std::unique_ptr<LoadedIndex> load(const RunSpec& spec, const std::vector<RunSpec>& runs,
                                  Progress* progress = nullptr);
// One run on a loaded index. The spec must name the same index, thread count, records,
// distribution and PM mode as the load; throws dptree::Error otherwise.
RunResult run_on(LoadedIndex& loaded, const RunSpec& spec, Progress* progress = nullptr);

// The operations a run of `spec` on `loaded` would make (the same stream, generated before
// the clock starts) applied in a loop that does nothing else, each result used: the floor
// that the benchmark's own cost per operation is measured against (`dptree harness`). One
// thread, integer keys, and a workload of lookups only or of inserts only; inserts are
// drained inside the timing, as in run_on. Updates the load as a run does.
struct TightResult {
  std::uint64_t ops = 0;
  double seconds = 0, throughput_mops = 0;
  std::uint64_t checksum = 0;  // the values found, summed: keeps every lookup's result live
};
TightResult run_tight(LoadedIndex& loaded, const RunSpec& spec);

// The default pool size for a spec: room for the preload and every insert of the run.
std::size_t default_pool_size(const RunSpec& spec);
// ... and of several runs on one load.
std::size_t default_pool_size(const std::vector<RunSpec>& runs);

// Set from a signal handler: running workloads stop early (and still clean up).
void request_stop();
bool stop_requested();

}  // namespace dptree::bench
