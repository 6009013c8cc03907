// `dptree check POOL`: opens the index in a pool file, and so recovers it, runs its check() and
// prints what it found with its stats. Exits non-zero on any violation. DPTree (§2; integer or
// string keys) and the concurrent DPTree (§3, `cdptree`; parallel log replay) are found by their
// root and reported in detail; any other persistent index of the registry by its factory.
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
#include <type_traits>
#include <utility>
#include <vector>

#include "commands.h"
#include "dptree/cdptree.h"
#include "dptree/dptree.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "format/cdptree_root.h"
#include "format/layout.h"
#include "format/string_leaf.h"
#include "format/verify.h"

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

// The DPTree of the widths the pool's root stores (DPTree<K, V> is a template per width).
template <std::size_t KeyBytes, std::size_t ValueBytes>
bool check_dptree(dptree::pm::Pool& pool, Found& f, std::size_t kb, std::size_t vb) {
  if (kb != KeyBytes || vb != ValueBytes) return false;
  auto t = dptree::DPTree<KeyBytes, ValueBytes>::open(pool);
  f.report = t->check();
  auto s = t->stats();
  f.index = "dptree";
  f.keys = "u64";
  f.what = fmt::format("DPTree ({}-byte keys, {}-byte values)", KeyBytes, ValueBytes);
  f.text = fmt::format(
      "  records {}  (base {}, buffer entries {})\n"
      "  leaves {}  log pages {} (+{} cached free)  restarts {}\n"
      "  PM bytes {}  DRAM bytes {}\n",
      s.records, s.base_records, s.buffer_entries, s.leaves, s.log_pages, s.free_log_pages,
      s.restart_count, s.pm_bytes, s.dram_bytes);
  f.stats = Stats{{"key_bytes", num(KeyBytes)},
                  {"value_bytes", num(ValueBytes)},
                  {"records", num(s.records)},
                  {"pm_bytes", num(s.pm_bytes)},
                  {"dram_bytes", num(s.dram_bytes)}};
  for (auto& figure : dptree::named_figures(s)) f.stats.push_back(std::move(figure));
  return true;
}

// Every width DPTree takes: keys and values of 8, 16, ..., 56 bytes (7 x 7 instantiations).
template <std::size_t... I>
bool check_any_width(dptree::pm::Pool& pool, Found& f, std::size_t kb, std::size_t vb,
                     std::index_sequence<I...>) {
  return (check_dptree<8 + 8 * (I / 7), 8 + 8 * (I % 7)>(pool, f, kb, vb) || ...);
}

// The pool's DPTree, of the widths its root stores; false when it holds another index.
bool check_dptree_pool(dptree::pm::Pool& pool, const std::string& path, Found& f) {
  namespace d = dptree::detail;
  const d::Root* root = nullptr;
  try {
    root =
        static_cast<const d::Root*>(d::find_root(pool, d::kRootMagic, sizeof(d::Root), "DPTree"));
  } catch (const dptree::Error& e) {
    if (e.code() == dptree::Errc::wrong_index) return false;
    throw;
  }
  if (check_any_width(pool, f, root->key_bytes, root->value_bytes, std::make_index_sequence<49>{}))
    return true;
  throw dptree::Error(dptree::Errc::stored_setting,
                      "pool '" + path + "' stores entry widths of " +
                          std::to_string(root->key_bytes) + "-byte keys and " +
                          std::to_string(root->value_bytes) +
                          "-byte values, which no DPTree takes (8..56, multiples of 8): the "
                          "pool's root was damaged; restore the pool from a copy");
}

// An index's IndexStats as the report gives them: records, PM and DRAM bytes, its own figures.
void report_stats(Found& f, dptree::IndexStats s) {
  f.text = fmt::format("  records {}  PM bytes {}  DRAM bytes {}\n", s.records, s.pm_bytes,
                       s.dram_bytes);
  f.stats = Stats{{"records", num(s.records)},
                  {"pm_bytes", num(s.pm_bytes)},
                  {"dram_bytes", num(s.dram_bytes)}};
  for (auto& figure : s.extra) f.stats.push_back(std::move(figure));
}

