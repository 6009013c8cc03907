// `dptree check POOL`: opens the DPTree (§2) or concurrent DPTree (§3, `cdptree`) in a pool
// file, and so recovers it (Algorithm 4; parallel log replay for cdptree), runs check() and
// prints what it found with the tree's stats. Exits non-zero on any violation.
#include <fmt/core.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "commands.h"
#include "dptree/cdptree.h"
#include "dptree/dptree.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"

namespace {

void print_report(const dptree::CheckReport& r) {
  for (const auto& [k, v] : r.facts) fmt::print("  checked {}: {}\n", k, v);
  for (const auto& p : r.problems) fmt::print("  violation: {}\n", p);
  if (!r.ok) dptree::cli::exit_code() = 1;
}

// False when the pool holds a DPTree of other entry widths (the caller tries the next).
template <std::size_t KeyBytes, std::size_t ValueBytes>
bool check_dptree(dptree::pm::Pool& pool, const std::string& path) {
  std::unique_ptr<dptree::DPTree<KeyBytes, ValueBytes>> t;
  try {
    t = dptree::DPTree<KeyBytes, ValueBytes>::open(pool);
  } catch (const dptree::Error& e) {
    if (e.code() == dptree::Errc::wrong_index &&
        std::string(e.what()).find("-byte keys") != std::string::npos)
      return false;
    throw;
  }
  auto r = t->check();
  auto s = t->stats();
  fmt::print("pool {}: DPTree ({}-byte keys, {}-byte values), {}\n", path, KeyBytes, ValueBytes,
             r.ok ? "ok" : "VIOLATIONS FOUND");
  fmt::print("  records {}  (base {}, buffer entries {})\n", s.records, s.base_records,
             s.buffer_entries);
  fmt::print("  leaves {}  log pages {} (+{} cached free)  restarts {}\n", s.leaves, s.log_pages,
             s.free_log_pages, s.restart_count);
  fmt::print("  PM bytes {}  DRAM bytes {}\n", s.pm_bytes, s.dram_bytes);
  print_report(r);
  return true;
}

// Every width DPTree takes: keys and values of 8, 16, ..., 56 bytes (7 x 7 instantiations).
template <std::size_t... I>
bool check_any_width(dptree::pm::Pool& pool, const std::string& path, std::index_sequence<I...>) {
  return (check_dptree<8 + 8 * (I / 7), 8 + 8 * (I % 7)>(pool, path) || ...);
}

void check_cdptree(dptree::pm::Pool& pool, const std::string& path) {
  auto t = dptree::CDPTree::open(pool);
  auto r = t->check();
  auto s = t->stats();
  fmt::print("pool {}: concurrent DPTree (cdptree), {}\n", path, r.ok ? "ok" : "VIOLATIONS FOUND");
  fmt::print("  records {}  (base {}, front buffer entries {})\n", s.records, s.base_records,
             s.front_entries);
  fmt::print("  leaves {}  log pages {} (+{} cached free)  restarts {}  recovery {:.3f} s\n",
             s.leaves, s.log_pages, s.free_log_pages, s.restart_count, s.last_recovery_seconds);
  fmt::print("  PM bytes {}  DRAM bytes {}\n", s.pm_bytes, s.dram_bytes);
  print_report(r);
}

bool another_index(const dptree::Error& e) {
  return e.code() == dptree::Errc::wrong_index;
}

const dptree::cli::Registrar reg{
    {"check",
     "Open (recover) the DPTree or concurrent DPTree in POOL, verify every invariant, print its "
     "stats",
     [](CLI::App& app) {
       auto path = std::make_shared<std::string>();
       app.add_option("pool", *path, "pool file holding a DPTree or a cdptree")->required();
       app.callback([path] {
         auto pool = dptree::pm::Pool::open(*path);
         try {
           if (check_any_width(*pool, *path, std::make_index_sequence<49>{})) return;
         } catch (const dptree::Error& e) {
           if (!another_index(e)) throw;
         }
         try {
           check_cdptree(*pool, *path);
         } catch (const dptree::Error& e) {
           if (!another_index(e)) throw;
           throw dptree::Error(dptree::Errc::wrong_index,
                               "pool '" + *path +
                                   "' holds neither a DPTree nor a concurrent DPTree (cdptree): "
                                   "`dptree check` verifies pools made by those two indexes");
         }
       });
     }}};

}  // namespace
