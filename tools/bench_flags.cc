// The flags of `dptree bench` (bench_options.h).
#include <fmt/core.h>

#include <string>

#include "bench/workload.h"
#include "bench_options.h"
#include "checks.h"
#include "dptree/pm/pool.h"

namespace dptree::cli {
namespace {

// --index, --workload and how long each run lasts.
void add_run_flags(CLI::App& app, BenchOptions* o) {
  std::string workload_names;
  for (const auto& w : bench::named_workloads())
    workload_names += fmt::format("\n  {:<12} {}", w.name, w.description);

  app.add_option("--index", o->indexes,
                 "Indexes to compare, comma-separated; the table shows each one's throughput "
                 "relative to the first (default: every registered index; see --list)");
  app.add_flag("--list", o->list,
               "List the registered indexes and exit (with --json: each one's whole registry "
               "entry as JSON, display name, key forms, options and test plan included)");
  app.add_option("--help-options", o->help_options,
                 "Describe the options (--option) INDEX takes, with defaults and ranges, and exit");
  app.add_option("--workload", o->workloads,
                 "Workloads, comma-separated (default: the DPTree paper's five):" + workload_names)
      ->capture_default_str();
  app.add_option("--records", o->records,
                 "Records preloaded before each run (0: an empty index, for insert-only runs)")
      ->capture_default_str()
      ->check(whole_in(0, kMaxRecords));
  auto* ops = app.add_option("--ops", o->ops, "Operations per run (all threads together)")
                  ->check(whole_in(1, kMaxOps));
  auto* secs =
      app.add_option("--seconds", o->seconds, "Duration of each run, when --ops is not given")
          ->capture_default_str()
          ->check(number_in(0.001, kMaxSeconds));
  ops->excludes(secs);
  app.add_option("--threads", o->threads,
                 "Thread counts, comma-separated (e.g. 1,2): one run per count")
      ->capture_default_str();
  app.add_flag("--pin", o->pin, "Pin worker thread i to the i-th CPU this process may use");
}

// Which keys the operations take and how they are distributed.
void add_key_flags(CLI::App& app, BenchOptions* o) {
  app.add_option("--distribution", o->distribution,
                 "Key distribution (default: the workload's own; uniform for the paper's mixes)")
      ->check(CLI::IsMember({"uniform", "zipfian", "sequential", "latest"}));
  app.add_option("--theta", o->theta, "Zipfian/latest skew, 0 <= theta < 1")
      ->capture_default_str()
      ->check(number_in(0.0, 0.999999));
  app.add_option("--key-type", o->key_type,
                 "Keys: u64 (8-byte integers) or string (byte strings, run on the string form "
                 "of each index; --list shows which take them)")
      ->capture_default_str()
      ->check(CLI::IsMember({"u64", "string"}));
  app.add_option("--key-set", o->key_set,
                 "String keys: random (bytes, --key-length long), u64be (the integer keys as "
                 "8-byte big-endian strings) or words (the wamerican word list, numbered "
                 "variants beyond it) (default: random)")
      ->check(CLI::IsMember({"random", "u64be", "words"}));
  app.add_option("--key-length", o->key_length,
                 "Random string keys: N bytes, or MIN-MAX for lengths uniform in that range, "
                 "8 to 1024 (default: 8)");
}

// The operation mix and the scans.
void add_mix_flags(CLI::App& app, BenchOptions* o) {
  auto* len = app.add_option("--scan-length", o->scan_length, "Records per scan (fixed)")
                  ->capture_default_str()
                  ->check(whole_in(1, kMaxScan));
  auto* sel = app.add_option("--scan-selectivity", o->scan_selectivity,
                             "Scan length as a percentage of --records (mean; uniform in "
                             "[1, 2x-1]; the paper uses 0.001)")
                  ->check(number_in(1e-9, 100.0));
  len->excludes(sel);
  const char* pct =
      "Custom mix: percentage of {} (the five shares must sum to 100; "
      "replaces --workload)";
  app.add_option("--read", o->read, fmt::format(fmt::runtime(pct), "lookups"))
      ->check(number_in(0.0, 100.0));
  app.add_option("--insert", o->insert, fmt::format(fmt::runtime(pct), "inserts of new keys"))
      ->check(number_in(0.0, 100.0));
  app.add_option("--update", o->update, fmt::format(fmt::runtime(pct), "updates of existing keys"))
      ->check(number_in(0.0, 100.0));
  app.add_option("--remove", o->remove, fmt::format(fmt::runtime(pct), "removes"))
      ->check(number_in(0.0, 100.0));
  app.add_option("--scan", o->scan, fmt::format(fmt::runtime(pct), "scans"))
      ->check(number_in(0.0, 100.0));
  app.add_option("--absent-reads", o->absent_reads,
                 "Percentage of lookups aimed at keys never inserted (unsuccessful lookups, "
                 "DPTree Fig. 10); applies to every workload (default: each workload's own, 0 "
                 "except read_absent)")
      ->check(number_in(0.0, 100.0));
}

// Seed, sampling, persistence and the pool.
void add_pm_flags(CLI::App& app, BenchOptions* o) {
  app.add_option("--seed", o->seed, "Seed of every random choice")
      ->capture_default_str()
      ->check(whole_in(0, UINT64_MAX));
  app.add_option("--sample-rate", o->sample_rate,
                 "Share of operations whose latency is measured (0 to 1): each costs two clock "
                 "reads that also stop the next operations from overlapping it, so 0.1 slows a "
                 "300 ns lookup by about 5%")
      ->capture_default_str()
      ->check(number_in(0.0, 1.0));
  app.add_option("--pm-mode", o->pm_mode,
                 "Persistence: pmem (clwb/clflushopt/clflush + sfence), eadr (fence only), "
                 "dram (neither); flushes are counted in every mode")
      ->capture_default_str()
      ->check(CLI::IsMember({"pmem", "eadr", "dram"}));
  app.add_option("--pool", o->pool,
                 "Pool file for persistent indexes; must not exist (default: a fresh file "
                 "under " +
                     pm::default_pool_dir().string() + ", removed at exit unless --keep)");
  app.add_option("--pool-size", o->pool_size,
                 "Pool size, e.g. 4GiB (default: sized from --records and the inserts to come)")
      ->check(unsigned_text())
      ->transform(CLI::AsSizeValue(false))
      ->check(whole_in(pm::kMinPoolSize, pm::kMaxPoolSize));
  app.add_flag("--keep", o->keep, "Keep the pool file(s) after the run");
  app.add_flag("--prefault", o->prefault,
               "Map every page of the pool before the preload (and again after a recovery), "
               "so that no timed operation pays a first-touch page fault");
  app.add_option("--flush-delay-ns", o->flush_delay_ns,
                 "Emulated extra latency per flushed cache line (ns)")
      ->check(whole_in(0, kMaxDelayNs));
  app.add_option("--fence-delay-ns", o->fence_delay_ns, "Emulated extra latency per fence (ns)")
      ->check(whole_in(0, kMaxDelayNs));
}

// Outputs and the options of runs and indexes.
void add_output_flags(CLI::App& app, BenchOptions* o) {
  // --json without FILE is stdout: `dptree bench --list --json` prints the registry.
  app.add_option_function<std::string>(
         "--json", [o](const std::string& file) { o->json = file.empty() ? "-" : file; },
         "Write the results (with --list: the registered indexes) as JSON to FILE ('-' or no "
         "FILE: stdout)")
      ->type_name("FILE")
      ->expected(0, 1);
  app.add_option("--csv", o->csv, "Write the results as CSV to FILE ('-': stdout)");
  app.add_flag("--recovery", o->recovery,
               "Persistent indexes: after the run close the pool, reopen it and time the "
               "recovery until the first lookup completes");
  app.add_flag("--load-once", o->load_once,
               "Preload each index once per thread count and run the workloads on it one after "
               "another, in the order given (each run starts from what the earlier ones left; "
               "inserts are always new keys). Saves the preload of every run but the first: use "
               "it for large --records");
  app.add_option("--option", o->index_options,
                 "Index option KEY=VALUE passed to every index (repeatable)");
  app.add_flag("--quiet", o->quiet, "No progress or status output on stderr (errors only)");
}

}  // namespace

void add_bench_flags(CLI::App& app, BenchOptions* o) {
  add_run_flags(app, o);
  add_key_flags(app, o);
  add_mix_flags(app, o);
  add_pm_flags(app, o);
  add_output_flags(app, o);
}

}  // namespace dptree::cli