// The pool's string-key tree of `index` (a root of `bytes` starting with `magic`), named
// `what`; false when the pool holds another index. A root of the string forms' previous format
// (`previous`, the tree's magic of it) goes on to the open, whose version_mismatch names both
// formats and the way out.
bool check_string_pool(dptree::pm::Pool& pool, Found& f, const char* index,
                       dptree::detail::u64 magic, dptree::detail::u64 previous, std::size_t bytes,
                       const char* what) {
  namespace d = dptree::detail;
  try {
    d::find_root(pool, magic, bytes, what);
  } catch (const dptree::Error& e) {
    if (e.code() != dptree::Errc::wrong_index) throw;
    if (!d::root_if_ours(pool, previous, bytes)) return false;
  }
  dptree::IndexConfig c;
  c.pool = &pool;
  auto t = dptree::find_index(index).create_string(c);
  f.report = t->check();
  f.index = index;
  f.keys = "string";
  f.what = what;
  report_stats(f, t->stats());
  return true;
}

bool check_string_dptree_pool(dptree::pm::Pool& pool, Found& f) {
  namespace d = dptree::detail;
  return check_string_pool(pool, f, "dptree", d::kStringRootMagic, d::kStringRootMagicR3,
                           sizeof(d::Root), "DPTree of string keys") ||
         check_string_pool(pool, f, "cdptree", d::kCStringRootMagic, d::kCStringRootMagicR2,
                           sizeof(d::CRoot), "concurrent DPTree (cdptree) of string keys");
}

void check_cdptree(dptree::pm::Pool& pool, Found& f) {
  auto t = dptree::CDPTree::open(pool);
  f.report = t->check();
  auto s = t->stats();
  f.index = "cdptree";
  f.keys = "u64";
  f.what = "concurrent DPTree (cdptree)";
  f.text = fmt::format(
      "  records {}  (base {}, front buffer entries {})\n"
      "  leaves {}  log pages {} (+{} cached free)  restarts {}  recovery {:.3f} s\n"
      "  PM bytes {}  DRAM bytes {}\n",
      s.records, s.base_records, s.front_entries, s.leaves, s.log_pages, s.free_log_pages,
      s.restart_count, s.last_recovery_seconds, s.pm_bytes, s.dram_bytes);
  f.stats = Stats{{"records", num(s.records)},
                  {"pm_bytes", num(s.pm_bytes)},
                  {"dram_bytes", num(s.dram_bytes)}};
  for (auto& figure : dptree::named_figures(s)) f.stats.push_back(std::move(figure));
}

bool another_index(const dptree::Error& e) {
  return e.code() == dptree::Errc::wrong_index;
}

// Any other persistent index of the registry, in either key form: each factory opens (and so
// recovers) the index whose root the pool holds and refuses another's with wrong_index, so
// the first that accepts the pool is its index. Its check() and stats() are reported.
template <class Create>
bool check_registered(dptree::pm::Pool& pool, Found& f, const dptree::IndexInfo& info,
                      const Create& create, const char* keys) {
  if (!create) return false;
  dptree::IndexConfig c;
  c.pool = &pool;
  std::unique_ptr<std::remove_reference_t<decltype(*create(c))>> t;
  try {
    t = create(c);
  } catch (const dptree::Error& e) {
    if (another_index(e)) return false;
    throw;
  }
  f.report = t->check();
  f.index = info.name;
  f.keys = keys;
  f.what = fmt::format("{} of {} keys", info.name, keys == std::string("u64") ? "integer" : keys);
  report_stats(f, t->stats());
  return true;
}

bool check_any_registered(dptree::pm::Pool& pool, Found& f) {
  for (const auto& info : dptree::registered_indexes()) {
    if (!info.persistent || info.name == "dptree" || info.name == "cdptree") continue;
    if (check_registered(pool, f, info, info.create, "u64") ||
        check_registered(pool, f, info, info.create_string, "string"))
      return true;
  }
  return false;
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

// The tree in `pool` (a DPTree of any width or of strings, a cdptree of either form, else any
// other persistent index of the registry), checked.
Found check_pool(dptree::pm::Pool& pool, const std::string& path) {
  Found f;
  try {
    if (check_dptree_pool(pool, path, f) || check_string_dptree_pool(pool, f)) return f;
  } catch (const dptree::Error& e) {
    if (!another_index(e)) throw;
  }
  try {
    check_cdptree(pool, f);
    return f;
  } catch (const dptree::Error& e) {
    if (!another_index(e)) throw;
  }
  if (check_any_registered(pool, f)) return f;
  throw dptree::Error(dptree::Errc::wrong_index,
                      "pool '" + path +
                          "' holds no index of this project's registry (`dptree bench --list`, "
                          "persistent ones): it was made by another program or its root was "
                          "damaged");
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
           const Found f = check_pool(*pool, *path);
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
