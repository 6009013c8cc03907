// Every live temporary pool file is listed, so a sweep at process exit (or when the library
// is unloaded) removes those of trees nobody deleted.
#include "temp_pool.h"

#include <unistd.h>

#include <mutex>
#include <set>
#include <string>

#include "dptree/pm/pool.h"

namespace dptree_pibench {
namespace {

// Both trivially destructible, so a tree deleted late in the exit sequence still finds them:
// the mutex, and the list of live files (made by the first temporary pool, freed by the sweep).
std::mutex g_mu;
std::set<std::filesystem::path>* g_live = nullptr;

void remove_file(const std::filesystem::path& p) {
  std::error_code ec;
  std::filesystem::remove(p, ec);
}

// Runs at exit (or dlclose): removes the files of the trees still alive. Their mappings stay
// valid until the process ends; only the name goes.
struct ExitSweep {
  ~ExitSweep() {
    std::lock_guard g(g_mu);
    if (!g_live) return;
    for (const auto& p : *g_live) remove_file(p);
    delete g_live;
    g_live = nullptr;
  }
} exit_sweep;

}  // namespace

TempPoolFile::TempPoolFile() {
  std::lock_guard g(g_mu);
  if (!g_live) g_live = new std::set<std::filesystem::path>;
  const std::string stem = "dptree-pibench-" + std::to_string(getpid());
  path_ = dptree::pm::default_pool_dir() / (stem + ".pool");
  for (unsigned n = 2; g_live->contains(path_); ++n)
    path_ = dptree::pm::default_pool_dir() / (stem + "-" + std::to_string(n) + ".pool");
  remove_file(path_);
  g_live->insert(path_);
}

TempPoolFile::~TempPoolFile() {
  std::lock_guard g(g_mu);
  remove_file(path_);
  if (g_live) g_live->erase(path_);
}

}  // namespace dptree_pibench
