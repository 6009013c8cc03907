// `dptree harness`: what `dptree bench` itself costs. Each index is preloaded once; then, in
// alternating order round by round, the same operations (the benchmark's own stream of keys)
// run once through the benchmark's runner and once in a loop that does nothing else
// (bench::run_tight), lookups and inserts. The ratio runner / tight loop is the share of a
// figure the harness leaves. One round's two runs meet a different moment of a shared machine,
// so the default is many short rounds, and each ratio's median comes with the interval that
// holds the true median at 95% (bench/order_stats.h); docs/bench.md gives the target and runs.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/machine.h"
#include "bench/order_stats.h"
#include "bench/reference_indexes.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "checks.h"
#include "commands.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"

namespace {

using dptree::bench::RunSpec;

struct Options {
  std::string indexes = "dptree,absl-btree,lbtree";
  std::uint64_t records = 10'000'000, ops = 500'000;
  unsigned rounds = 20;
  double sample_rate = 0.01;  // the benchmark's default
  std::string json;
};

// One index and operation: each round's figures, runner and tight loop.
struct Pair {
  std::string index, workload;
  std::vector<double> bench_mops, tight_mops;
  std::vector<double> ratios() const {
    std::vector<double> r;
    for (std::size_t i = 0; i < bench_mops.size(); ++i) r.push_back(bench_mops[i] / tight_mops[i]);
    return r;
  }
};

using dptree::bench::median;
using dptree::bench::median_interval;

// The target of docs/bench.md: the runner delivers at least this share of the loop's throughput.
constexpr double kTarget = 0.95;

RunSpec spec_for(const Options& o, const std::string& index, const char* workload) {
  RunSpec s;
  s.index = index;
  s.workload = dptree::bench::find_workload(workload);
  s.records = o.records;
  s.ops = o.ops;
  s.sample_rate = o.sample_rate;
  // Removed when the load is (runner.h); the pid keeps concurrent harnesses apart.
  s.pool_path = dptree::pm::default_pool_dir() / fmt::format("dptree-harness-{}.pool", getpid());
  return s;
}

// Rounds of both workloads on one load of `index`; the order of runner and loop alternates.
std::vector<Pair> measure(const Options& o, const std::string& index,
                          dptree::bench::MachineState& machine) {
  const RunSpec reads = spec_for(o, index, "read_only"), writes = spec_for(o, index, "insert_only");
  std::vector<RunSpec> all;
  for (unsigned i = 0; i < 2 * o.rounds; ++i) all.push_back(writes);  // sizes the pool
  fmt::print(stderr, "harness: {}: preloading {} records\n", index, o.records);
  auto loaded = dptree::bench::load(reads, all);
  std::vector<Pair> pairs{{index, "read_only", {}, {}}, {index, "insert_only", {}, {}}};
  for (unsigned round = 0; round < o.rounds; ++round) {
    for (Pair& p : pairs) {
      const RunSpec& s = p.workload == "read_only" ? reads : writes;
      auto bench = [&] {
        const auto r = dptree::bench::run_on(*loaded, s);
        machine = r.machine;
        p.bench_mops.push_back(r.throughput_mops);
      };
      auto tight = [&] {
        p.tight_mops.push_back(dptree::bench::run_tight(*loaded, s).throughput_mops);
      };
      if (round % 2) {
        bench();
        tight();
      } else {
        tight();
        bench();
      }
      fmt::print(stderr, "harness: {} {} round {}: runner {:.3f}, tight loop {:.3f} Mops/s\n",
                 index, p.workload, round + 1, p.bench_mops.back(), p.tight_mops.back());
    }
  }
  return pairs;
}

std::string range(const std::vector<double>& v, const char* spec) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return fmt::format(fmt::runtime(std::string("{:") + spec + "}-{:" + spec + "}"), *lo, *hi);
}

// "0.951-1.004", or "0.951-1.004 (range)" where too few rounds give no 95% interval.
std::string interval(const std::vector<double>& ratios) {
  const auto i = median_interval(ratios);
  return fmt::format("{:.3f}-{:.3f}{}", i.low, i.high, i.exact ? "" : " (range)");
}

