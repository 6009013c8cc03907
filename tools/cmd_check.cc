// `dptree check POOL`: opens the index in a pool file, and so recovers it, runs its check() and
// prints what it found with its stats. Exits non-zero on any violation. The index is found
// through the registry (check_pool, dptree/pool_check.h): every persistent index's factory, in
// either key form, opens the pool if it holds that index's root and refuses it with wrong_index
// otherwise.
//
// Read-only by default: the pool is mapped copy-on-write (Pool::open with
// OpenMode::copy_on_write), so recovery runs on private pages and nothing reaches the file; the
// tool reports which lines recovery would write. `--repair` maps it shared, so recovery's
// writes land in the file.
#include <fmt/core.h>

#include <cstddef>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/pool_check.h"

namespace {

using Stats = std::vector<std::pair<std::string, double>>;

// What `dptree check` found in a pool: printed as text, or as one JSON object with --json.
struct Found {
  std::string index;  // the registry's name: "dptree", "cdptree", "fastfair", ...
  std::string keys;   // "u64" or "string"
  std::string what;   // the tree and its form, as the text report names it
  std::string text;   // the text report's stat lines
  Stats stats;
  dptree::CheckReport report;
};
double num(std::size_t x) {
  return static_cast<double>(x);
}

// An index's IndexStats as the report gives them: records, PM and DRAM bytes, then its own
// figures (IndexStats::extra), four to a line.
void report_stats(Found& f, dptree::IndexStats s) {
  f.text = fmt::format("  records {}  PM bytes {}  DRAM bytes {}\n", s.records, s.pm_bytes,
                       s.dram_bytes);
  f.stats = Stats{{"records", num(s.records)},
                  {"pm_bytes", num(s.pm_bytes)},
                  {"dram_bytes", num(s.dram_bytes)}};
  std::string line;
  for (std::size_t i = 0; i < s.extra.size(); ++i) {
    line += fmt::format("  {} {}", s.extra[i].first, s.extra[i].second);
    if (i % 4 == 3 || i + 1 == s.extra.size()) {
      f.text += line + "\n";
      line.clear();
    }
  }
  for (auto& figure : s.extra) f.stats.push_back(std::move(figure));
}

// What recovery wrote to the private copy: the lines it would write to the file.
void print_recovery_writes(const dptree::pm::Pool& pool) {
  auto ranges = pool.changed_ranges();
  std::size_t bytes = 0;
  for (auto [b, e] : ranges) bytes += e - b;
  if (ranges.empty()) {
    fmt::print("  recovery would write nothing: the pool is as a clean close left it\n");
    return;
  }
  fmt::print(
      "  recovery would write {} lines ({} bytes) in {} ranges; not written (read-only "
      "check): run `dptree check --repair` to write them\n",
      bytes / 64, bytes, ranges.size());
  constexpr std::size_t kShown = 8;
  for (std::size_t i = 0; i < ranges.size() && i < kShown; ++i)
    fmt::print("    [{}, {})\n", ranges[i].first, ranges[i].second);
  if (ranges.size() > kShown) fmt::print("    ... {} more\n", ranges.size() - kShown);
}

// The index in `pool`, found and checked through the registry (dptree/pool_check.h).
Found check(dptree::pm::Pool& pool) {
  dptree::PoolCheck c = dptree::check_pool(pool);
  Found f;
  f.index = c.index;
  f.keys = c.strings ? "string" : "u64";
  f.what = fmt::format("{} of {} keys", c.index, c.strings ? "string" : "integer");
  f.report = std::move(c.report);
  report_stats(f, std::move(c.stats));
  return f;
}

void print_text(const Found& f, const std::string& path) {
  fmt::print("pool {}: {}, {}\n", path, f.what, f.report.ok ? "ok" : "VIOLATIONS FOUND");
  fmt::print("{}", f.text);
  for (const auto& [k, v] : f.report.facts) fmt::print("  checked {}: {}\n", k, v);
  for (const auto& p : f.report.problems) fmt::print("  violation: {}\n", p);
}

// A count as a JSON integer, any other figure as a number.
nlohmann::ordered_json json_number(double v) {
  if (v == static_cast<double>(static_cast<long long>(v))) return static_cast<long long>(v);
  return v;
}

// One JSON object: the pool, the tree, its stats, what check() counted and found, and what
// recovery wrote (to the private copy: the lines it would write; with --repair: to the file).
void print_json(const Found& f, const std::string& path, const dptree::pm::Pool& pool,
                bool repaired) {
  nlohmann::ordered_json j;
  j["pool"] = path;
  j["index"] = f.index;
  j["keys"] = f.keys;
  j["ok"] = f.report.ok;
  for (const auto& [k, v] : f.stats) j["stats"][k] = json_number(v);
  j["checked"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : f.report.facts) j["checked"][k] = json_number(v);
  j["violations"] = f.report.problems;
  std::size_t bytes = 0;
  auto ranges = nlohmann::ordered_json::array();
  for (auto [b, e] : pool.changed_ranges()) {
    bytes += e - b;
    ranges.push_back({b, e});
  }
  j["recovery_writes"] = {{"bytes", bytes}, {"ranges", ranges}, {"written", repaired}};
  fmt::print("{}\n", j.dump(2));
}

// --json: a pool that cannot be checked is still one JSON object (its error code and
// message), besides the message on stderr and the exit status.
void print_json_error(const std::string& path, const dptree::Error& e) {
  nlohmann::ordered_json j;
  j["pool"] = path;
  j["ok"] = false;
  j["error"] = {{"code", std::string(dptree::to_string(e.code()))}, {"message", e.what()}};
  fmt::print("{}\n", j.dump(2));
  std::fflush(stdout);  // before the message on stderr
}

const dptree::cli::Registrar reg{
    {"check",
     "Open (recover) the index in POOL (DPTree, the concurrent DPTree or any persistent peer), "
     "verify every invariant, print its stats. Read-only: recovery runs on a private copy-on-write "
     "mapping and the file is left "
     "byte-identical; --repair writes recovery's changes to the file",
     [](CLI::App& app) {
       auto path = std::make_shared<std::string>();
       auto repair = std::make_shared<bool>(false);
       auto json = std::make_shared<bool>(false);
       app.add_option("pool", *path,
                      "pool file holding a persistent index of `dptree bench --list`")
           ->required();
       app.add_flag("--json", *json,
                    "print one JSON object (pool, index, keys, ok, stats, checked, violations, "
                    "recovery_writes; or ok and error) instead of the text report");
       app.add_flag("--repair", *repair,
                    "write recovery's changes (an interrupted merge undone, the log replayed, "
                    "stale allocator words cleared) to the pool file; without it nothing is "
                    "written");
       app.callback([path, repair, json] {
         using dptree::pm::OpenMode;
         try {
           auto pool =
               dptree::pm::Pool::open(*path, *repair ? OpenMode::shared : OpenMode::copy_on_write);
           const Found f = check(*pool);
           if (!f.report.ok) dptree::cli::exit_code() = 1;
           if (*json) return print_json(f, *path, *pool, *repair);
           print_text(f, *path);
           if (*repair)
             fmt::print("  repaired: recovery's writes are in the file\n");
           else
             print_recovery_writes(*pool);
         } catch (const dptree::Error& e) {
           if (*json) print_json_error(*path, e);
           throw;
         }
       });
     }}};

}  // namespace
