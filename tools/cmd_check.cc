// `dptree check POOL`: opens the DPTree in a pool file (and so recovers it, Algorithm 4), runs
// check() and prints what it found with the tree's stats. Exits non-zero on any violation.
#include <fmt/core.h>

#include <memory>
#include <string>

#include "commands.h"
#include "dptree/dptree.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"

namespace {

template <class Tree>
bool check_with(dptree::pm::Pool& pool, const std::string& path) {
  std::unique_ptr<Tree> t;
  try {
    t = Tree::open(pool);
  } catch (const dptree::Error& e) {
    // Another entry size: the caller tries the next one.
    if (e.code() == dptree::Errc::invalid_argument &&
        std::string(e.what()).find("-byte keys") != std::string::npos)
      return false;
    throw;
  }
  auto r = t->check();
  auto s = t->stats();
  fmt::print("pool {}: DPTree, {}\n", path, r.ok ? "ok" : "VIOLATIONS FOUND");
  fmt::print("  records {}  (base {}, buffer entries {})\n", s.records, s.base_records,
             s.buffer_entries);
  fmt::print("  leaves {}  log pages {} (+{} cached free)  restarts {}\n", s.leaves, s.log_pages,
             s.free_log_pages, s.restart_count);
  fmt::print("  PM bytes {}  DRAM bytes {}\n", s.pm_bytes, s.dram_bytes);
  for (const auto& [k, v] : r.facts) fmt::print("  checked {}: {}\n", k, v);
  for (const auto& p : r.problems) fmt::print("  violation: {}\n", p);
  if (!r.ok) dptree::cli::exit_code() = 1;
  return true;
}

const dptree::cli::Registrar reg{
    {"check", "Open (recover) the DPTree in POOL, verify every invariant, print its stats",
     [](CLI::App& app) {
       auto path = std::make_shared<std::string>();
       app.add_option("pool", *path, "pool file holding a DPTree")->required();
       app.callback([path] {
         auto pool = dptree::pm::Pool::open(*path);
         if (check_with<dptree::DPTree<8, 8>>(*pool, *path)) return;
         if (check_with<dptree::DPTree<8, 24>>(*pool, *path)) return;
         if (check_with<dptree::DPTree<16, 16>>(*pool, *path)) return;
         if (check_with<dptree::DPTree<32, 32>>(*pool, *path)) return;
         throw dptree::Error(dptree::Errc::invalid_argument,
                             "pool '" + *path +
                                 "' holds a DPTree whose entry size this tool was not built "
                                 "for (8+8, 8+24, 16+16, 32+32 bytes)");
       });
     }}};

}  // namespace