void print_table(const std::vector<Pair>& pairs, const Options& o,
                 const dptree::bench::MachineState& m) {
  fmt::print(
      "{} records, {} operations per run, {} rounds, one thread, pm-mode pmem, load {:.2f}"
      " before, {:.2f} after\n",
      o.records, o.ops, o.rounds, m.load1_before, m.load1_after);
  fmt::print("{:<12} {:<12} {:>13} {:>13} {:>9} {:>20} {:>12} {:>7}\n", "index", "workload",
             "runner Mops/s", "loop Mops/s", "runner /", "median's 95% interval", "rounds' range",
             ">=0.95");
  fmt::print("{:<12} {:<12} {:>13} {:>13} {:>9}\n", "", "", "(median)", "(median)", "loop");
  for (const Pair& p : pairs) {
    const std::vector<double> ratios = p.ratios();
    const double r = median(ratios);
    fmt::print("{:<12} {:<12} {:>13.3f} {:>13.3f} {:>9.3f} {:>20} {:>12} {:>7}\n", p.index,
               p.workload, median(p.bench_mops), median(p.tight_mops), r, interval(ratios),
               range(ratios, ".2f"), r >= kTarget ? "met" : "MISSED");
  }
}

std::string to_json(const std::vector<Pair>& pairs, const Options& o,
                    const dptree::bench::MachineState& m) {
  nlohmann::ordered_json j;
  j["records"] = o.records;
  j["ops"] = o.ops;
  j["rounds"] = o.rounds;
  j["target"] = kTarget;
  j["machine"] = dptree::bench::machine_json(m);
  j["pairs"] = nlohmann::ordered_json::array();
  for (const Pair& p : pairs) {
    const std::vector<double> ratios = p.ratios();
    const double med = median(ratios);
    const auto ci = median_interval(ratios);
    j["pairs"].push_back({{"index", p.index},
                          {"workload", p.workload},
                          {"runner_mops", p.bench_mops},
                          {"tight_mops", p.tight_mops},
                          {"ratios", ratios},
                          {"median_ratio", med},
                          {"median_ci95", {ci.low, ci.high}},
                          {"median_ci95_exact", ci.exact},
                          {"target_met", med >= kTarget}});
  }
  return j.dump(2) + "\n";
}

void harness(const Options& o) {
  dptree::cli::check_output_path(o.json, "--json");
  dptree::bench::register_reference_indexes();
  dptree::pm::set_mode(dptree::pm::Mode::pmem);
  const std::vector<std::string> names = dptree::cli::split_list(o.indexes);
  for (const auto& name : names) dptree::find_index(name);  // a typo stops it before any run
  std::vector<Pair> pairs;
  dptree::bench::MachineState machine;  // the last run's (its pages); the loads span them all
  const double load_before = dptree::bench::load1();
  for (const auto& name : names)
    for (Pair& p : measure(o, name, machine)) pairs.push_back(p);
  machine.load1_before = load_before;
  machine.load1_after = dptree::bench::load1();
  if (o.json != "-") print_table(pairs, o, machine);
  if (!o.json.empty()) dptree::cli::write_whole_file(o.json, to_json(pairs, o, machine), "JSON");
}

const dptree::cli::Registrar kRegistrar{
    {"harness",
     "The benchmark's own cost: each index's lookups and inserts through `dptree bench`'s runner "
     "against a tight loop over the same pre-generated keys, in many short alternating rounds, one "
     "thread, pmem; the median ratio with its 95% interval",
     [](CLI::App& app) {
       auto o = std::make_shared<Options>();
       app.add_option("--index", o->indexes, "Indexes, comma-separated")->capture_default_str();
       app.add_option("--records", o->records, "Records preloaded into each index")
           ->check(dptree::cli::whole_in(1, std::uint64_t{1} << 40))
           ->capture_default_str();
       app.add_option("--ops", o->ops, "Operations per run")
           ->check(dptree::cli::whole_in(1, std::uint64_t{1} << 40))
           ->capture_default_str();
       app.add_option("--rounds", o->rounds, "Rounds of runner and loop, in alternating order")
           ->check(dptree::cli::whole_in(1, 1000))
           ->capture_default_str();
       app.add_option("--sample-rate", o->sample_rate,
                      "Share of the runner's operations whose latency it measures")
           ->check(dptree::cli::number_in(0, 1))
           ->capture_default_str();
       app.add_option("--json", o->json, "Also write every figure as JSON to FILE ('-': stdout)");
       app.footer(dptree::cli::kExitStatusHelp);
       app.callback([o] { harness(*o); });
     }}};

}  // namespace
