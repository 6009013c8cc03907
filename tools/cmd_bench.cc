// `dptree bench`: the PiBench/YCSB-style benchmark over every registered index (docs/bench.md).
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/progress.h"
#include "bench/reference_indexes.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "bench_options.h"
#include "checks.h"
#include "commands.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"

namespace dptree::cli {
namespace {

using bench::RunSpec;

void print_list() {
  fmt::print("{:<12} {:<10} {:<10} {:<7} {}\n", "index", "persistent", "concurrent", "strings",
             "description");
  for (const auto& i : registered_indexes())
    fmt::print("{:<12} {:<10} {:<10} {:<7} {}\n", i.name, i.persistent ? "yes" : "no",
               i.concurrent ? "yes" : "no", i.create_string ? "yes" : "no", i.description);
}

// The registry as JSON (`--list --json`, docs/bench.md): each index's entry, in the order of
// `--list`: its name, display name (the name pages and plots show; scripts/reproduce reads it
// here), description, key forms, whether it is persistent and concurrent, its options, and
// what the shared test suites run on it (its test plan; null where it has none).
nlohmann::ordered_json options_json(const TestPlan::Options& options) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [key, value] : options) j[key] = value;
  return j;
}

nlohmann::ordered_json fuzz_json(const std::optional<TestPlan::Fuzz>& f) {
  if (!f) return nullptr;
  return {{"options", options_json(f->options)}, {"seed_pool_bytes", f->seed_pool_bytes}};
}

nlohmann::ordered_json test_plan_json(const TestPlan& t) {
  nlohmann::ordered_json j;
  j["fuzz"] = fuzz_json(t.fuzz);
  j["fuzz_strings"] = fuzz_json(t.fuzz_strings);
  j["kill"] = nullptr;
  if (t.kill)
    j["kill"] = {{"writers", t.kill->writers}, {"options", options_json(t.kill->options)}};
  j["generic"] = nullptr;
  if (t.generic)
    j["generic"] = {{"options", options_json(t.generic->options)},
                    {"grown_stat", t.generic->grown_stat},
                    {"grown_min", t.generic->grown_min},
                    {"word8", t.generic->word8},
                    {"crash_ops", t.generic->crash_ops}};
  j["why_untested"] = t.why_untested;
  return j;
}

std::string list_json() {
  nlohmann::ordered_json indexes = nlohmann::ordered_json::array();
  for (const auto& i : registered_indexes()) {
    nlohmann::ordered_json forms = nlohmann::ordered_json::array({"integer"});
    if (i.create_string) forms.push_back("string");
    nlohmann::ordered_json options = nlohmann::ordered_json::array();
    for (const auto& d : i.options)
      options.push_back({{"key", d.key},
                         {"kind", d.kind},
                         {"default", d.dflt},
                         {"range", d.range},
                         {"help", d.help}});
    nlohmann::ordered_json j;
    j["name"] = i.name;
    j["display_name"] = i.display_name;
    j["description"] = i.description;
    j["key_forms"] = std::move(forms);
    j["persistent"] = i.persistent;
    j["concurrent"] = i.concurrent;
    j["options"] = std::move(options);
    j["tests"] = test_plan_json(i.tests);
    indexes.push_back(std::move(j));
  }
  return nlohmann::ordered_json{{"indexes", std::move(indexes)}}.dump(2) + "\n";
}

// The options `index` takes: key, kind, default, accepted values and a line of help each.
void print_options(const std::string& index) {
  const IndexInfo& info = find_index(index);
  if (info.options.empty()) {
    fmt::print("{} takes no options\n", info.name);
    return;
  }
  fmt::print("options of {} (--option KEY=VALUE):\n", info.name);
  for (const auto& o : info.options)
    fmt::print("  {:<22} {:<13} default {:<8} {}\n  {:<22} {}\n", o.key, o.kind, o.dflt, o.range,
               "", o.help);
}

