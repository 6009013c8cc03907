// Writing runs out (report.h): the table, the JSON with each run's machine state, and the CSV.
#include "bench/report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>

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

// A run field's value: null (absent: JSON null, an empty CSV cell), text, a count, a figure or
// a JSON object (JSON only).
using Value =
    std::variant<std::monostate, std::string, std::uint64_t, bool, double, nlohmann::ordered_json>;

// One field of a run's JSON object, in the object's order: `key` inside the object `group`
// ("": at the top), and the CSV column `csv_rank` (-1: JSON only) named `column`.
struct Field {
  const char* group;
  const char* key;
  int csv_rank;
  const char* column;
  Value (*get)(const RunResult&);
};

Value opt(const std::optional<double>& x) {
  return x ? Value(*x) : Value();
}
template <class Pairs>
nlohmann::ordered_json object_of(const Pairs& pairs, nlohmann::ordered_json none) {
  for (const auto& [name, v] : pairs) none[name] = v;
  return none;
}
nlohmann::ordered_json ops_by_kind(const RunResult& r) {
  nlohmann::ordered_json kinds;
  for (std::size_t k = 0; k < kOpKinds; ++k)
    kinds[std::string(to_string(static_cast<OpKind>(k)))] = r.ops_by_kind[k];
  return kinds;
}

// Every field of a run: the JSON object's, and in csv_rank order the CSV columns.
// clang-format off
const Field kFields[] = {
    {"", "index", 0, "index", [](const RunResult& r) { return Value(r.index); }},
    {"", "workload", 1, "workload", [](const RunResult& r) { return Value(r.workload); }},
    {"", "threads", 2, "threads", [](const RunResult& r) { return Value(std::uint64_t{r.threads}); }},
    {"", "records", 3, "records", [](const RunResult& r) { return Value(r.records); }},
    {"", "ops", 4, "ops", [](const RunResult& r) { return Value(r.ops); }},
    {"", "seconds", 5, "seconds", [](const RunResult& r) { return Value(r.seconds); }},
    {"", "throughput_mops", 6, "throughput_mops", [](const RunResult& r) { return Value(r.throughput_mops); }},
    {"", "cpu_seconds", -1, "", [](const RunResult& r) { return Value(r.cpu_seconds); }},
    {"", "stream_seconds", -1, "", [](const RunResult& r) { return Value(r.stream_seconds); }},
    {"", "cpu_ns_per_op", 32, "cpu_ns_per_op", [](const RunResult& r) { return Value(cpu_ns_per_op(r)); }},
    {"latency_ns", "p50", 7, "latency_p50_ns", [](const RunResult& r) { return Value(r.latency_ns.p50); }},
    {"latency_ns", "p90", 8, "latency_p90_ns", [](const RunResult& r) { return Value(r.latency_ns.p90); }},
    {"latency_ns", "p99", 9, "latency_p99_ns", [](const RunResult& r) { return Value(r.latency_ns.p99); }},
    {"latency_ns", "p999", 10, "latency_p999_ns", [](const RunResult& r) { return Value(r.latency_ns.p999); }},
    {"latency_ns", "p9999", 11, "latency_p9999_ns", [](const RunResult& r) { return Value(r.latency_ns.p9999); }},
    {"latency_ns", "max", 12, "latency_max_ns", [](const RunResult& r) { return Value(r.latency_ns.max); }},
    {"", "flushes_per_op", 13, "flushes_per_op", [](const RunResult& r) { return Value(r.flushes_per_op); }},
    {"", "fences_per_op", 14, "fences_per_op", [](const RunResult& r) { return Value(r.fences_per_op); }},
    {"", "pm_bytes_written_per_op", 15, "pm_bytes_written_per_op", [](const RunResult& r) { return Value(r.pm_bytes_written_per_op); }},
    {"", "dram_bytes", 16, "dram_bytes", [](const RunResult& r) { return Value(std::uint64_t{r.dram_bytes}); }},
    {"", "pm_bytes", 17, "pm_bytes", [](const RunResult& r) { return Value(std::uint64_t{r.pm_bytes}); }},
    {"", "pm_peak_bytes", 33, "pm_peak_bytes", [](const RunResult& r) { return Value(std::uint64_t{r.pm_peak_bytes}); }},
    {"", "peak_rss_bytes", 34, "peak_rss_bytes", [](const RunResult& r) { return Value(std::uint64_t{r.peak_rss_bytes}); }},
    {"", "recovery_seconds", 18, "recovery_seconds", [](const RunResult& r) { return opt(r.recovery_seconds); }},
    {"", "pool_open_seconds", -1, "", [](const RunResult& r) { return opt(r.pool_open_seconds); }},
    {"", "pm_mode", 19, "pm_mode", [](const RunResult& r) { return Value(r.pm_mode); }},
    {"", "key_type", 28, "key_type", [](const RunResult& r) { return Value(std::string(to_string(r.key_type))); }},
    {"", "key_set", 29, "key_set", [](const RunResult& r) {
       return r.key_type == KeyType::string ? Value(std::string(to_string(r.key_set))) : Value(); }},
    {"key_bytes", "min", 30, "key_min_bytes", [](const RunResult& r) { return Value(std::uint64_t{r.key_min_bytes}); }},
    {"key_bytes", "max", 31, "key_max_bytes", [](const RunResult& r) { return Value(std::uint64_t{r.key_max_bytes}); }},
    // What is needed to reproduce and interpret a run beyond its figures.
    {"", "persistent", -1, "", [](const RunResult& r) { return Value(r.persistent); }},
    {"", "mix", -1, "", [](const RunResult& r) { return Value(mix_string(r.mix)); }},
    {"", "distribution", 20, "distribution", [](const RunResult& r) { return Value(std::string(to_string(r.distribution))); }},
    {"", "theta", 21, "theta", [](const RunResult& r) { return Value(r.theta); }},
    {"", "seed", 22, "seed", [](const RunResult& r) { return Value(r.seed); }},
    {"", "pinned", -1, "", [](const RunResult& r) { return Value(r.pinned); }},
    {"", "preload_seconds", 23, "preload_seconds", [](const RunResult& r) { return Value(r.preload_seconds); }},
    {"", "drain_seconds", -1, "", [](const RunResult& r) { return Value(r.drain_seconds); }},
    {"", "shared_load", -1, "", [](const RunResult& r) { return Value(r.shared_load); }},
    {"", "prefault", -1, "", [](const RunResult& r) { return Value(r.prefault); }},
    {"", "final_records", 26, "final_records", [](const RunResult& r) { return Value(r.final_records); }},
    {"", "dram_bytes_per_record", 24, "dram_bytes_per_record", [](const RunResult& r) { return Value(r.dram_bytes_per_record); }},
    {"", "pm_bytes_per_record", 25, "pm_bytes_per_record", [](const RunResult& r) { return Value(r.pm_bytes_per_record); }},
    {"", "latency_samples", 27, "latency_samples", [](const RunResult& r) { return Value(r.latency_ns.samples); }},
    {"", "ops_by_kind", -1, "", [](const RunResult& r) { return Value(ops_by_kind(r)); }},
    {"", "reads_found", -1, "", [](const RunResult& r) { return Value(r.reads_found); }},
    {"", "flushes_per_op_by_category", -1, "", [](const RunResult& r) {
       return Value(object_of(r.flushes_per_op_by_category, nullptr)); }},
    {"", "flush_delay_ns", -1, "", [](const RunResult& r) { return Value(std::uint64_t{r.flush_delay_ns}); }},
    {"", "fence_delay_ns", -1, "", [](const RunResult& r) { return Value(std::uint64_t{r.fence_delay_ns}); }},
    {"", "index_stats", -1, "", [](const RunResult& r) {
       return Value(object_of(r.index_stats, nlohmann::ordered_json::object())); }},
    {"", "machine", -1, "", [](const RunResult& r) { return Value(machine_json(r.machine)); }},
};
// clang-format on

