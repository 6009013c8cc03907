#include "bench/report.h"

#include <fmt/core.h>

#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

namespace dptree::bench {
namespace {

std::string mix_string(const Mix& m) {
  std::string s;
  for (std::size_t k = 0; k < kOpKinds; ++k) {
    const double v = m.of(static_cast<OpKind>(k));
    if (v > 0)
      s += fmt::format("{}{} {:g}%", s.empty() ? "" : ", ", to_string(static_cast<OpKind>(k)), v);
  }
  return s;
}

// Throughput of the first index's run with the same workload and threads.
std::map<std::tuple<std::string, unsigned>, double> baselines(const std::vector<RunResult>& rs) {
  std::map<std::tuple<std::string, unsigned>, double> base;
  if (rs.empty()) return base;
  for (const auto& r : rs)
    if (r.index == rs.front().index)
      base.emplace(std::tuple{r.workload, r.threads}, r.throughput_mops);
  return base;
}

double cpu_ns_per_op(const RunResult& r) {
  return r.ops ? r.cpu_seconds * 1e9 / static_cast<double>(r.ops) : 0;
}

// One row of values in csv_columns() order.
std::vector<std::string> csv_row(const RunResult& r) {
  auto num = [](double v) { return fmt::format("{:.6g}", v); };
  return {r.index,
          r.workload,
          std::to_string(r.threads),
          std::to_string(r.records),
          std::to_string(r.ops),
          num(r.seconds),
          num(r.throughput_mops),
          std::to_string(r.latency_ns.p50),
          std::to_string(r.latency_ns.p90),
          std::to_string(r.latency_ns.p99),
          std::to_string(r.latency_ns.p999),
          std::to_string(r.latency_ns.p9999),
          std::to_string(r.latency_ns.max),
          num(r.flushes_per_op),
          num(r.fences_per_op),
          num(r.pm_bytes_written_per_op),
          std::to_string(r.dram_bytes),
          std::to_string(r.pm_bytes),
          r.recovery_seconds ? num(*r.recovery_seconds) : "",
          r.pm_mode,
          std::string(to_string(r.distribution)),
          num(r.theta),
          std::to_string(r.seed),
          num(r.preload_seconds),
          num(r.dram_bytes_per_record),
          num(r.pm_bytes_per_record),
          std::to_string(r.final_records),
          std::to_string(r.latency_ns.samples),
          std::string(to_string(r.key_type)),
          r.key_type == KeyType::string ? std::string(to_string(r.key_set)) : "",
          std::to_string(r.key_min_bytes),
          std::to_string(r.key_max_bytes),
          num(cpu_ns_per_op(r))};
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

std::string format_ns(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f}ns", ns);
  if (ns < 1e6) return fmt::format("{:.1f}us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.2f}ms", ns / 1e6);
  return fmt::format("{:.2f}s", ns / 1e9);
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> c = {"index",
                                             "workload",
                                             "threads",
                                             "records",
                                             "ops",
                                             "seconds",
                                             "throughput_mops",
                                             "latency_p50_ns",
                                             "latency_p90_ns",
                                             "latency_p99_ns",
                                             "latency_p999_ns",
                                             "latency_p9999_ns",
                                             "latency_max_ns",
                                             "flushes_per_op",
                                             "fences_per_op",
                                             "pm_bytes_written_per_op",
                                             "dram_bytes",
                                             "pm_bytes",
                                             "recovery_seconds",
                                             "pm_mode",
                                             "distribution",
                                             "theta",
                                             "seed",
                                             "preload_seconds",
                                             "dram_bytes_per_record",
                                             "pm_bytes_per_record",
                                             "final_records",
                                             "latency_samples",
                                             "key_type",
                                             "key_set",
                                             "key_min_bytes",
                                             "key_max_bytes",
                                             "cpu_ns_per_op"};
  return c;
}

std::string format_table(const std::vector<RunResult>& rs) {
  const auto base = baselines(rs);
  std::string out = fmt::format(
      "{:<10} {:<12} {:>3} {:>8} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} "
      "{:>8} {:>7} {:>8}\n",
      "index", "workload", "thr", "Mops/s", "ratio", "cpu/op", "p50", "p99", "p99.9", "max",
      "flush/op", "fence/op", "PMB/op", "DRAMB/r", "PMB/r", "load s", "recov s");
  for (const auto& r : rs) {
    auto it = base.find({r.workload, r.threads});
    const std::string ratio = it != base.end() && it->second > 0
                                  ? fmt::format("{:.2f}x", r.throughput_mops / it->second)
                                  : "-";
    out += fmt::format(
        "{:<10} {:<12} {:>3} {:>8.3f} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8.2f} {:>8.2f} "
        "{:>8.1f} {:>8.1f} {:>8.1f} {:>7} {:>8}\n",
        r.index, r.workload, r.threads, r.throughput_mops, ratio, format_ns(cpu_ns_per_op(r)),
        format_ns(static_cast<double>(r.latency_ns.p50)),
        format_ns(static_cast<double>(r.latency_ns.p99)),
        format_ns(static_cast<double>(r.latency_ns.p999)),
        format_ns(static_cast<double>(r.latency_ns.max)), r.flushes_per_op, r.fences_per_op,
        r.pm_bytes_written_per_op, r.dram_bytes_per_record, r.pm_bytes_per_record,
        r.shared_load ? std::string("shared") : fmt::format("{:.2f}", r.preload_seconds),
        r.recovery_seconds ? fmt::format("{:.3f}", *r.recovery_seconds) : std::string("-"));
  }
  return out;
}

namespace {

// What is needed to reproduce and interpret a run beyond its figures.
void describe_run(const RunResult& r, nlohmann::ordered_json& j) {
  j["persistent"] = r.persistent;
  j["mix"] = mix_string(r.mix);
  j["distribution"] = std::string(to_string(r.distribution));
  j["theta"] = r.theta;
  j["seed"] = r.seed;
  j["pinned"] = r.pinned;
  j["preload_seconds"] = r.preload_seconds;
  j["drain_seconds"] = r.drain_seconds;
  j["shared_load"] = r.shared_load;
  j["final_records"] = r.final_records;
  j["dram_bytes_per_record"] = r.dram_bytes_per_record;
  j["pm_bytes_per_record"] = r.pm_bytes_per_record;
  j["latency_samples"] = r.latency_ns.samples;
  nlohmann::ordered_json kinds;
  for (std::size_t k = 0; k < kOpKinds; ++k)
    kinds[std::string(to_string(static_cast<OpKind>(k)))] = r.ops_by_kind[k];
  j["ops_by_kind"] = kinds;
  j["reads_found"] = r.reads_found;
  nlohmann::ordered_json cat;
  for (const auto& [name, v] : r.flushes_per_op_by_category) cat[name] = v;
  j["flushes_per_op_by_category"] = cat;
  j["flush_delay_ns"] = r.flush_delay_ns;
  j["fence_delay_ns"] = r.fence_delay_ns;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  for (const auto& [name, v] : r.index_stats) extra[name] = v;
  j["index_stats"] = extra;
}

}  // namespace

std::string to_json(const std::vector<RunResult>& rs) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const auto& r : rs) {
    nlohmann::ordered_json j;
    j["index"] = r.index;
    j["workload"] = r.workload;
    j["threads"] = r.threads;
    j["records"] = r.records;
    j["ops"] = r.ops;
    j["seconds"] = r.seconds;
    j["throughput_mops"] = r.throughput_mops;
    j["cpu_seconds"] = r.cpu_seconds;
    j["cpu_ns_per_op"] = cpu_ns_per_op(r);
    j["latency_ns"] = {{"p50", r.latency_ns.p50},     {"p90", r.latency_ns.p90},
                       {"p99", r.latency_ns.p99},     {"p999", r.latency_ns.p999},
                       {"p9999", r.latency_ns.p9999}, {"max", r.latency_ns.max}};
    j["flushes_per_op"] = r.flushes_per_op;
    j["fences_per_op"] = r.fences_per_op;
    j["pm_bytes_written_per_op"] = r.pm_bytes_written_per_op;
    j["dram_bytes"] = r.dram_bytes;
    j["pm_bytes"] = r.pm_bytes;
    j["recovery_seconds"] =
        r.recovery_seconds ? nlohmann::ordered_json(*r.recovery_seconds) : nullptr;
    j["pool_open_seconds"] =
        r.pool_open_seconds ? nlohmann::ordered_json(*r.pool_open_seconds) : nullptr;
    j["pm_mode"] = r.pm_mode;
    j["key_type"] = std::string(to_string(r.key_type));
    j["key_set"] =
        r.key_type == KeyType::string ? nlohmann::ordered_json(to_string(r.key_set)) : nullptr;
    j["key_bytes"] = {{"min", r.key_min_bytes}, {"max", r.key_max_bytes}};
    describe_run(r, j);
    all.push_back(std::move(j));
  }
  return all.dump(2) + "\n";
}

std::string to_csv(const std::vector<RunResult>& rs) {
  std::string out;
  for (const auto& c : csv_columns()) {
    if (!out.empty()) out.push_back(',');
    out.append(c);
  }
  out += "\n";
  for (const auto& r : rs) {
    std::string line;
    for (const auto& v : csv_row(r)) {
      if (!line.empty()) line.push_back(',');
      line.append(csv_escape(v));
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace dptree::bench