std::vector<unsigned> parse_threads(const std::string& s) {
  std::vector<unsigned> out;
  for (const auto& t : split_list(s)) {
    std::size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != t.size() || v == 0 || v > 1024)
      throw Error(Errc::invalid_argument, "--threads '" + s +
                                              "': give thread counts from 1 to 1024, "
                                              "comma-separated (e.g. 1,2,4)");
    out.push_back(static_cast<unsigned>(v));
  }
  if (out.empty()) throw Error(Errc::invalid_argument, "--threads needs at least one count");
  return out;
}

std::map<std::string, std::string> parse_index_options(const std::vector<std::string>& kvs) {
  std::map<std::string, std::string> out;
  for (const auto& kv : kvs) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error(Errc::invalid_argument,
                  "--option '" + kv + "': write index options as KEY=VALUE (e.g. fanout=64)");
    out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

// The runs that share one load: each run alone, or with --load-once those of one index and
// thread count, in the order the workloads were given.
std::vector<std::vector<RunSpec>> loads_of(const std::vector<RunSpec>& specs, bool load_once) {
  std::vector<std::vector<RunSpec>> loads;
  if (!load_once) {
    for (const auto& s : specs) loads.push_back({s});
    return loads;
  }
  std::map<std::pair<std::string, unsigned>, std::size_t> group;
  for (const auto& s : specs) {
    auto [it, fresh] = group.try_emplace({s.index, s.threads}, loads.size());
    if (fresh) loads.emplace_back();
    loads[it->second].push_back(s);
  }
  return loads;
}

// Before any run: each index takes the --option values (a trial index on a small in-memory
// pool; a pool too small for it is no fault of the options).
void check_index_options(const std::vector<RunSpec>& specs) {
  std::map<std::string, unsigned> threads;
  for (const auto& s : specs) threads[s.index] = std::max(threads[s.index], s.threads);
  for (const auto& [name, t] : threads) {
    const IndexInfo& info = find_index(name);
    std::unique_ptr<pm::Pool> pool;
    if (info.persistent) pool = pm::Pool::create_in_memory(std::size_t{16} << 20);
    IndexConfig cfg;
    cfg.pool = pool.get();
    cfg.threads = t;
    cfg.options = specs.front().options;
    try {
      if (specs.front().key.type == bench::KeyType::string)
        info.create_string(cfg);
      else
        info.create(cfg);
    } catch (const Error& e) {
      if (e.code() != Errc::pool_full) throw;
    }
  }
}

// Before any run: every pool path can be created, and the pools fit in the free space of
// their file system (all of them with --keep, else the largest, as each is removed after its
// run). A pool reserves its whole size at creation (posix_fallocate).
void check_pools(const BenchOptions& o, const std::vector<RunSpec>& specs,
                 const std::vector<std::vector<RunSpec>>& loads) {
  const char* flag = o.pool.empty() ? "DPTREE_POOL_DIR" : "--pool";
  std::uint64_t need = 0;
  for (const auto& runs : loads) {
    if (!find_index(runs.front().index).persistent) continue;
    check_new_file_path(runs.front().pool_path.string(), flag);
    const std::uint64_t size = o.pool_size ? o.pool_size : bench::default_pool_size(runs);
    need = o.keep ? need + size : std::max(need, size);
  }
  const auto& path = specs.front().pool_path;
  const std::uint64_t avail = pm::free_bytes(path);
  // 16 bytes per record is the records' own size, a floor under any index's footprint.
  if (o.records > avail / 16)
    throw Error(Errc::invalid_argument,
                fmt::format("--records {} cannot fit: the file system of '{}' has {} bytes free, "
                            "room for at most {} records of 16 bytes; lower --records, or put "
                            "the pool elsewhere with --pool",
                            o.records, path.parent_path().string(), avail, avail / 16));
  if (need > avail)
    throw Error(
        Errc::invalid_argument,
        fmt::format("the pool{} {} bytes but the file system of '{}' has {} bytes "
                    "free: lower {}, or put the pool elsewhere with --pool",
                    o.keep ? "s kept by --keep need" : " needs", need, path.parent_path().string(),
                    avail, o.pool_size ? "--pool-size" : "--records"));
}

void on_signal(int) {
  bench::request_stop();
}

// The indexes --index names (all registered ones when it is empty, those that take strings
// for string keys).
std::vector<const IndexInfo*> selected_indexes(const BenchOptions& o, bool strings) {
  std::vector<const IndexInfo*> indexes;
  if (o.indexes.empty())
    for (const auto& i : registered_indexes()) {
      if (!strings || i.create_string) indexes.push_back(&i);
    }
  else
    for (const auto& name : split_list(o.indexes)) {
      const IndexInfo& i = find_index(name);
      if (strings && !i.create_string)
        throw Error(Errc::invalid_argument,
                    "index '" + name +
                        "' takes 8-byte integer keys only, not --key-type string; the indexes "
                        "that take strings: " +
                        bench::string_index_names());
      indexes.push_back(&i);
    }
  if (indexes.empty())
    throw Error(Errc::invalid_argument, "--index lists no index: see `dptree bench --list`");
  return indexes;
}

// --key-type, --key-set and --key-length; the string keys are made once to check them (the
// word list exists, the lengths suit the key set).
bench::KeyFormat key_format(const BenchOptions& o, const RunSpec& base) {
  bench::KeyFormat f;
  f.type = bench::parse_key_type(o.key_type);
  if (f.type == bench::KeyType::u64) {
    if (!o.key_set.empty() || !o.key_length.empty())
      throw Error(Errc::invalid_argument,
                  "--key-set and --key-length describe string keys: add --key-type string");
    return f;
  }
  if (!o.key_set.empty()) f.set = bench::parse_key_set(o.key_set);
  if (!o.key_length.empty()) {
    if (f.set == bench::KeySet::words)
      throw Error(Errc::invalid_argument,
                  "--key-length does not apply to --key-set words (the words have their own "
                  "lengths): drop it");
    bench::parse_key_length(o.key_length, f);
  }
  (void)bench::StringKeyMaker(f, base.distribution.value_or(bench::Distribution::uniform));
  return f;
}

// The workloads --workload names, or the one mix --read/--insert/... give.
std::vector<bench::Workload> selected_workloads(const BenchOptions& o) {
  const bool custom = o.read || o.insert || o.update || o.remove || o.scan;
  std::vector<bench::Workload> workloads;
  if (custom) {
    bench::Mix m;
    m.read = o.read.value_or(0);
    m.insert = o.insert.value_or(0);
    m.update = o.update.value_or(0);
    m.remove = o.remove.value_or(0);
    m.scan = o.scan.value_or(0);
    workloads.push_back(bench::custom_workload(m));
  } else {
    for (const auto& w : split_list(o.workloads)) workloads.push_back(bench::find_workload(w));
    if (workloads.empty())
      throw Error(Errc::invalid_argument,
                  "--workload lists no workload: see `dptree bench --help`");
  }
  if (o.absent_reads)
    for (auto& w : workloads) w.mix.absent_reads = *o.absent_reads;
  if (o.records == 0)
    for (const auto& w : workloads)
      if (w.mix.insert < 100)
        throw Error(
            Errc::invalid_argument,
            "--records 0 starts from an empty index, where only inserts can run; workload '" +
                w.name + "' also reads or changes existing keys: give --records 1 or more");
  return workloads;
}

// What every run shares: the flags that are not the index, workload or thread count.
RunSpec base_spec(const BenchOptions& o) {
  RunSpec base;
  if (!o.distribution.empty()) base.distribution = bench::parse_distribution(o.distribution);
  base.theta = o.theta;
  if (!(o.theta >= 0 && o.theta < 1))
    throw Error(Errc::invalid_argument, "--theta must be in [0, 1) (YCSB uses 0.99)");
  base.records = o.records;
  base.ops = o.ops;
  base.seconds = o.seconds;
  base.pin = o.pin;
  base.seed = o.seed;
  base.sample_rate = o.sample_rate;
  base.pm_mode = pm::parse_mode(o.pm_mode);
  base.flush_delay_ns = o.flush_delay_ns;
  base.fence_delay_ns = o.fence_delay_ns;
  base.pool_size = o.pool_size;
  base.keep_pool = o.keep;
  base.prefault = o.prefault;
  base.recovery = o.recovery;
  base.options = parse_index_options(o.index_options);
  base.key = key_format(o, base);
  if (o.scan_selectivity > 0) {
    // Mean length = selectivity x records; uniform in [1, 2L-1] gives a standard deviation
    // of ~0.58 L, close to the DPTree paper's 0.001% +- 0.0006%.
    // At most --scan-length's limit, so that 2L - 1 fits its 32 bits.
    const double len = o.scan_selectivity / 100.0 * static_cast<double>(o.records);
    const auto l = static_cast<std::uint32_t>(std::clamp(len + 0.5, 1.0, double{kMaxScan}));
    base.scan = {1, 2 * l - 1};
  } else {
    base.scan = {o.scan_length, o.scan_length};
  }
  return base;
}

// The runs, grouped so that each (workload, threads) block compares the indexes in turn.
std::vector<RunSpec> plan_runs(const BenchOptions& o, const RunSpec& base) {
  const bool all_indexes = o.indexes.empty();
  const auto indexes = selected_indexes(o, base.key.type == bench::KeyType::string);
  const auto workloads = selected_workloads(o);
  const std::vector<unsigned> threads = parse_threads(o.threads);
  std::vector<RunSpec> specs;
  for (const auto& w : workloads)
    for (unsigned t : threads)
      for (const IndexInfo* info : indexes) {
        if (t > 1 && !info->concurrent) {
          if (all_indexes) continue;  // the default selection skips what cannot run
          throw Error(Errc::invalid_argument,
                      "index '" + info->name + "' is not safe for concurrent use, so it cannot " +
                          "run with --threads " + std::to_string(t) +
                          ": drop it from --index or use --threads 1");
        }
        RunSpec s = base;
        s.index = info->name;
        s.workload = w;
        s.threads = t;
        specs.push_back(std::move(s));
      }
  if (specs.empty())
    throw Error(Errc::invalid_argument,
                "no run left: no selected index is concurrent for the thread counts given");
  return specs;
}

// Pool files: the given path, or a fresh one per process; one per run when several
// persistent runs would otherwise share it and the pools are kept. Returns the number of
// persistent runs.
std::size_t assign_pools(const BenchOptions& o, std::vector<RunSpec>& specs) {
  std::size_t persistent_runs = 0;
  for (const auto& s : specs) persistent_runs += find_index(s.index).persistent ? 1 : 0;
  const std::filesystem::path pool =
      o.pool.empty() ? pm::default_pool_dir() / fmt::format("dptree-bench-{}.pool", getpid())
                     : std::filesystem::path(o.pool);
  for (auto& s : specs) {
    s.pool_path = pool;
    if (persistent_runs > 1 && o.keep) {
      s.pool_path.replace_filename(
          o.load_once ? fmt::format("{}-{}-t{}{}", pool.stem().string(), s.index, s.threads,
                                    pool.extension().string())
                      : fmt::format("{}-{}-{}-t{}{}", pool.stem().string(), s.index,
                                    s.workload.name, s.threads, pool.extension().string()));
    }
  }
  return persistent_runs;
}

// Runs every planned run; without --load-once every run loads its own index, with it the runs
// of one index and thread count share one load, in the order the workloads were given.
std::vector<bench::RunResult> run_all(const BenchOptions& o, const std::vector<RunSpec>& specs) {
  bench::StderrProgress progress(bench::stderr_is_tty());
  std::vector<bench::RunResult> results;
  for (const auto& runs : loads_of(specs, o.load_once)) {
    std::unique_ptr<bench::LoadedIndex> loaded;
    for (const auto& s : runs) {
      if (bench::stop_requested()) break;
      progress.begin(fmt::format("[{}/{}] {} {} t={}", results.size() + 1, specs.size(), s.index,
                                 s.workload.name, s.threads));
      bench::Progress* p = o.quiet ? nullptr : &progress;
      if (!loaded) loaded = bench::load(runs.front(), runs, p);
      auto r = bench::run_on(*loaded, s, p);
      if (bench::stop_requested()) break;  // an interrupted run measured nothing meaningful
      if (!o.quiet)
        progress.end(fmt::format("{:.3f} Mops/s, p99 {} ({})", r.throughput_mops,
                                 bench::format_ns(static_cast<double>(r.latency_ns.p99)),
                                 r.shared_load
                                     ? fmt::format("on the shared load, {} records", r.records)
                                     : fmt::format("preload {:.2f} s", r.preload_seconds)));
      results.push_back(std::move(r));
    }
    if (runs.front().keep_pool && loaded && find_index(runs.front().index).persistent)
      fmt::print(stderr, "kept pool {}\n", runs.front().pool_path.string());
  }
  // Report in the usual order (workload, threads, index) whatever order the loads ran in.
  auto position = [&](const bench::RunResult& r) {
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (specs[i].index == r.index && specs[i].workload.name == r.workload &&
          specs[i].threads == r.threads)
        return i;
    return specs.size();
  };
  std::stable_sort(results.begin(), results.end(),
                   [&](const auto& a, const auto& b) { return position(a) < position(b); });
  return results;
}

std::string key_description(const bench::KeyFormat& f) {
  if (f.type == bench::KeyType::u64) return "8-byte integer keys";
  if (f.set != bench::KeySet::random) return fmt::format("{} string keys", to_string(f.set));
  if (f.min_bytes == f.max_bytes) return fmt::format("random {}-byte string keys", f.min_bytes);
  return fmt::format("random string keys of {}-{} bytes", f.min_bytes, f.max_bytes);
}

void run_bench(const BenchOptions& o) {
  bench::register_reference_indexes();
  if (o.list) {
    check_output_path(o.json, "--json");
    if (o.json.empty())
      print_list();
    else
      write_whole_file(o.json, list_json(), "JSON");
    return;
  }
  if (!o.help_options.empty()) {
    print_options(o.help_options);
    return;
  }
  // Validate everything before the first run, so a typo does not waste a long benchmark.
  std::vector<RunSpec> specs = plan_runs(o, base_spec(o));
  const std::size_t persistent_runs = assign_pools(o, specs);
  check_index_options(specs);
  check_output_path(o.json, "--json");
  check_output_path(o.csv, "--csv");
  if (persistent_runs > 0) check_pools(o, specs, loads_of(specs, o.load_once));

  if (!o.quiet)
    fmt::print(stderr,
               "dptree bench: {} run(s); records {}, {}, {}, pm-mode {} (flush: {}), seed {}, "
               "latency sample rate {}\n",
               specs.size(), o.records, key_description(specs.front().key),
               o.ops ? fmt::format("{} ops", o.ops) : fmt::format("{} s per run", o.seconds),
               o.pm_mode, pm::to_string(pm::flush_instruction()), o.seed, o.sample_rate);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const std::vector<bench::RunResult> results = run_all(o, specs);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);

  if (o.json != "-" && o.csv != "-") fmt::print("{}", bench::format_table(results));
  if (!o.json.empty()) write_whole_file(o.json, bench::to_json(results), "JSON");
  if (!o.csv.empty()) write_whole_file(o.csv, bench::to_csv(results), "CSV");
  if (bench::stop_requested()) {
    fmt::print(stderr, "dptree bench: interrupted; the table shows the runs that finished\n");
    exit_code() = 130;
  }
}

void setup(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  add_bench_flags(app, o.get());
  app.callback([o] { run_bench(*o); });
}

const Registrar kRegistrar{
    {"bench",
     "Benchmark indexes: the DPTree paper's mixes, YCSB A-F or a custom mix; throughput, "
     "latency percentiles, flushes/fences/PM bytes per op, memory, recovery time",
     setup}};

}  // namespace
}  // namespace dptree::cli