// The fields with a CSV column, in column order.
const std::vector<const Field*>& csv_fields() {
  static const std::vector<const Field*> fields = [] {
    std::vector<const Field*> f;
    for (const Field& x : kFields)
      if (x.csv_rank >= 0) f.push_back(&x);
    std::sort(f.begin(), f.end(), [](auto* a, auto* b) { return a->csv_rank < b->csv_rank; });
    return f;
  }();
  return fields;
}

std::string csv_cell(const Value& v) {
  struct {
    std::string operator()(std::monostate) const { return ""; }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(std::uint64_t x) const { return std::to_string(x); }
    std::string operator()(bool b) const { return b ? "1" : "0"; }
    std::string operator()(double x) const { return fmt::format("{:.6g}", x); }
    std::string operator()(const nlohmann::ordered_json& j) const { return j.dump(); }
  } cell;
  return std::visit(cell, v);
}

nlohmann::ordered_json json_value(const Value& v) {
  return std::visit(
      [](const auto& x) -> nlohmann::ordered_json {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>)
          return nullptr;
        else
          return x;
      },
      v);
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

nlohmann::ordered_json machine_json(const MachineState& m) {
  return {{"cpu_model", m.cpu_model},
          {"cores", m.cores},
          {"kernel", m.kernel},
          {"thp_enabled", m.thp_enabled},
          {"thp_defrag", m.thp_defrag},
          {"thp_shmem_enabled", m.thp_shmem_enabled},
          {"pool_dir", m.pool_dir},
          {"pool_fs", m.pool_fs},
          {"pool_fs_huge", m.pool_fs_huge},
          {"pool_dax", m.pool_dax},
          {"load1_before", m.load1_before},
          {"load1_after", m.load1_after},
          {"heap_huge_kib", m.heap_huge_kib},
          {"pool_huge_kib", m.pool_huge_kib}};
}

std::string format_ns(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f}ns", ns);
  if (ns < 1e6) return fmt::format("{:.1f}us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.2f}ms", ns / 1e6);
  return fmt::format("{:.2f}s", ns / 1e9);
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> c = [] {
    std::vector<std::string> names;
    for (const Field* f : csv_fields()) names.emplace_back(f->column);
    return names;
  }();
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

std::string to_json(const std::vector<RunResult>& rs) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const auto& r : rs) {
    nlohmann::ordered_json j;
    for (const Field& f : kFields) {
      nlohmann::ordered_json& at = *f.group ? j[f.group][f.key] : j[f.key];
      at = json_value(f.get(r));
    }
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
    for (const Field* f : csv_fields()) {
      if (!line.empty()) line.push_back(',');
      line.append(csv_escape(csv_cell(f->get(r))));
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace dptree::bench
