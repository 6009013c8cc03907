// Reading the machine's state for a run's report (machine.h): CPU, kernel, THP settings, the
// pool folder's file system, the load, and the pages the process got as 2 MiB pages.
#include "bench/machine.h"

#include <sys/utsname.h>

#include <fstream>
#include <sstream>
#include <thread>

namespace dptree::bench {
namespace {

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// A sysfs choice list ("always [madvise] never") reduced to its selected value.
std::string selected(const char* path) {
  const std::string line = first_line(path);
  const auto open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return line;
  return line.substr(open + 1, close - open - 1);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line
                                        : line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "";
}

// The /proc/mounts entry whose mount point is the longest prefix of `dir`: its type and
// options.
void pool_file_system(const std::filesystem::path& dir, MachineState& m) {
  std::error_code ec;
  const std::string path = std::filesystem::weakly_canonical(dir, ec).string();
  std::ifstream in("/proc/mounts");
  std::size_t best = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string dev, mnt, type, opts;
    if (!(f >> dev >> mnt >> type >> opts)) continue;
    const bool below = path.rfind(mnt, 0) == 0 &&
                       (mnt == "/" || (path.size() > mnt.size() && path[mnt.size()] == '/'));
    const bool under = path == mnt || below;
    if (!under || mnt.size() < best) continue;
    best = mnt.size();
    m.pool_fs = type;
    m.pool_fs_huge.clear();
    m.pool_dax = false;
    std::istringstream o(opts);
    for (std::string opt; std::getline(o, opt, ',');) {
      if (opt.rfind("huge=", 0) == 0) m.pool_fs_huge = opt.substr(5);
      if (opt == "dax" || opt.rfind("dax=", 0) == 0) m.pool_dax = opt != "dax=never";
    }
  }
}

}  // namespace

MachineState machine_state(const std::filesystem::path& pool_dir) {
  MachineState m;
  m.cpu_model = cpu_model();
  utsname u{};
  if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release;
  m.cores = std::thread::hardware_concurrency();
  const std::string thp = "/sys/kernel/mm/transparent_hugepage/";
  m.thp_enabled = selected((thp + "enabled").c_str());
  m.thp_defrag = selected((thp + "defrag").c_str());
  m.thp_shmem_enabled = selected((thp + "shmem_enabled").c_str());
  m.pool_dir = pool_dir.string();
  pool_file_system(pool_dir, m);
  return m;
}

double load1() {
  double l = -1;
  std::ifstream in("/proc/loadavg");
  return in >> l ? l : -1;
}

namespace {

// Calls fn(field, kib) for each "Field: N kB" line of a /proc file (smaps_rollup, status).
template <class Fn>
void for_each_kib_line(const char* path, Fn&& fn) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string field;
    std::uint64_t kib = 0;
    if (f >> field >> kib) fn(field, kib);
  }
}

}  // namespace

void measure_huge_pages(MachineState& m) {
  m.heap_huge_kib = m.pool_huge_kib = 0;
  for_each_kib_line("/proc/self/smaps_rollup", [&](const std::string& field, std::uint64_t kib) {
    if (field == "AnonHugePages:") m.heap_huge_kib = kib;
    if (field == "ShmemPmdMapped:" || field == "FilePmdMapped:") m.pool_huge_kib += kib;
  });
}

std::uint64_t peak_rss_bytes() {
  std::uint64_t bytes = 0;
  for_each_kib_line("/proc/self/status", [&](const std::string& field, std::uint64_t kib) {
    if (field == "VmHWM:") bytes = kib * 1024;
  });
  return bytes;
}

}  // namespace dptree::bench
