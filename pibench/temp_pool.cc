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

struct Registry {
  std::mutex mu;
  std::set<std::filesystem::path> live;
};

// Never destroyed: a tree deleted late in the exit sequence still finds it.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

void remove_file(const std::filesystem::path& p) {
  std::error_code ec;
  std::filesystem::remove(p, ec);
}

// Runs at exit (or dlclose): removes the files of the trees still alive. Their mappings stay
// valid until the process ends; only the name goes.
struct ExitSweep {
  ~ExitSweep() {
    Registry& r = registry();
    std::lock_guard g(r.mu);
    for (const auto& p : r.live) remove_file(p);
    r.live.clear();
  }
} exit_sweep;

}  // namespace

TempPoolFile::TempPoolFile() {
  Registry& r = registry();
  std::lock_guard g(r.mu);
  const std::string stem = "dptree-pibench-" + std::to_string(getpid());
  path_ = dptree::pm::default_pool_dir() / (stem + ".pool");
  for (unsigned n = 2; r.live.contains(path_); ++n)
    path_ = dptree::pm::default_pool_dir() / (stem + "-" + std::to_string(n) + ".pool");
  remove_file(path_);
  r.live.insert(path_);
}

TempPoolFile::~TempPoolFile() {
  Registry& r = registry();
  std::lock_guard g(r.mu);
  remove_file(path_);
  r.live.erase(path_);
}

}  // namespace dptree_pibench
